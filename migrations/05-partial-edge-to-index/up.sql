-- opreg store, schema 5: edge_to indexes only the replaces and skips edges. The one query that
-- finds edges by their target in any package (entries that replace a bundle) asks for those
-- two kinds; the queries within one channel use the primary key. skipRange edges are 52,000 of
-- the community catalog's 62,000, and indexing them took about 0.02 s of its ingest.
DROP INDEX edge_to;
CREATE INDEX edge_to ON edge(to_bundle) WHERE kind IN ('replaces', 'skips');
