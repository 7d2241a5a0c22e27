-- outbox-relay schema, version 12: the index of parked rows holds a bounded prefix of the
-- correlation id.
--
-- Version 7 indexed parked rows by (instance_key, correlation_id). A btree entry must fit in about
-- a third of a page (2,704 bytes), and correlation_id has no length limit: a longer one (a token,
-- say) was accepted on insert, where the row is not parked yet, and then made every park of the
-- row fail (SQLState 54000), which failed the task, again after each restart. The index now holds
-- the first 200 characters (at most 800 bytes); a lookup by correlation id compares that prefix,
-- then the whole id.
--
-- On a large table, build the new index beforehand without blocking writes (same name and
-- definition; IF NOT EXISTS then skips it here), and drop the old one with DROP INDEX
-- CONCURRENTLY. A concurrent build that failed leaves an INVALID index under the name: this
-- migration then builds it again.
--   CREATE INDEX CONCURRENTLY "<table>_parked_cid_idx" ON <table> (instance_key, left(correlation_id, 200)) WHERE parked_at IS NOT NULL;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index
             WHERE indexrelid = to_regclass('${qualifiedIndexParkedCorrelation}')
               AND NOT indisvalid) THEN
    EXECUTE 'DROP INDEX ${qualifiedIndexParkedCorrelation}';
  END IF;
END
$$;

CREATE INDEX IF NOT EXISTS "${tableName}_parked_cid_idx"
    ON ${qualifiedTable} (instance_key, left(correlation_id, 200))
    WHERE parked_at IS NOT NULL;

DROP INDEX IF EXISTS ${qualifiedIndexParkedRows};
