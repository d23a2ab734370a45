-- opreg store, schema 9: each channel entry holds its bundle's rowid, so a bundle answer goes
-- from the entry to the bundle's row by its integer key instead of searching the bundle
-- table's (package, name) index first: one b-tree search less per answer, each a page read.
ALTER TABLE channel_entry ADD COLUMN bundle_id INTEGER REFERENCES bundle(id);
