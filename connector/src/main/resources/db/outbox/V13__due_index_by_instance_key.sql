-- outbox-relay schema, version 13: the due rows are indexed by instance key, then seq.
--
-- Version 7 indexed the due rows by seq alone. A claim reads them in seq order up to its limit,
-- and on a table several connectors share it read, and fetched from the table, every due row of
-- the other instance keys (a paused connector's backlog) and every unsettled legacy row before
-- its first own row: 0.11 s per claim behind 300,000 of them, 0.3 s with a cold cache
-- (docs/benchmarks.md, finding 21).
-- Indexed by (instance_key, seq), each claim reads only its own keys' rows, key by key. Legacy
-- rows (no instance key) are left out of it, as the Debezium adoption script leaves them out of
-- its indexes: an adopted table's history stays out of the index for good.
--
-- On a large table, build the new index beforehand without blocking writes (same name and
-- definition; IF NOT EXISTS then skips it here), and drop the old one with DROP INDEX
-- CONCURRENTLY. A concurrent build that failed leaves an INVALID index under the name: this
-- migration then builds it again.
--   CREATE INDEX CONCURRENTLY "<table>_due_key_seq_idx" ON <table> (instance_key, seq) WHERE published_at IS NULL AND parked_at IS NULL AND instance_key IS NOT NULL;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index
             WHERE indexrelid = to_regclass('${qualifiedIndexDueKeySeq}')
               AND NOT indisvalid) THEN
    EXECUTE 'DROP INDEX ${qualifiedIndexDueKeySeq}';
  END IF;
END
$$;

CREATE INDEX IF NOT EXISTS "${tableName}_due_key_seq_idx"
    ON ${qualifiedTable} (instance_key, seq)
    WHERE published_at IS NULL AND parked_at IS NULL AND instance_key IS NOT NULL;

DROP INDEX IF EXISTS ${qualifiedIndexDueSeq};
