-- outbox-relay schema, version 9: publishing moves a row out of the outbox into a narrow published
-- log (docs/design.md, "The published log").
--
-- Until version 8 a published row stayed in the outbox table for the retention period: publishing
-- wrote a new version of it (a non-HOT update, since it leaves the indexes of the rows awaiting
-- delivery) and an entry in each of its indexes, and the table grew with every row kept. From this
-- version the acknowledgement's write deletes the row, fenced by its lease exactly as before, and
-- inserts in the same statement what the audit needs into this log: the message's identity, its
-- attempts, its Kafka coordinates and when it was published. No payload, no headers (they are in
-- Kafka). The outbox table holds only rows awaiting delivery and parked ones.
--
-- The log has no primary key and no unique constraint: nothing may stop a publish. Its message_id
-- index serves operators' lookups and the writer library's duplicate check (a retried insert of a
-- message id already published does nothing); its (instance_key, published_at) index serves
-- retention, which deletes each instance key's old entries in bounded batches. (A BRIN index on
-- published_at would be smaller, but once vacuum lets new entries reuse the space of deleted ones,
-- every page range spans old and new times and retention would read the whole log.) Its replica
-- identity is the whole row: with a publication FOR ALL TABLES (logical replication, or Debezium
-- on the same database) PostgreSQL refuses to delete from a table without one, and retention
-- would stop; the entries are narrow, and only retention deletes them.
--
-- The table is created, not reused: a relation of this name that exists already (another table
-- named <table>_published) makes the migration fail instead of receiving published rows.

-- Rows published before this version stay in the outbox table, status PUBLISHED, until retention
-- deletes them there (through the settled index of version 7, which no new publish writes to):
-- nothing is moved, and this migration only creates objects.

CREATE TABLE ${qualifiedPublishedTable} (
    seq               BIGINT      NOT NULL,
    message_id        TEXT        NOT NULL,
    instance_key      TEXT        NOT NULL,
    aggregate_type    TEXT,
    aggregate_id      TEXT,
    event_type        TEXT,
    correlation_id    TEXT,
    created_at        TIMESTAMPTZ,
    attempts          INTEGER     NOT NULL,
    abandoned_claims  INTEGER     NOT NULL,
    lease_token       BIGINT      NOT NULL,
    last_failure_code TEXT,
    published_at      TIMESTAMPTZ NOT NULL,
    kafka_topic       TEXT,
    kafka_partition   INTEGER,
    kafka_offset      BIGINT
);

COMMENT ON TABLE ${qualifiedPublishedTable} IS
    'Rows of the outbox table ${tableName} that outbox-relay published, kept for the retention period';

CREATE INDEX IF NOT EXISTS "${tableName}_published_id_idx"
    ON ${qualifiedPublishedTable} (message_id);

CREATE INDEX IF NOT EXISTS "${tableName}_published_at_idx"
    ON ${qualifiedPublishedTable} (instance_key, published_at);

ALTER TABLE ${qualifiedPublishedTable} REPLICA IDENTITY FULL;
