-- outbox-relay schema, version 8: what an exactly-once claim remembers (docs/design.md,
-- "Exactly-once").
--
-- lease_epoch: the epoch of the task instance that holds the lease (a database transaction id
-- taken when it started, so later instances have higher epochs); claim_batch: that instance's
-- claim counter. Together with seq they are the row's position among the records the instance
-- handed to Kafka, which a restarted task compares with the committed source offsets to tell a
-- row whose record was committed from one that must be sent again. Both stay NULL in
-- at-least-once mode.
--
-- No index uses them (a claim stays a HOT update), and adding a column without a default does not
-- rewrite the table: this migration takes a brief lock, whatever the table's size.

ALTER TABLE ${qualifiedTable} ADD COLUMN IF NOT EXISTS lease_epoch BIGINT;
ALTER TABLE ${qualifiedTable} ADD COLUMN IF NOT EXISTS claim_batch BIGINT;
