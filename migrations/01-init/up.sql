-- opreg store, schema 1. The database is written once by `opreg ingest` and then only read.

-- Facts about the build: the opreg version that wrote it, the source digest, counts.
CREATE TABLE catalog_info (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE package (
    name            TEXT PRIMARY KEY,
    default_channel TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    icon_data       TEXT,
    icon_mediatype  TEXT,
    -- package-level properties as a JSON array of {type, value}, for lossless rendering
    properties      TEXT NOT NULL DEFAULT '[]',
    -- package-level deprecation message, if any
    deprecation     TEXT
) WITHOUT ROWID;

CREATE TABLE channel (
    package     TEXT NOT NULL REFERENCES package(name),
    name        TEXT NOT NULL,
    head        TEXT NOT NULL,
    properties  TEXT NOT NULL DEFAULT '[]',
    deprecation TEXT,
    PRIMARY KEY (package, name)
) WITHOUT ROWID;

CREATE TABLE bundle (
    id          INTEGER PRIMARY KEY,
    package     TEXT NOT NULL REFERENCES package(name),
    name        TEXT NOT NULL,
    version     TEXT NOT NULL,
    image       TEXT NOT NULL,
    deprecation TEXT,
    -- encoded api.Bundle with every channel-independent field except csvJson/object
    wire_core      BLOB NOT NULL,
    -- encoded api.Bundle holding only csvJson and object
    wire_manifests BLOB NOT NULL,
    UNIQUE (package, name)
);

-- Every property in catalog order, including olm.bundle.object and olm.csv.metadata.
CREATE TABLE bundle_property (
    bundle_id INTEGER NOT NULL REFERENCES bundle(id),
    seq       INTEGER NOT NULL,
    type      TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (bundle_id, seq)
) WITHOUT ROWID;

CREATE TABLE related_image (
    bundle_id INTEGER NOT NULL REFERENCES bundle(id),
    seq       INTEGER NOT NULL,
    name      TEXT NOT NULL,
    image     TEXT NOT NULL,
    PRIMARY KEY (bundle_id, seq)
) WITHOUT ROWID;

-- One row per (channel, bundle) membership, with that channel's declared edges.
CREATE TABLE channel_entry (
    package    TEXT NOT NULL,
    channel    TEXT NOT NULL,
    bundle     TEXT NOT NULL,
    -- order of the entry in the catalog's channel list
    seq        INTEGER NOT NULL,
    -- distance from the channel head (graph::channel_order); 0 is the head
    position   INTEGER NOT NULL,
    replaces   TEXT NOT NULL DEFAULT '',
    skips      TEXT NOT NULL DEFAULT '[]',
    skip_range TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (package, channel, bundle),
    FOREIGN KEY (package, channel) REFERENCES channel(package, name)
) WITHOUT ROWID;

-- ListBundles streams in (channel, package, bundle) order.
CREATE INDEX channel_entry_stream ON channel_entry(channel, package, bundle);

-- Every update edge, materialized by graph::channel_edges: from_bundle can be installed over
-- to_bundle in this channel. to_bundle need not be a bundle (synthetic skip targets).
CREATE TABLE edge (
    package     TEXT NOT NULL,
    channel     TEXT NOT NULL,
    from_bundle TEXT NOT NULL,
    to_bundle   TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('replaces', 'skips', 'skipRange')),
    -- 1 when to_bundle is not a bundle of the package
    synthetic   INTEGER NOT NULL,
    PRIMARY KEY (package, channel, to_bundle, from_bundle, kind)
) WITHOUT ROWID;

CREATE INDEX edge_to ON edge(to_bundle, kind);
CREATE INDEX edge_from ON edge(package, channel, from_bundle);

-- olm.gvk properties, for the provider queries.
CREATE TABLE provided_api (
    api_group TEXT NOT NULL,
    version   TEXT NOT NULL,
    kind      TEXT NOT NULL,
    bundle_id INTEGER NOT NULL REFERENCES bundle(id),
    PRIMARY KEY (api_group, version, kind, bundle_id)
) WITHOUT ROWID;

-- The olm.deprecations entries of each package, in catalog order.
CREATE TABLE deprecation_entry (
    package TEXT NOT NULL REFERENCES package(name),
    seq     INTEGER NOT NULL,
    schema  TEXT NOT NULL,
    name    TEXT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (package, seq)
) WITHOUT ROWID;

-- Metas of other schemas, in input order.
CREATE TABLE custom_meta (
    seq     INTEGER PRIMARY KEY,
    schema  TEXT NOT NULL,
    package TEXT NOT NULL,
    name    TEXT NOT NULL,
    blob    TEXT NOT NULL
);

CREATE INDEX custom_meta_lookup ON custom_meta(schema, package, seq);
