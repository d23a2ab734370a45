-- opreg store, schema 4: no index of the update edges by their source bundle. No query looks
-- edges up by from_bundle: the server and the upgrade queries find them by their target, through
-- the primary key (package, channel, to_bundle, ...) or edge_to (to_bundle, kind). Building it
-- was about 0.05 s of the community catalog's ingest, and it took 6.5 MB of its database.
DROP INDEX edge_from;
