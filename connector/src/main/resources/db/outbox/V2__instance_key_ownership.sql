-- outbox-relay schema, version 2: every new row has an owner, and an owner never changes.
--
-- Rows written before this version may have no instance key. They are legacy rows that predate
-- ownership: no migration assigns them an owner, and the relay never claims, changes or counts
-- them. NOT VALID makes the check apply to every new or updated row without rejecting those.

ALTER TABLE ${qualifiedTable}
    ADD CONSTRAINT "${tableName}_instance_key_required" CHECK (instance_key IS NOT NULL) NOT VALID;

CREATE FUNCTION ${qualifiedFunction}() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    IF NEW.instance_key IS DISTINCT FROM OLD.instance_key THEN
        RAISE EXCEPTION 'the instance key of an outbox row never changes (row %)', OLD.seq
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER "${tableName}_instance_key_immutable"
    BEFORE UPDATE OF instance_key ON ${qualifiedTable}
    FOR EACH ROW EXECUTE FUNCTION ${qualifiedFunction}();
