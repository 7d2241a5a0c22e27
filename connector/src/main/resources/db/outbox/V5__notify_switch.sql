-- outbox-relay schema, version 5: the insert notification can be switched off without DDL.
--
-- PostgreSQL serializes the commits of transactions that sent a notification, so with the
-- notification on, inserting transactions cannot share WAL flushes (no group commit) and the
-- application's outbox inserts top out at about one commit per WAL flush. Where that ceiling
-- matters more than pick-up latency, turn it off for the database, a role or a session:
--   ALTER DATABASE app SET outbox_relay.notify = 'off';
-- The relay then picks rows up at its next poll (poll.interval.ms) instead of within milliseconds.

CREATE OR REPLACE FUNCTION ${qualifiedNotifyFunction}() RETURNS trigger
    LANGUAGE plpgsql AS
$$
DECLARE
    key TEXT;
BEGIN
    IF coalesce(current_setting('outbox_relay.notify', true), '') = 'off' THEN
        RETURN NULL;
    END IF;
    FOR key IN SELECT DISTINCT instance_key FROM inserted_rows WHERE instance_key IS NOT NULL LOOP
        PERFORM pg_notify('${notifyChannel}', key);
    END LOOP;
    RETURN NULL;
END;
$$;
