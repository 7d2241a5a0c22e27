-- outbox-relay schema, version 4: claims find the oldest due rows without walking retained rows.
--
-- The claim and lag statements filter by instance_key = ANY (...) and ORDER BY seq, which the
-- (instance_key, seq) index of version 1 cannot return in order; PostgreSQL then walks the primary
-- key from the oldest row, through every PUBLISHED row still kept. This index holds the active
-- rows only, in seq order, so a claim reads about as many index entries as it claims.
--
-- On a large existing table, create it beforehand with CREATE INDEX CONCURRENTLY (same name and
-- definition); IF NOT EXISTS then makes this migration a no-op.

CREATE INDEX IF NOT EXISTS "${tableName}_active_seq_idx"
    ON ${qualifiedTable} (seq)
    WHERE status IN ('PENDING', 'AMBIGUOUS', 'IN_FLIGHT');
