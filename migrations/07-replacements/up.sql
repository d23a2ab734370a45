-- opreg store, schema 7: GetBundleThatReplaces' answer for every name a channel's entries
-- replace or skip, decided once at ingest (graph::replacements, written by store::answers)
-- instead of on every call, which searched the edge index, looked up each replacing entry's
-- position and sorted them. `replacing` is the channel entry closest to the head, then by name.
CREATE TABLE replacement (
    package   TEXT NOT NULL,
    channel   TEXT NOT NULL,
    replaced  TEXT NOT NULL,
    replacing TEXT NOT NULL,
    PRIMARY KEY (package, channel, replaced)
) WITHOUT ROWID;
