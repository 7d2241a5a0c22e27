-- outbox-relay schema, version 15: the parked rows' correlation id index also orders by seq.
--
-- The operator CLI's requeue and discard by correlation id change parked rows in batches in seq
-- order, the next batch after the last seq of the one before. Version 12's index, by instance key
-- and the correlation id's first 200 characters, holds a correlation id's rows in no seq order, so
-- each batch read every parked row of that correlation id past its cursor and sorted them: a bulk
-- job's million parked rows under one correlation id, 100 batches, about 50 million rows read.
-- Indexed by (instance_key, left(correlation_id, 200), seq), a batch reads its own rows; the
-- lookups by correlation id that version 12's index served use this one, which replaces it.
--
-- On a large table, build the new index beforehand without blocking writes (same name and
-- definition; IF NOT EXISTS then skips it here), and drop the old one with DROP INDEX
-- CONCURRENTLY. A concurrent build that failed leaves an INVALID index under the name: this
-- migration then builds it again.
--   CREATE INDEX CONCURRENTLY "<table>_parked_cid_seq_idx" ON <table> (instance_key, left(correlation_id, 200), seq) WHERE parked_at IS NOT NULL;
--   DROP INDEX CONCURRENTLY "<table>_parked_cid_idx";

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_index
             WHERE indexrelid = to_regclass('${qualifiedIndexParkedCorrelationSeq}')
               AND NOT indisvalid) THEN
    EXECUTE 'DROP INDEX ${qualifiedIndexParkedCorrelationSeq}';
  END IF;
END
$$;

CREATE INDEX IF NOT EXISTS "${tableName}_parked_cid_seq_idx"
    ON ${qualifiedTable} (instance_key, left(correlation_id, 200), seq)
    WHERE parked_at IS NOT NULL;

DROP INDEX IF EXISTS ${qualifiedIndexParkedCorrelation};
