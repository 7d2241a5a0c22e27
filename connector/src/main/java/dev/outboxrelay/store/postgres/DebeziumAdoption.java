package dev.outboxrelay.store.postgres;

import dev.outboxrelay.writer.InstanceKeys;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The SQL that lets the relay take over a Debezium outbox table in place: the application keeps
 * inserting {@code id, aggregatetype, aggregateid, type, payload} as it does, and the relay reads
 * those columns through {@link ColumnMapping}. It adds the relay's state columns and the objects of
 * schema version 7 (constraints, triggers, indexes; the parked rows' indexes as versions 12, 14 and
 * 15 have them, the due rows' as version 13 has it) and changes no row.
 *
 * <ul>
 *   <li>No rewrite, no long lock. Each column is added with no default or a constant one, which
 *       PostgreSQL 11+ records in the catalog instead of writing into every row. {@code seq} and
 *       {@code instance_key} are added without a default and given one afterwards, for new rows
 *       only: a volatile default ({@code nextval}) or an identity column would rewrite the table.
 *       All of that is one short transaction of catalog changes (each lock waited for at most
 *       {@code lock_timeout}); the indexes are then built {@code CONCURRENTLY}, which reads the
 *       table but lets the application write meanwhile.
 *   <li>Rows already there keep {@code instance_key} NULL: they are legacy rows, which the relay
 *       never claims, changes or counts (Debezium delivered them). Nothing is backfilled. The
 *       indexes the claims read are partial on {@code instance_key IS NOT NULL}, so those rows cost
 *       the relay nothing; the planner proves the predicate from the claims' conditions on {@code
 *       instance_key}.
 *   <li>Rows inserted from the commit on get the instance key (a column default) and a {@code seq},
 *       and are the relay's.
 * </ul>
 *
 * <p>Statements are returned one by one (run each on its own, in order: the {@code CONCURRENTLY}
 * ones cannot run in a transaction block), or as one commented script.
 */
public final class DebeziumAdoption {
  private static final Pattern PLACEHOLDER = Pattern.compile("\\{[a-z_]+}");

