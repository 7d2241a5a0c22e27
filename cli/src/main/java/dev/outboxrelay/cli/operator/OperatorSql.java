package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.NamedSql;
import dev.outboxrelay.store.postgres.OutboxColumns.Row;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Every statement the operator commands run, in one place, each written out whole with named
 * parameters ({@link NamedSql}) that {@link OperatorStore} binds by name. Placeholders in braces
 * are filled in once, when the statements are built: {@code {table}} with the validated, quoted
 * identifier of {@link OutboxTable}, {@code {published}} with its published log's, the others with
 * the fragments below; the columns a row is read by are the connector's ({@link Row}). Everything
 * else is a bind parameter. Every statement is bound to one instance key ({@code instance_key =
 * :instance_key}), so rows of other keys and legacy rows without a key are never changed or
 * counted, and read only to tell a requeue by message id that an id is not the key's. "Now" is the
 * database's clock: a write's statement time, and for the reads of status (expired leases, the
 * oldest rows' ages) the transaction's start, so that in status's one snapshot each figure is
 * judged at one instant, however long an earlier statement (a count) took.
 *
 * <p>Published rows are in two places (schema version 9): publishing moves a row out of the table
 * into the published log ({@link OutboxTable#qualifiedPublishedLog()}), a narrow row that is always
 * PUBLISHED; rows published before version 9 stay in the table, status PUBLISHED, until retention
 * deletes them. Whatever reads, counts or finds published rows reads both; a log entry is read
 * under the row's labels, the columns the log does not keep being null ({@link #logRow}).
 *
 * <p>Requeue, discard and park are the operator's only writes besides the relay's own retention
 * delete, and they follow the store's fencing rule: requeue and discard apply only to rows that are
 * still parked (FAILED or EXHAUSTED) under this instance key when the statement runs, park only to
 * rows still awaiting delivery, so a row that changed meanwhile is left alone. A requeue bumps the
 * lease token, a park too, and a discard deletes the row, so an outcome from any earlier claim of
 * the row can never apply. Requeue and discard, by correlation id or of all parked rows, run in
 * bounded batches, one transaction each, so that a large parked set never becomes one long
 * transaction.
 */
final class OperatorSql {
  private static final Pattern PLACEHOLDER = Pattern.compile("\\{[^}]*}");

  /** The label the payload's size is read by, in place of the payload. */
  static final String PAYLOAD_BYTES = "payload_bytes";

  /** {@code {row}}: a row's relay state and routing fields, and its payload's size. */
  private static String row(ColumnMapping columns, boolean payloadIsBytea) {
    return columns.select(null, Row.STATE) + ", " + payloadBytes(columns, payloadIsBytea);
  }

  /** {@code {row with content}}: the same, and the payload and the headers (as text). */
  private static String rowWithContent(ColumnMapping columns, boolean payloadIsBytea) {
    return columns.select(null, List.of(Row.values()))
        + ", "
        + payloadBytes(columns, payloadIsBytea);
  }

  /** The payload's size: its bytes (bytea), or its text's (jsonb, json, text, varchar). */
  private static String payloadBytes(ColumnMapping columns, boolean payloadIsBytea) {
    return "octet_length("
        + columns.quoted(Row.PAYLOAD, null)
        + (payloadIsBytea ? "" : "::text")
        + ") AS "
        + PAYLOAD_BYTES;
  }

  /**
   * {@code {log row}} and {@code {log row with content}}: a published log entry read as {@code
   * {row}} and {@code {row with content}} read a row of the table, the same labels in the same
   * order (so that the two are one UNION): its own columns as they are, PUBLISHED, and null for
   * what the log does not keep (no lease, no retry, not parked, no payload or headers: they are in
   * Kafka).
   */
  private static String logRow(boolean withContent) {
    StringBuilder out = new StringBuilder();
    for (Row field : withContent ? List.of(Row.values()) : Row.STATE) {
      out.append(out.length() == 0 ? "" : ", ")
          .append(logColumn(field))
          .append(" AS ")
          .append(field.label);
    }
    return out.append(", CAST(NULL AS integer) AS ").append(PAYLOAD_BYTES).toString();
  }

  /** The published log's value of {@code field} (schema version 9's columns). */
  private static String logColumn(Row field) {
    return switch (field) {
      case SEQ,
          MESSAGE_ID,
          INSTANCE_KEY,
          AGGREGATE_TYPE,
          AGGREGATE_ID,
          EVENT_TYPE,
          CORRELATION_ID,
          CREATED_AT,
          ATTEMPTS,
          ABANDONED_CLAIMS,
          LEASE_TOKEN,
          LAST_FAILURE_CODE,
          PUBLISHED_AT,
          KAFKA_TOPIC,
          KAFKA_PARTITION,
          KAFKA_OFFSET ->
          field.label;
      case STATUS -> "CAST('PUBLISHED' AS text)";
      case ISOLATED -> "FALSE";
      case TOPIC, LEASE_OWNER -> "CAST(NULL AS text)";
      case DELIVER_BEFORE, NEXT_ATTEMPT_AT, LEASE_EXPIRES_AT, PARKED_AT ->
          "CAST(NULL AS timestamptz)";
      case LEASE_EPOCH, CLAIM_BATCH -> "CAST(NULL AS bigint)";
      // The table's own type, whatever it is (bytea, or a Debezium table's jsonb): the UNION
      // gives an untyped NULL the other branch's type.
      case PAYLOAD, HEADERS -> "NULL";
    };
  }

  /** {@code {oldest}}: what status shows of the oldest row with a status. */
  private static String oldest(ColumnMapping columns) {
    return columns.select(null, List.of(Row.MESSAGE_ID, Row.LAST_FAILURE_CODE));
  }

  /**
   * {@code {requeue}}: back to PENDING and due now, with a fresh attempt budget, no failure code,
   * no dead-letter position, not isolated, no lease, and a bumped lease token; and back among the
   * rows awaiting delivery (schema version 7: parked_at is in the due indexes' predicate).
   */
  private static final String REQUEUE =
      """
      UPDATE {table}
        SET status = 'PENDING', attempts = 0, next_attempt_at = NULL,
          last_failure_code = NULL, isolated = FALSE, lease_owner = NULL,
          lease_expires_at = NULL, lease_token = lease_token + 1,
          parked_at = NULL, kafka_topic = NULL, kafka_partition = NULL, kafka_offset = NULL""";

  /**
   * {@code {awaiting of key}}: rows of the key awaiting delivery, with a chosen status; never one
   * in flight under an exactly-once claim (a lease epoch): Kafka may have committed its record
   * without the table knowing yet (the next start's recovery records it from the committed offsets,
   * which it cannot do for a parked row), and a requeue would then send it twice.
   */
  private static final String AWAITING_OF_KEY =
      """
      WHERE instance_key = :instance_key AND published_at IS NULL AND parked_at IS NULL
          AND status = ANY (CAST(:statuses AS text[]))
          AND (status <> 'IN_FLIGHT' OR lease_epoch IS NULL)""";

  /** {@code {discard}}: the row is deleted, never relayed (nor in the published log). */
  private static final String DISCARD = "DELETE FROM {table}";

  /**
   * {@code {parked of key}}: rows still parked under the key, with a chosen status; if asked, only
   * those whose dead-letter record Kafka confirmed (the relay records its position in the row's
   * Kafka columns, which a parked row has no other use for).
   */
  private static final String PARKED_OF_KEY =
      """
      WHERE instance_key = :instance_key AND status IN ('FAILED', 'EXHAUSTED')
          AND status = ANY (CAST(:statuses AS text[]))
          AND (NOT CAST(:dead_lettered_only AS boolean)
            OR (status = 'FAILED' AND kafka_offset IS NOT NULL))""";

  /**
   * The predicate of the indexes of parked rows (schema versions 14 and 15), spelled as it is so
   * that the planner can use that index for a requeue by correlation id or of all parked rows. Not
   * for a requeue by message id, which finds its rows by their id: a row parked by a relay older
   * than schema version 7 after the table was migrated has no parked_at, and a requeue by its
   * message id still reaches it.
   */
  private static final String PARKED_INDEX = "\n    AND parked_at IS NOT NULL";

  /**
   * {@code {the key}}: the row is of the key {@code :instance_key}, spelled as a range, in
   * statements ordered by {@code instance_key, seq}. An equality makes the key a constant, reducing
   * the order to seq, which the primary key also gives: after an incident (the newest rows of a key
   * parked), PostgreSQL took the parked rows to be spread evenly in seq order and walked the
   * primary key from the start, past every older row, for the first of them (the relay's claims
   * spell their keys so for the same reason, OutboxSql's {own key(o)}).
   */
  private static final String THE_KEY =
      "instance_key >= :instance_key AND instance_key <= :instance_key";

  /**
   * {@code {deadline passed}}: the row's deliver_before has passed by the database clock, as the
   * relay judges it when it claims the row (it then records the row FAILED, DEADLINE_EXPIRED,
   * again): a requeue reports how many of its rows are such.
   */
  private static final String DEADLINE_PASSED =
      "COALESCE(deliver_before <= statement_timestamp(), FALSE)";

  /**
   * {@code {key rows}}: how many rows of the key hold the requested id {@code r.message_id} in the
   * message id column. One at most where that column identifies a row: the relay's message_id is
   * unique, and so is an adopted table's id among the rows of an instance key (the unique index
   * adopt-debezium-table builds). More when --column-message-id names a column that rows share (an
   * aggregate id): a change of that one "message" would change each of them, so the store refuses
   * it ({@link MessageIdNotUniqueException}). In a change's statement it counts as the statement's
   * snapshot has them, before the change.
   */
  private static final String KEY_ROWS =
      """
      (SELECT count(*) FROM {table} o
        WHERE {message_id(o)} = r.message_id AND o.instance_key = :instance_key)""";

  final NamedSql oldestWithStatus;

  /** A page of rows with one status, by seq: one statement per kind of status. */
  final Map<MessageStatus, NamedSql> list = new EnumMap<>(MessageStatus.class);

  final NamedSql inspect;
  final NamedSql inspectWithPayload;

  /** See {@code changeMessageIds}: {@code {change}} is the action's UPDATE or DELETE head. */
  private static final String CHANGE_MESSAGE_IDS =
      """
      WITH requested AS (
        SELECT r.message_id, r.n
        FROM unnest(CAST(:message_ids AS text[])) WITH ORDINALITY AS r(message_id, n)
      ), {changed}
      SELECT r.message_id, q.message_id IS NOT NULL AS changed,
        COALESCE(q.deadline_passed, FALSE) AS deadline_passed,
        COALESCE(q.in_flight, FALSE) AS in_flight,
        COALESCE(q.live_lease, FALSE) AS live_lease,
        COALESCE(k.instance_key = :instance_key, FALSE)
          OR COALESCE(l.instance_key = :instance_key, FALSE) AS own,
        -- The key's own row first (a legacy row may share the id), the table's before the log's.
        CASE WHEN k.instance_key = :instance_key THEN k.status
          WHEN l.instance_key = :instance_key THEN l.status
          ELSE COALESCE(k.status, g.status, l.status) END AS status,
        COALESCE(k.instance_key = :instance_key AND k.exactly_once, FALSE) AS exactly_once,
        {key rows} AS key_rows
      FROM requested r
        LEFT JOIN changed q ON q.message_id = r.message_id
        LEFT JOIN LATERAL (
          -- A row of an instance key, the key's own first: one per id among them, found by the
          -- message id index (on an adopted table it indexes these rows only).
          SELECT o.status, o.instance_key, o.lease_epoch IS NOT NULL AS exactly_once
          FROM {table} o
          WHERE {message_id(o)} = r.message_id AND o.instance_key IS NOT NULL
          ORDER BY o.instance_key = :instance_key DESC LIMIT 1
        ) k ON TRUE
        LEFT JOIN LATERAL (
          SELECT p.instance_key, 'PUBLISHED' AS status
          FROM {published} p
          WHERE p.message_id = r.message_id
          ORDER BY p.instance_key = :instance_key DESC LIMIT 1
        ) l ON TRUE
        LEFT JOIN LATERAL (
          -- A legacy row (no instance key: an adopted Debezium table's), only for an id neither a
          -- row of an instance key nor the published log has (a mistyped one): no index serves it
          -- on an adopted table, and a scan of Debezium's history per id would hold the changed
          -- rows' locks.
          SELECT o.status
          FROM {table} o
          WHERE k.status IS NULL AND l.status IS NULL
            AND {message_id(o)} = r.message_id AND o.instance_key IS NULL
          LIMIT 1
        ) g ON TRUE
      ORDER BY r.n""";

  /**
   * {@code {changed}} of a requeue or discard by message id: the requested rows still parked under
   * the key, changed; each with whether its deliver_before has passed. Found by their ids, then
   * changed by the primary key, in seq order, as a batched change, a park and the relay's
   * dead-letter positions take parked rows' locks: changed in the order of the message id index,
   * two changes of the same rows could each hold a lock the other waits for (a deadlock, one of
   * them failed). The selection is repeated as a sub-SELECT, so a row that changed meanwhile is
   * left alone, as a batched change repeats it.
   */
  private static final String CHANGED_PARKED =
      """
      changed AS (
        {change}
        WHERE seq = ANY (ARRAY(
            SELECT seq FROM {table}
            {parked of key}
              AND {message_id} IN (SELECT message_id FROM requested)
            ORDER BY seq))
          AND (SELECT TRUE {parked of key})
        RETURNING {message_id} AS message_id, {deadline passed} AS deadline_passed,
          FALSE AS in_flight, FALSE AS live_lease
      )""";

  /**
   * {@code {changed}} of a park: the requested rows awaiting delivery under the key, FAILED by the
   * operator's hand (PARKED_BY_OPERATOR), parked as the relay parks a poison row, out of the rows
   * awaiting delivery, so that requeue and discard take it; its lease ended and its token bumped,
   * so an outcome from any claim of it can never apply. Locked first so that each is reported with
   * the status it had when parked. (An UPDATE's RETURNING sees only the new row, and the
   * statement's snapshot may predate a claim that the UPDATE then finds: a row PENDING in the
   * snapshot can be parked IN_FLIGHT, its record perhaps in Kafka.) Locked rows cannot change
   * before the UPDATE, which needs no second look at them. parked_at is the time of the write,
   * after any wait for a lock (not the statement's start): a batched requeue or discard that began
   * meanwhile takes only rows parked before it began, and this one is not. Locked in seq order: two
   * parks of overlapping rows wait for each other rather than deadlock, and so do a park and a
   * relay statement that takes its rows in seq order (a claim; a renewal or publish whose plan
   * reads them by the primary key in order). A row in flight is told live (its lease not expired
   * when locked: a running task holds it, and its outcome write will count as a lost claim) from
   * one a stopped or failed task left.
   */
  private static final String PARKED_AWAITING =
      """
      locked AS (
        SELECT seq, status = 'IN_FLIGHT' AS in_flight,
          status = 'IN_FLIGHT' AND lease_expires_at > clock_timestamp() AS live_lease
        FROM {table}
        {awaiting of key}
          AND {message_id} IN (SELECT message_id FROM requested)
        ORDER BY seq
        FOR UPDATE
      ), changed AS (
        UPDATE {table} AS t
          SET status = 'FAILED', last_failure_code = 'PARKED_BY_OPERATOR',
            parked_at = clock_timestamp(), next_attempt_at = NULL, isolated = FALSE,
            kafka_topic = NULL, kafka_partition = NULL, kafka_offset = NULL,
            lease_owner = NULL, lease_expires_at = NULL, lease_token = t.lease_token + 1
        FROM locked l
        WHERE t.seq = l.seq
        RETURNING {message_id} AS message_id, FALSE AS deadline_passed, l.in_flight,
          l.live_lease
      )""";

  /**
   * As {@link #PARKED_AWAITING}, only read: the rows a park would change, neither locked nor
   * changed.
   */
  private static final String PARKED_AWAITING_DRY_RUN =
      """
      changed AS (
        SELECT {message_id} AS message_id, FALSE AS deadline_passed,
          status = 'IN_FLIGHT' AS in_flight,
          status = 'IN_FLIGHT' AND lease_expires_at > statement_timestamp() AS live_lease
        FROM {table}
        {awaiting of key}
          AND {message_id} IN (SELECT message_id FROM requested)
      )""";

  final Map<ParkedAction, NamedSql> changeMessageIds = new EnumMap<>(ParkedAction.class);
  final NamedSql park;
  final NamedSql parkDryRun;
  final NamedSql sharedMessageId;
  final NamedSql limitLockWaits;
  final NamedSql lastSeq;
  final NamedSql countExpiredLeases;
  final Map<ParkedAction, Map<ParkedSelection.Selector, NamedSql>> changeBatch =
      new EnumMap<>(ParkedAction.class);
  final Map<ParkedSelection.Selector, NamedSql> countParked =
      new EnumMap<>(ParkedSelection.Selector.class);
  final NamedSql countPurgeable;
  final NamedSql hasPurgeable;
  final NamedSql tableExists;

  private final Map<String, String> fragments = new LinkedHashMap<>();

  OperatorSql(OutboxTable table) {
    this(table, ColumnMapping.RELAY, true);
  }

  /**
   * The statements for a table whose message fields are in the {@code columns} named there (an
   * adopted Debezium table): read under the relay's labels, a row found by {@code {message_id}}.
   *
   * @param payloadIsBytea the payload column's type is bytea (the relay's own), not a text-like one
   *     (a Debezium table's jsonb)
   */
  OperatorSql(OutboxTable table, ColumnMapping columns, boolean payloadIsBytea) {
    fragments.put("{requeue}", REQUEUE);
    fragments.put("{discard}", DISCARD);
    fragments.put("{the key}", THE_KEY);
    fragments.put("{parked of key}", PARKED_OF_KEY);
    fragments.put("{awaiting of key}", AWAITING_OF_KEY);
    fragments.put("{deadline passed}", DEADLINE_PASSED);
    fragments.put("{key rows}", KEY_ROWS);
    fragments.put("{row}", row(columns, payloadIsBytea));
    fragments.put("{row with content}", rowWithContent(columns, payloadIsBytea));
    fragments.put("{log row}", logRow(false));
    fragments.put("{log row with content}", logRow(true));
    fragments.put("{oldest}", oldest(columns));
    fragments.put("{message_id}", columns.asText(Row.MESSAGE_ID, null));
    fragments.put("{message_id(o)}", columns.asText(Row.MESSAGE_ID, "o"));
    fragments.put("{table}", table.qualified());
    fragments.put("{published}", table.qualifiedPublishedLog());

    // Only for the parked statuses: status asks for FAILED and EXHAUSTED. Read through the index
    // of parked rows: without it, the key's whole backlog was walked in seq order (the whole table
    // when none is parked), slowest after an incident. The age is by the transaction's start, as
    // status's other figures (its lag binds that instant): status reads them all in one snapshot,
    // after a count that may take minutes. None for a created_at an application set to +/-infinity
    // (the subtraction failed, and status with it, while such a row was the oldest).
    oldestWithStatus =
        statement(
            """
            SELECT {oldest},
              CASE WHEN isfinite(created_at) THEN
                GREATEST(0, EXTRACT(EPOCH FROM (transaction_timestamp() - created_at)) * 1000)::bigint
              END AS age_ms
            FROM {table}
            WHERE {the key} AND status = :status"""
                + PARKED_INDEX
                + "\nORDER BY instance_key, seq LIMIT 1");

    // One statement per kind of status, each spelling the predicate of the index that holds its
    // rows. Parked ones through the index of parked rows (the key's parked rows, sorted): without
    // it a page walked the table in seq order past every row of the key, the whole table when none
    // was parked, and timed out on a backlog of millions. Rows awaiting delivery may be read
    // through the (instance_key, seq) due index (no index holds a status: a page of a rare one
    // reads the key's rows awaiting delivery). PUBLISHED rows from the published log, and those
    // published before schema version 9, still in the table; the log has no index by seq: a page
    // of PUBLISHED rows reads the key's entries in the log.
    String listTable =
        """
        SELECT {row}
        FROM {table}
        WHERE {the key} AND status = :status AND seq > :after_seq""";
    NamedSql listAwaiting =
        statement(
            listTable
                + "\n    AND published_at IS NULL AND parked_at IS NULL"
                + "\nORDER BY instance_key, seq LIMIT :limit");
    NamedSql listParked =
        statement(listTable + PARKED_INDEX + "\nORDER BY instance_key, seq LIMIT :limit");
    NamedSql listPublished =
        statement(
            "SELECT * FROM (\n"
                + listTable
                + "\n    AND published_at IS NOT NULL"
                + """

                UNION ALL
                SELECT {log row}
                FROM {published}
                WHERE instance_key = :instance_key AND seq > :after_seq
                ) r
                ORDER BY seq LIMIT :limit""");
    for (MessageStatus status : MessageStatus.values()) {
      list.put(
          status,
          switch (status) {
            case PENDING, AMBIGUOUS, IN_FLIGHT -> listAwaiting;
            case FAILED, EXHAUSTED -> listParked;
            case PUBLISHED -> listPublished;
          });
    }

    // The row with this id in the table, else its entry in the published log (the latest, should
    // a message id have been published twice). The table's row comes first: a message id is in
    // both only when a retried insert raced its publish, and the row in the table is the one that
    // is still to be delivered or acted on.
    String inspectRow =
        """
        SELECT * FROM (
          SELECT {columns}, 0 AS place
          FROM {table}
          WHERE instance_key = :instance_key AND {message_id} = :message_id
          UNION ALL
          SELECT {log columns}, 1 AS place
          FROM {published}
          WHERE instance_key = :instance_key AND message_id = :message_id
        ) r
        ORDER BY place, published_at DESC LIMIT 1""";
    inspect =
        statement(inspectRow.replace("{columns}", "{row}").replace("{log columns}", "{log row}"));
    inspectWithPayload =
        statement(
            inspectRow
                .replace("{columns}", "{row with content}")
                .replace("{log columns}", "{log row with content}"));

    for (ParkedSelection.Selector selector : ParkedSelection.Selector.values()) {
      String selection =
          "{parked of key}"
              + (selector == ParkedSelection.Selector.MESSAGE_IDS ? "" : PARKED_INDEX)
              + selectorCondition(selector);
      countParked.put(
          selector,
          statement(
              """
              SELECT count(*) AS changed,
                count(*) FILTER (WHERE {deadline passed}) AS deadline_passed
              FROM {table}
              {selection}"""
                  .replace("{selection}", selection)));
      if (selector == ParkedSelection.Selector.MESSAGE_IDS) {
        continue; // one statement, see changeMessageIds
      }
      for (ParkedAction action : ParkedAction.values()) {
        // One batch, in insertion order, of the rows between a cursor and the last seq when the
        // change began, parked by then (rows parked later are left for the next run, so a row
        // that fails again at once cannot keep a requeue going, and a discard deletes no row whose
        // park began after it began, by parked_at, the park statement's start: an earlier row in
        // flight then is as new as a later one).
        // The UPDATE or DELETE finds the picked rows by the primary key (joined to the
        // selection instead, it read every parked row of the key per batch) and repeats the
        // selection, so a row that changed since the batch was picked is left alone. The repeat
        // is a sub-SELECT, a filter the planner cannot search by: as a plain condition, up to
        // PostgreSQL 16 it searched the index of parked rows by it (estimated at one row) and read
        // every parked row of the correlation id per batch (RequeuePlanTest, on 13). Returns the
        // batch's last seq (the next cursor; null when no row is left), how many rows were
        // changed and how many of those have a deliver_before that has passed.
        changeBatch
            .computeIfAbsent(action, a -> new EnumMap<>(ParkedSelection.Selector.class))
            .put(
                selector,
                statement(
                    """
                    WITH picked AS (
                      SELECT seq FROM {table}
                      {selection}
                        AND seq > :after_seq AND seq <= :up_to_seq
                        AND parked_at <= CAST(:parked_by AS timestamptz)
                      ORDER BY seq LIMIT :limit
                    ), changed AS (
                      {change}
                      WHERE seq = ANY (ARRAY(SELECT seq FROM picked))
                        AND (SELECT TRUE {selection}
                          AND parked_at <= CAST(:parked_by AS timestamptz))
                      RETURNING {deadline passed} AS deadline_passed
                    )
                    SELECT (SELECT max(seq) FROM picked) AS last_seq,
                      (SELECT count(*) FROM changed) AS changed,
                      (SELECT count(*) FROM changed WHERE deadline_passed) AS deadline_passed"""
                        .replace("{change}", change(action))
                        .replace("{selection}", selection)));
      }
    }

    // Requeue or discard by message id, and the reason for every requested id that was left alone,
    // in one statement and so one snapshot. The outer SELECT sees the rows as they were before the
    // UPDATE or DELETE. An id not in the table may be in the published log: PUBLISHED
    // (NOT_PARKED) if it is the key's, another instance's otherwise.
    for (ParkedAction action : ParkedAction.values()) {
      changeMessageIds.put(
          action,
          statement(
              CHANGE_MESSAGE_IDS
                  .replace("{changed}", CHANGED_PARKED)
                  .replace("{change}", change(action))));
    }

    // Park by message id, as a requeue by message id, from the rows awaiting delivery instead.
    park = statement(CHANGE_MESSAGE_IDS.replace("{changed}", PARKED_AWAITING));
    parkDryRun = statement(CHANGE_MESSAGE_IDS.replace("{changed}", PARKED_AWAITING_DRY_RUN));

    // The first requested id that several rows of the key hold, if any: for the dry run of a
    // requeue or discard by message id, which only counts (the changes check each id themselves).
    sharedMessageId =
        statement(
            """
            SELECT message_id, key_rows FROM (
              SELECT r.message_id, r.n, {key rows} AS key_rows
              FROM unnest(CAST(:message_ids AS text[])) WITH ORDINALITY AS r(message_id, n)
            ) s
            WHERE key_rows > 1
            ORDER BY n LIMIT 1""");

    // lock_timeout for the change's own transaction: a session's SET would outlive the command on
    // a pooler's server connection (PgBouncer, transaction mode), there for the application.
    limitLockWaits = statement("SELECT set_config('lock_timeout', :lock_timeout_ms, true)");

    // The same rows PostgresOutboxStore.deletePublished removes: entries of the published log,
    // and rows published before schema version 9, still in the table.
    // Counted up to :up_to of each: the rows a purge leaves may be most of a huge log.
    countPurgeable =
        statement(
            """
            SELECT (SELECT count(*) FROM (SELECT FROM {published}
                WHERE instance_key = :instance_key AND published_at < :published_before
                LIMIT :up_to) l)
              + (SELECT count(*) FROM (SELECT FROM {table}
                WHERE instance_key = :instance_key AND status = 'PUBLISHED'
                  AND published_at IS NOT NULL AND published_at < :published_before
                LIMIT :up_to) t)""");

    // Whether any row is left to purge: the first found, through the same indexes.
    hasPurgeable =
        statement(
            """
            SELECT EXISTS (SELECT 1 FROM {published}
                WHERE instance_key = :instance_key AND published_at < :published_before)
              OR EXISTS (SELECT 1 FROM {table}
                WHERE instance_key = :instance_key AND status = 'PUBLISHED'
                  AND published_at IS NOT NULL AND published_at < :published_before)""");

    // The key's last parked row when a batched requeue begins: its batches stop there. (Parked
    // rows only, which the index of parked rows serves: the selectors that batch read no other.)
    lastSeq =
        statement(
            "SELECT COALESCE(max(seq), 0) AS up_to_seq, statement_timestamp() AS began"
                + " FROM {table} WHERE instance_key = :instance_key AND parked_at IS NOT NULL");

    // IN_FLIGHT rows whose lease has expired (their claimer stopped renewing): the predicate of
    // the indexes of the rows awaiting delivery first, so that they can serve it. Expired by the
    // transaction's start, the instant of status's snapshot: by this statement's own time, after a
    // count of 90 s, every lease of 60 s that the snapshot holds would look expired.
    countExpiredLeases =
        statement(
            """
            SELECT count(*) FROM {table}
            WHERE instance_key = :instance_key
              AND published_at IS NULL AND parked_at IS NULL
              AND status = 'IN_FLIGHT' AND lease_expires_at <= transaction_timestamp()""");

    // The quoted table name, as a value: to_regclass parses it.
    tableExists = statement("SELECT to_regclass(:table_name) IS NOT NULL");
  }

  /** {@code {change}}: the action's UPDATE or DELETE, before its WHERE. */
  private static String change(ParkedAction action) {
    return switch (action) {
      case REQUEUE -> "{requeue}";
      case DISCARD -> "{discard}";
    };
  }

  /** The selector's own condition, after {@code {parked of key}}. */
  private static String selectorCondition(ParkedSelection.Selector selector) {
    return switch (selector) {
      case MESSAGE_IDS -> "\n    AND {message_id} = ANY (CAST(:message_ids AS text[]))";
      // The prefix first: the index of parked rows holds it (schema version 15), not the whole id.
      case CORRELATION_ID ->
          "\n    AND left(correlation_id, 200) = left(:correlation_id, 200)"
              + " AND correlation_id = :correlation_id";
      case ALL -> "";
    };
  }

  /** Fills the placeholders in (fragments first, as they hold placeholders of their own). */
  private NamedSql statement(String template) {
    String sql = template;
    for (Map.Entry<String, String> fragment : fragments.entrySet()) {
      sql = sql.replace(fragment.getKey(), fragment.getValue());
    }
    Matcher left = PLACEHOLDER.matcher(sql);
    if (left.find()) {
      throw new IllegalStateException("unknown placeholder " + left.group());
    }
    return NamedSql.parse(sql);
  }
}
