-- opreg store, schema 3: bundle RPCs answer with stored bytes. A CSV synthesized from
-- olm.csv.metadata is built at ingest as a template (wire::csv_template) whose two slots take
-- the package's description and icon. Those two parts are kept once per package, as JSON text,
-- in package_csv, a rowid table: looking a row up by its integer id never reads the large
-- rows it passes (the package table's rows, with the icon, are keyed by name). Serving
-- splices template and parts into the encoded answer without building a message.
CREATE TABLE package_csv (
    id          INTEGER PRIMARY KEY,
    package     TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    icon        TEXT NOT NULL DEFAULT ''
);
ALTER TABLE bundle ADD COLUMN csv_template TEXT;
-- package_csv(id) of the bundle's package when csv_template is set
ALTER TABLE bundle ADD COLUMN csv_parts INTEGER;
