-- outbox-relay schema, version 7: claims, renewals and retries become HOT updates, and a published
-- row no longer keeps its payload.
--
-- PostgreSQL updates a row "HOT" (heap-only: no new index entries, and a WAL record of only the
-- changed bytes) when no column that any index uses changes - key columns and partial-index
-- predicates alike - and the page has room for the new version. Until version 6 every index of
-- the active rows was partial on status, so every claim (PENDING -> IN_FLIGHT), retry and release
-- wrote a whole new row, payload included, and an entry in every index.
--
-- From this version no index uses status. The active rows are those neither published nor
-- parked: published_at IS NULL AND parked_at IS NULL; a row leaves them only when it is published
-- or parked (FAILED, EXHAUSTED), which are the only writes that still touch indexes. A claim
-- changes status and the lease only: on a page with room it is HOT. A claim takes the rows of a
-- page together, and a new version is as long as the old one, so a page must keep at least half
-- of itself free for all of its rows to be claimed HOT: fillfactor 45 (measured: 45 made every
-- claim HOT, 60 a third of them; docs/benchmarks.md). It applies to pages written from now on.
--
-- A published row keeps its topic, partition and offset for the retention period, not its
-- payload and headers (they are in Kafka): its new version is a narrow one.
--
-- On a large table, create the four new indexes beforehand with CREATE INDEX CONCURRENTLY (same
-- names and definitions; IF NOT EXISTS then skips them here) and drop the four old ones with
-- DROP INDEX CONCURRENTLY. Adding parked_at does not rewrite the table; marking the parked rows
-- reads them through the old parked index.

ALTER TABLE ${qualifiedTable} ADD COLUMN IF NOT EXISTS parked_at TIMESTAMPTZ;

-- Legacy rows (no instance key) are never changed: they keep parked_at NULL, and the relay, which
-- only reads rows of its own instance keys, never sees them.
UPDATE ${qualifiedTable}
    SET parked_at = statement_timestamp()
    WHERE status IN ('FAILED', 'EXHAUSTED') AND parked_at IS NULL AND instance_key IS NOT NULL;

CREATE INDEX IF NOT EXISTS "${tableName}_due_seq_idx"
    ON ${qualifiedTable} (seq)
    WHERE published_at IS NULL AND parked_at IS NULL;

CREATE INDEX IF NOT EXISTS "${tableName}_due_aggregate_idx"
    ON ${qualifiedTable} (instance_key, aggregate_id, seq)
    WHERE published_at IS NULL AND parked_at IS NULL;

CREATE INDEX IF NOT EXISTS "${tableName}_settled_idx"
    ON ${qualifiedTable} (instance_key, published_at)
    WHERE published_at IS NOT NULL;

CREATE INDEX IF NOT EXISTS "${tableName}_parked_rows_idx"
    ON ${qualifiedTable} (instance_key, correlation_id)
    WHERE parked_at IS NOT NULL;

DROP INDEX IF EXISTS ${qualifiedIndexActiveSeq};
DROP INDEX IF EXISTS ${qualifiedIndexActiveAggregate};
DROP INDEX IF EXISTS ${qualifiedIndexPublished};
DROP INDEX IF EXISTS ${qualifiedIndexParked};

ALTER TABLE ${qualifiedTable} SET (fillfactor = 45);
