-- opreg store, schema 6: GetDefaultBundleThatProvides' answer for every API a channel head
-- provides, decided once at ingest (store::build) instead of on every call, which read the
-- bundle row of every providing bundle (a widely provided API has dozens) to find the heads.
-- package, channel and bundle name the head in its package's default channel, first by
-- package name; they are NULL when heads provide the API but none in a default channel. An
-- API no head provides has no row.
CREATE TABLE default_provider (
    api_group TEXT NOT NULL,
    version   TEXT NOT NULL,
    kind      TEXT NOT NULL,
    package   TEXT,
    channel   TEXT,
    bundle    TEXT,
    PRIMARY KEY (api_group, version, kind)
) WITHOUT ROWID;
