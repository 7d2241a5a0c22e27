-- outbox-relay schema, version 6: one index entry less per inserted and per claimed row.
--
-- Since version 4 no statement reads the (instance_key, seq) index of version 1: claims and the lag
-- query read the (seq) index of the active rows, the ordering check and the backlog counts read the
-- (instance_key, aggregate_id, seq) one. Every insert and every claim (a non-HOT update: status is
-- in the partial indexes' predicates) still wrote an entry into it. Dropping it takes a brief
-- exclusive lock on the table; on a busy table, drop it beforehand with DROP INDEX CONCURRENTLY
-- (IF EXISTS then makes this migration a no-op).

DROP INDEX IF EXISTS ${qualifiedV1ActiveIndex};
