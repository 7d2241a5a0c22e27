-- outbox-relay schema, version 3: wake the relay when rows commit, instead of waiting for a poll.
--
-- One notification per inserting statement and instance key, delivered when the transaction
-- commits, on channel ${notifyChannel}. The payload is the instance key only (never row data).
-- Relays that do not listen fall back to polling; nothing depends on a notification arriving.

CREATE FUNCTION ${qualifiedNotifyFunction}() RETURNS trigger
    LANGUAGE plpgsql AS
$$
DECLARE
    key TEXT;
BEGIN
    FOR key IN SELECT DISTINCT instance_key FROM inserted_rows WHERE instance_key IS NOT NULL LOOP
        PERFORM pg_notify('${notifyChannel}', key);
    END LOOP;
    RETURN NULL;
END;
$$;

CREATE TRIGGER "${tableName}_notify_inserted"
    AFTER INSERT ON ${qualifiedTable}
    REFERENCING NEW TABLE AS inserted_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ${qualifiedNotifyFunction}();
