-- opreg store, schema 8: the bundle table again, with its small columns first. A row's columns
-- are stored in this order, and the CSV template (11 KB on average, on overflow pages) used to
-- come before csv_parts: reading csv_parts, which every bundle answer joins on, walked the
-- template's overflow pages through the page cache, and reading the template then read them
-- again. Written by ingest into an empty table, so the copy below moves no rows.
CREATE TABLE bundle_v8 (
    id          INTEGER PRIMARY KEY,
    package     TEXT NOT NULL REFERENCES package(name),
    name        TEXT NOT NULL,
    version     TEXT NOT NULL,
    image       TEXT NOT NULL,
    deprecation TEXT,
    -- 1 when the CSV is synthesized from csv_template and the package's parts
    csv_synth   INTEGER NOT NULL DEFAULT 0,
    -- package_csv.id of the package's description and icon, for a bundle with a template
    csv_parts   INTEGER,
    -- encoded api.Bundle with every channel-independent field except csvJson/object
    wire_core      BLOB NOT NULL,
    -- encoded api.Bundle holding only csvJson and object
    wire_manifests BLOB NOT NULL,
    csv_template   TEXT,
    UNIQUE (package, name)
);
INSERT INTO bundle_v8 (id, package, name, version, image, deprecation, csv_synth, csv_parts,
                       wire_core, wire_manifests, csv_template)
SELECT id, package, name, version, image, deprecation, csv_synth, csv_parts,
       wire_core, wire_manifests, csv_template FROM bundle;
DROP TABLE bundle;
ALTER TABLE bundle_v8 RENAME TO bundle;
