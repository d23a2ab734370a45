-- The opreg store, schema version 10 (store::SCHEMA_VERSION, kept in PRAGMA user_version).
--
-- A database is written once by `opreg ingest` into an empty file and then only read. opreg
-- never migrates a database: one of an older schema is refused and rebuilt, so this file is the
-- whole schema as it is, not a history. Versions 1 to 9 were earlier schemas; a change to this
-- file raises the version.
--
-- Column order matters where rows are large: SQLite stores a row's columns in order, and a
-- column after an overflowing one is read by walking its overflow pages.

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
    -- package-level properties as a JSON array of [type, value] pairs (store::columns)
    properties      TEXT NOT NULL DEFAULT '[]',
    -- package-level deprecation message, if any
    deprecation     TEXT
) WITHOUT ROWID;

CREATE TABLE channel (
    package     TEXT NOT NULL REFERENCES package(name),
    name        TEXT NOT NULL,
    head        TEXT NOT NULL,
    -- as package.properties
    properties  TEXT NOT NULL DEFAULT '[]',
    deprecation TEXT,
    PRIMARY KEY (package, name)
) WITHOUT ROWID;

-- A bundle with its answer, decided at ingest. Small columns first: every bundle answer reads
-- csv_parts, and the CSV template (11 KB on average, on overflow pages) comes last.
CREATE TABLE bundle (
    id          INTEGER PRIMARY KEY,
    package     TEXT NOT NULL REFERENCES package(name),
    name        TEXT NOT NULL,
    version     TEXT NOT NULL,
    image       TEXT NOT NULL,
    deprecation TEXT,
    -- package_csv.id of the package's description and icon; set exactly when csv_template is,
    -- so it also says that the bundle's CSV is synthesized
    csv_parts   INTEGER,
    -- encoded api.Bundle with every channel-independent field except csvJson/object
    wire_core      BLOB NOT NULL,
    -- encoded api.Bundle holding only csvJson and object (the bundle's own objects when its
    -- CSV is synthesized)
    wire_manifests BLOB NOT NULL,
    -- a CSV synthesized from olm.csv.metadata, with slots for the package's parts
    -- (wire::csv_template)
    csv_template   TEXT,
    UNIQUE (package, name),
    CHECK ((csv_parts IS NULL) = (csv_template IS NULL))
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

-- A synthesized CSV's package parts, once per package, as JSON text. A rowid table: looking a
-- row up by its integer id never reads the large rows it passes.
CREATE TABLE package_csv (
    id          INTEGER PRIMARY KEY,
    package     TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    icon        TEXT NOT NULL DEFAULT ''
);

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
    -- a JSON array of names (store::columns)
    skips      TEXT NOT NULL DEFAULT '[]',
    skip_range TEXT NOT NULL DEFAULT '',
    -- the bundle's rowid, so an answer reaches the bundle's row by its integer key
    bundle_id  INTEGER REFERENCES bundle(id),
    PRIMARY KEY (package, channel, bundle),
    FOREIGN KEY (package, channel) REFERENCES channel(package, name)
) WITHOUT ROWID;

-- ListBundles streams in (channel, package, bundle) order.
CREATE INDEX channel_entry_stream ON channel_entry(channel, package, bundle);

-- Every update edge, materialized by graph::channel_edges: from_bundle can be installed over
-- to_bundle in this channel. to_bundle need not be a bundle (synthetic skip targets). Edges
-- are found by their target only: through the primary key, or edge_to for the two kinds
-- searched in any package (no index by from_bundle; skipRange edges, most of them, are not
-- in edge_to).
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

CREATE INDEX edge_to ON edge(to_bundle) WHERE kind IN ('replaces', 'skips');

-- olm.gvk properties, for the provider queries.
CREATE TABLE provided_api (
    api_group TEXT NOT NULL,
    version   TEXT NOT NULL,
    kind      TEXT NOT NULL,
    bundle_id INTEGER NOT NULL REFERENCES bundle(id),
    PRIMARY KEY (api_group, version, kind, bundle_id)
) WITHOUT ROWID;

-- GetDefaultBundleThatProvides' answer for every API a channel head provides (store::build):
-- the head in its package's default channel, first by package name; package, channel and
-- bundle are NULL when heads provide the API but none in a default channel. An API no head
-- provides has no row.
CREATE TABLE default_provider (
    api_group TEXT NOT NULL,
    version   TEXT NOT NULL,
    kind      TEXT NOT NULL,
    package   TEXT,
    channel   TEXT,
    bundle    TEXT,
    PRIMARY KEY (api_group, version, kind)
) WITHOUT ROWID;

-- GetBundleThatReplaces' answer for every name a channel's entries replace or skip
-- (graph::replacements, written by store::answers): the replacing entry closest to the head,
-- then by name.
CREATE TABLE replacement (
    package   TEXT NOT NULL,
    channel   TEXT NOT NULL,
    replaced  TEXT NOT NULL,
    replacing TEXT NOT NULL,
    PRIMARY KEY (package, channel, replaced)
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
