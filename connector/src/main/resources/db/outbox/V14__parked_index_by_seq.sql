-- outbox-relay schema, version 14: the parked rows are indexed by instance key, then seq.
--
-- The operator CLI's bulk requeue and discard (--all, --correlation-id) change parked rows in
-- batches in seq order, the next batch after the last seq of the one before. The only index of
-- parked rows (version 12) is by correlation id, so each batch read every parked row of the key and
-- sorted them: after an incident that parked a million rows, a requeue of 100 batches read about
-- 100 million. Indexed by (instance_key, seq), a batch reads its own rows. The index holds parked
-- rows only (parks are rare; a park already changes an indexed column, so it costs no HOT update).
--
-- On a large table, build the index beforehand without blocking writes (same name and
-- definition; IF NOT EXISTS then skips it here). A concurrent build that failed leaves an INVALID
-- index under the name: this migration then builds it again.
--   CREATE INDEX CONCURRENTLY "<table>_parked_key_seq_idx" ON <table> (instance_key, seq) WHERE parked_at IS NOT NULL;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index
             WHERE indexrelid = to_regclass('${qualifiedIndexParkedKeySeq}')
               AND NOT indisvalid) THEN
    EXECUTE 'DROP INDEX ${qualifiedIndexParkedKeySeq}';
  END IF;
END
$$;

CREATE INDEX IF NOT EXISTS "${tableName}_parked_key_seq_idx"
    ON ${qualifiedTable} (instance_key, seq)
    WHERE parked_at IS NOT NULL;