  private static final Pattern ROLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_$-]{0,62}");

  /** The migration that creates the published log. */
  static final String PUBLISHED_LOG_MIGRATION = "V9__published_log.sql";

  /**
   * The migration that gives the published log its hash index of message ids: the latest version
   * this script includes (a later one is applied with {@code schema-sql --after-version 10}).
   */
  static final String PUBLISHED_LOG_HASH_INDEX_MIGRATION = "V10__published_log_hash_index.sql";

  private final OutboxTable table;
  private final String instanceKey;
  private final ColumnMapping columns;
  private final List<String> grantees;

  /**
   * @param instanceKey the key new rows get, the relay's {@code instance.keys}
   * @param columns the table's id and aggregate id columns (the indexes need them)
   * @param grantees roles that insert rows: they need USAGE on the new sequence of {@code seq}
   */
  public DebeziumAdoption(
      OutboxTable table, String instanceKey, ColumnMapping columns, List<String> grantees) {
    this.table = table;
    this.instanceKey = InstanceKeys.requireValid(instanceKey);
    this.columns = columns;
    for (String role : grantees) {
      if (role == null || !ROLE.matcher(role).matches()) {
        throw new IllegalArgumentException(
            "a role must be 1 to 63 letters, digits, underscores, $ or -");
      }
    }
    this.grantees = List.copyOf(grantees);
  }

  /** Every statement, in order, each to be run on its own. */
  public List<String> statements() {
    List<String> out = new ArrayList<>();
    out.add(
        """
        -- Wait at most 5 s for each lock, so the application's inserts never queue behind this
        -- script for longer; on a lock timeout before the COMMIT nothing has changed: run the
        -- script again.
        SET lock_timeout = '5s'""");
    out.add("BEGIN");
    out.add(
        fill(
            """
            -- The relay's state. No default, or a constant one: PostgreSQL keeps it in the
            -- catalog, no row is rewritten. Fails, changing nothing, if a column of one of these
            -- names exists already.
            ALTER TABLE {table}
                ADD COLUMN seq               BIGINT,
                ADD COLUMN instance_key      TEXT,
                ADD COLUMN topic             TEXT,
                ADD COLUMN headers           JSONB,
                ADD COLUMN correlation_id    TEXT,
                ADD COLUMN created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
                ADD COLUMN deliver_before    TIMESTAMPTZ,
                ADD COLUMN status            TEXT        NOT NULL DEFAULT 'PENDING',
                ADD COLUMN attempts          INTEGER     NOT NULL DEFAULT 0,
                ADD COLUMN abandoned_claims  INTEGER     NOT NULL DEFAULT 0,
                ADD COLUMN isolated          BOOLEAN     NOT NULL DEFAULT FALSE,
                ADD COLUMN next_attempt_at   TIMESTAMPTZ,
                ADD COLUMN lease_owner       TEXT,
                ADD COLUMN lease_token       BIGINT      NOT NULL DEFAULT 0,
                ADD COLUMN lease_expires_at  TIMESTAMPTZ,
                ADD COLUMN last_failure_code TEXT,
                ADD COLUMN published_at      TIMESTAMPTZ,
                ADD COLUMN kafka_topic       TEXT,
                ADD COLUMN kafka_partition   INTEGER,
                ADD COLUMN kafka_offset      BIGINT,
                ADD COLUMN parked_at         TIMESTAMPTZ,
                ADD COLUMN lease_epoch       BIGINT,
                ADD COLUMN claim_batch       BIGINT"""));
    out.add("CREATE SEQUENCE " + table.qualifiedSeqSequence() + " OWNED BY " + column("seq"));
    for (String role : grantees) {
      out.add(
          "-- The application's role inserts rows, so it draws seq numbers.\n"
              + "GRANT USAGE ON SEQUENCE "
              + table.qualifiedSeqSequence()
              + " TO "
              + quote(role));
    }
    out.add(
        fill(
            """
            -- New rows only: rows already there keep instance_key NULL (legacy rows, never
            -- claimed, changed or counted by the relay) and seq NULL.
            ALTER TABLE {table}
                ALTER COLUMN seq SET DEFAULT nextval('{sequence}'),
                ALTER COLUMN instance_key SET DEFAULT {instance_key}"""));
    out.add(
        fill(
            """
            -- The rules of the relay's own table, for new and updated rows (NOT VALID: the rows
            -- already there are not read).
            ALTER TABLE {table}
                ADD CONSTRAINT "{name}_instance_key_required"
                    CHECK (instance_key IS NOT NULL) NOT VALID,
                ADD CONSTRAINT "{name}_instance_key_check"
                    CHECK (instance_key IS NULL OR (btrim(instance_key) = instance_key
                        AND instance_key <> '')) NOT VALID,
                ADD CONSTRAINT "{name}_status_check"
                    CHECK (status IN ('PENDING', 'IN_FLIGHT', 'PUBLISHED', 'AMBIGUOUS', 'FAILED',
                        'EXHAUSTED')) NOT VALID,
                ADD CONSTRAINT "{name}_attempts_check"
                    CHECK (attempts >= 0 AND abandoned_claims >= 0) NOT VALID,
                ADD CONSTRAINT "{name}_lease_token_check" CHECK (lease_token >= 0) NOT VALID,
                ADD CONSTRAINT "{name}_in_flight_lease_check"
                    CHECK (status <> 'IN_FLIGHT' OR (lease_owner IS NOT NULL
                        AND lease_expires_at IS NOT NULL)) NOT VALID,
                ADD CONSTRAINT "{name}_failure_code_check"
                    CHECK (last_failure_code IS NULL
                        OR last_failure_code ~ '^[A-Z0-9_]{1,64}$') NOT VALID"""));
    out.add(
        fill(
            """
            -- An owner never changes (schema version 2).
            CREATE FUNCTION {guard}() RETURNS trigger
                LANGUAGE plpgsql AS
            $$
            BEGIN
                IF NEW.instance_key IS DISTINCT FROM OLD.instance_key THEN
                    RAISE EXCEPTION 'the instance key of an outbox row never changes (row %)', OLD.seq
                        USING ERRCODE = 'integrity_constraint_violation';
                END IF;
                RETURN NEW;
            END;
            $$"""));
    out.add(
        fill(
            """
            CREATE TRIGGER "{name}_instance_key_immutable"
                BEFORE UPDATE OF instance_key ON {table}
                FOR EACH ROW EXECUTE FUNCTION {guard}()"""));
    out.add(
        fill(
            """
            -- Wake the relay when rows commit (schema versions 3 and 5; off with
            -- outbox_relay.notify = 'off').
            CREATE FUNCTION {notify}() RETURNS trigger
                LANGUAGE plpgsql AS
            $$
            DECLARE
                key TEXT;
            BEGIN
                IF coalesce(current_setting('outbox_relay.notify', true), '') = 'off' THEN
                    RETURN NULL;
                END IF;
                FOR key IN SELECT DISTINCT instance_key FROM inserted_rows WHERE instance_key IS NOT NULL LOOP
                    PERFORM pg_notify('{channel}', key);
                END LOOP;
                RETURN NULL;
            END;
            $$"""));
    out.add(
        fill(
            """
            CREATE TRIGGER "{name}_notify_inserted"
                AFTER INSERT ON {table}
                REFERENCING NEW TABLE AS inserted_rows
                FOR EACH STATEMENT EXECUTE FUNCTION {notify}()"""));
    out.add(
        fill(
            """
            -- Room on each page for claims to be HOT updates (schema version 7); pages written
            -- from now on.
            ALTER TABLE {table} SET (fillfactor = 45)"""));
    out.add("COMMIT");
    out.add(
        """
        -- An index build CONCURRENTLY blocks no insert, and it waits for the transactions
        -- running when it starts: let it wait as long as they take.
        RESET lock_timeout""");
    out.add(
        """
        -- And build as long as it takes: a statement_timeout of the role's or the database's
        -- would cancel a build on a large table, leaving an INVALID index, at every run again.
        SET statement_timeout = 0""");
    out.add(
        fill(
            """
            -- The indexes, built while the application writes. A failed CONCURRENTLY build leaves
            -- an INVALID index: DROP INDEX CONCURRENTLY it and run the statement again.
            -- Claims and retention find a row by seq.
            CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "{name}_seq_key" ON {table} (seq)"""));
    out.add(
        fill(
            """
            -- Outcomes find a row by its id, as text; one row per id among the relay's rows.
            CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "{name}_message_id_key"
                ON {table} (({message_id}))
                WHERE instance_key IS NOT NULL"""));
    out.add(
        fill(
            """
            -- The rows awaiting delivery, by instance key in order (schema version 13, legacy
            -- rows left out).
            CREATE INDEX CONCURRENTLY IF NOT EXISTS "{name}_due_key_seq_idx"
                ON {table} (instance_key, seq)
                WHERE published_at IS NULL AND parked_at IS NULL AND instance_key IS NOT NULL"""));
    out.add(
        fill(
            """
            CREATE INDEX CONCURRENTLY IF NOT EXISTS "{name}_due_aggregate_idx"
                ON {table} (instance_key, {aggregate_id}, seq)
                WHERE published_at IS NULL AND parked_at IS NULL AND instance_key IS NOT NULL"""));
    out.add(
        fill(
            """
            CREATE INDEX CONCURRENTLY IF NOT EXISTS "{name}_settled_idx"
                ON {table} (instance_key, published_at)
                WHERE published_at IS NOT NULL"""));
    out.add(
        fill(
            """
            -- Parked rows by correlation id, its first 200 characters, in order (version 15).
            CREATE INDEX CONCURRENTLY IF NOT EXISTS "{name}_parked_cid_seq_idx"
                ON {table} (instance_key, left(correlation_id, 200), seq)
                WHERE parked_at IS NOT NULL"""));
    out.add(
        fill(
            """
            -- Version 12's, which version 15 replaces: built here so that the later versions'
            -- statements (schema-sql --after-version 10) find it and need not build it again,
            -- reading the whole table while inserts wait; version 15 then drops it.
            CREATE INDEX CONCURRENTLY IF NOT EXISTS "{name}_parked_cid_idx"
                ON {table} (instance_key, left(correlation_id, 200))
                WHERE parked_at IS NOT NULL"""));
    out.add(
        fill(
            """
            -- Parked rows by instance key in order, for the CLI's batches (schema version 14).
            CREATE INDEX CONCURRENTLY IF NOT EXISTS "{name}_parked_key_seq_idx"
                ON {table} (instance_key, seq)
                WHERE parked_at IS NOT NULL"""));
    // The published log of schema versions 9 and 10, exactly as the migrations create it.
    out.addAll(SchemaMigrator.plainStatements(PUBLISHED_LOG_MIGRATION, table));
    out.addAll(SchemaMigrator.plainStatements(PUBLISHED_LOG_HASH_INDEX_MIGRATION, table));
    return out;
  }

  /** The statements as one script, with a header saying what it does and how to run it. */
  public String script(String generatedBy) {
    StringBuilder out = new StringBuilder();
    out.append("-- outbox-relay: adopt the Debezium outbox table ")
        .append(table)
        .append(" for instance key ")
        .append(instanceKey.replaceAll("\\p{Cntrl}", "?"))
        .append(".\n-- Generated by: ")
        .append(generatedBy)
        .append(". Do not edit.\n")
        .append(
            """
            -- Changes no row and rewrites nothing: rows already there stay Debezium's (legacy rows
            -- without an instance key), rows inserted from the COMMIT on are the relay's. Run it
            -- with psql -v ON_ERROR_STOP=1 -f (the indexes are built CONCURRENTLY, outside a
            -- transaction), while Debezium still runs: docs/switching-from-debezium.md.
            """);
    for (String statement : statements()) {
      out.append('\n').append(statement).append(";\n");
    }
    return out.toString();
  }

  /**
   * The template with its placeholders filled in one pass, so that a value (the instance key may
   * hold braces) is never read as a placeholder itself.
   */
  private String fill(String template) {
    Map<String, String> values =
        Map.of(
            "{table}", table.qualified(),
            "{name}", table.name(),
            "{sequence}", table.qualifiedSeqSequence(),
            "{instance_key}", literal(instanceKey),
            "{guard}", table.qualifiedFunction(),
            "{notify}", table.qualifiedNotifyFunction(),
            "{channel}", table.notifyChannel(),
            "{message_id}", columns.asText(OutboxColumns.Row.MESSAGE_ID, null),
            "{aggregate_id}", columns.quoted(OutboxColumns.Row.AGGREGATE_ID, null));
    Matcher placeholder = PLACEHOLDER.matcher(template);
    StringBuilder out = new StringBuilder();
    while (placeholder.find()) {
      String value = values.getOrDefault(placeholder.group(), placeholder.group());
      placeholder.appendReplacement(out, Matcher.quoteReplacement(value));
    }
    return placeholder.appendTail(out).toString();
  }

  private String column(String name) {
    return table.qualified() + "." + name;
  }

  /**
   * A string constant that reads the same whatever {@code standard_conforming_strings} is: with a
   * backslash, an escape string constant ({@code E'...'}) with the backslash doubled.
   */
  private static String literal(String value) {
    String quoted = value.replace("'", "''");
    return value.indexOf('\\') < 0 ? "'" + quoted + "'" : "E'" + quoted.replace("\\", "\\\\") + "'";
  }

  private static String quote(String identifier) {
    return '"' + identifier.replace("\"", "\"\"") + '"';
  }
}
