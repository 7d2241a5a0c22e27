-- outbox-relay schema, version 10: the published log finds a message id through a hash index.
--
-- Every publish writes an entry into the log and one into each of its indexes. The message-id
-- index serves only equality lookups (the writer library's duplicate check, operators' lookups by
-- message id), and message ids are usually random (UUIDs): a btree stores each id whole in a leaf
-- page picked at random, a hash index a 4-byte hash code in a bucket. Measured on the project's
-- benchmark: the publish statement about a fifth faster, 43 bytes less WAL per published row
-- (docs/benchmarks.md). Hash indexes are crash-safe and replicated since PostgreSQL 10.
--
-- On a large log, build the new index beforehand without blocking publishes (same name and
-- definition; IF NOT EXISTS then skips it here), and drop the old one with DROP INDEX
-- CONCURRENTLY:
--   CREATE INDEX CONCURRENTLY "<table>_published_id_hash" ON "<table>_published" USING hash (message_id);

CREATE INDEX IF NOT EXISTS "${tableName}_published_id_hash"
    ON ${qualifiedPublishedTable} USING hash (message_id);

DROP INDEX IF EXISTS ${qualifiedIndexPublishedId};
