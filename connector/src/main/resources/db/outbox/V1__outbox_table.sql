-- outbox-relay schema, version 1: the outbox table, its relay state and the indexes the claim needs.
-- The table name comes from the connector's outbox.table setting (Flyway placeholders).

CREATE TABLE ${qualifiedTable} (
    seq               BIGINT GENERATED ALWAYS AS IDENTITY,
    message_id        TEXT        NOT NULL DEFAULT gen_random_uuid()::text,
    instance_key      TEXT,
    aggregate_type    TEXT        NOT NULL,
    aggregate_id      TEXT        NOT NULL,
    event_type        TEXT        NOT NULL,
    topic             TEXT,
    payload           BYTEA,
    headers           JSONB,
    correlation_id    TEXT,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    deliver_before    TIMESTAMPTZ,
    status            TEXT        NOT NULL DEFAULT 'PENDING',
    attempts          INTEGER     NOT NULL DEFAULT 0,
    abandoned_claims  INTEGER     NOT NULL DEFAULT 0,
    isolated          BOOLEAN     NOT NULL DEFAULT FALSE,
    next_attempt_at   TIMESTAMPTZ,
    lease_owner       TEXT,
    lease_token       BIGINT      NOT NULL DEFAULT 0,
    lease_expires_at  TIMESTAMPTZ,
    last_failure_code TEXT,
    published_at      TIMESTAMPTZ,
    kafka_topic       TEXT,
    kafka_partition   INTEGER,
    kafka_offset      BIGINT,
    CONSTRAINT "${tableName}_pkey" PRIMARY KEY (seq),
    CONSTRAINT "${tableName}_message_id_key" UNIQUE (message_id),
    CONSTRAINT "${tableName}_status_check"
        CHECK (status IN ('PENDING', 'IN_FLIGHT', 'PUBLISHED', 'AMBIGUOUS', 'FAILED', 'EXHAUSTED')),
    CONSTRAINT "${tableName}_attempts_check" CHECK (attempts >= 0 AND abandoned_claims >= 0),
    CONSTRAINT "${tableName}_lease_token_check" CHECK (lease_token >= 0),
    CONSTRAINT "${tableName}_message_id_check"
        CHECK (btrim(message_id) <> '' AND length(message_id) <= 255),
    CONSTRAINT "${tableName}_instance_key_check"
        CHECK (instance_key IS NULL OR (btrim(instance_key) = instance_key AND instance_key <> '')),
    CONSTRAINT "${tableName}_in_flight_lease_check"
        CHECK (status <> 'IN_FLIGHT' OR (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
    -- Only sanitized reason codes are stored, never exception text.
    CONSTRAINT "${tableName}_failure_code_check"
        CHECK (last_failure_code IS NULL OR last_failure_code ~ '^[A-Z0-9_]{1,64}$')
);

COMMENT ON TABLE ${qualifiedTable} IS 'Transactional outbox relayed to Kafka by outbox-relay';

-- Claim scan: rows awaiting delivery, per instance key, in insertion order. Partial, so a table
-- holding millions of PUBLISHED rows claims as fast as an empty one.
CREATE INDEX "${tableName}_active_idx"
    ON ${qualifiedTable} (instance_key, seq)
    WHERE status IN ('PENDING', 'AMBIGUOUS', 'IN_FLIGHT');

-- Per-aggregate ordering: the earlier active rows of one aggregate.
CREATE INDEX "${tableName}_active_aggregate_idx"
    ON ${qualifiedTable} (instance_key, aggregate_id, seq)
    WHERE status IN ('PENDING', 'AMBIGUOUS', 'IN_FLIGHT');

-- Retention cleanup of PUBLISHED rows, in bounded batches.
CREATE INDEX "${tableName}_published_idx"
    ON ${qualifiedTable} (instance_key, published_at)
    WHERE status = 'PUBLISHED';

-- Operators: parked rows (FAILED, EXHAUSTED) by instance key and correlation id.
CREATE INDEX "${tableName}_parked_idx"
    ON ${qualifiedTable} (instance_key, status, correlation_id)
    WHERE status IN ('FAILED', 'EXHAUSTED');
