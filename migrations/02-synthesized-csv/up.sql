-- opreg store, schema 2: a CSV synthesized from olm.csv.metadata is no longer stored.
-- It repeats the package icon and description in every bundle, which made the database several
-- times larger than its source. csv_synth = 1 marks the bundles whose csvJson (and object, when
-- they have no olm.bundle.object) is built when the bundle is read; wire_manifests then holds
-- only the bundle's own objects.
ALTER TABLE bundle ADD COLUMN csv_synth INTEGER NOT NULL DEFAULT 0;
