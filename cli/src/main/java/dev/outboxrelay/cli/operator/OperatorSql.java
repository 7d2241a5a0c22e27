package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.postgres.OutboxTable;
import java.util.EnumMap;
import java.util.Map;

/**
 * Every statement the operator commands run, in one place. The table name is the validated, quoted
 * identifier of {@link OutboxTable}; everything else is a bind parameter. Every statement is bound
 * to one instance key ({@code instance_key = ?}), so rows of other keys and legacy rows without a
 * key are never read or changed. "Now" is the database's clock.
 *
 * <p>Requeue is the operator's only write besides the relay's own retention delete, and it follows
 * the store's fencing rule: it applies only to rows that are still parked (FAILED or EXHAUSTED)
 * under this instance key when its statement runs, so a row that changed meanwhile is left alone.
 * It bumps the lease token, so an outcome from any earlier claim of the row can never apply.
 * Requeues by correlation id or of all parked rows run in bounded batches, one transaction each, so
 * that a large parked set never becomes one long transaction.
 */
final class OperatorSql {
  private static final String PARKED = "('FAILED', 'EXHAUSTED')";

  /** A row's relay state and routing fields; never its payload or headers. */
  private static final String ROW_COLUMNS =
      "seq, message_id, instance_key, status, aggregate_type, aggregate_id, event_type, topic,"
          + " correlation_id, created_at, deliver_before, attempts, abandoned_claims, isolated,"
          + " next_attempt_at, lease_owner, lease_token, lease_expires_at, last_failure_code,"
          + " published_at, kafka_topic, kafka_partition, kafka_offset,"
          + " octet_length(payload) AS payload_bytes";

  private static final String AGE_MILLIS =
      "GREATEST(0, EXTRACT(EPOCH FROM (statement_timestamp() - created_at)) * 1000)::bigint";

  final String oldestWithStatus;
  final String list;
  final String inspect;
  final String inspectWithPayload;
  final String requeueMessageIds;
  final String lastSeq;
  final Map<RequeueRequest.Selector, String> requeueBatch =
      new EnumMap<>(RequeueRequest.Selector.class);
  final Map<RequeueRequest.Selector, String> countRequeueable =
      new EnumMap<>(RequeueRequest.Selector.class);
  final String countPurgeable;
  final String tableExists;

  OperatorSql(OutboxTable table) {
    String t = table.qualified();

    // Parameters: key, status.
    oldestWithStatus =
        "SELECT message_id, last_failure_code, "
            + AGE_MILLIS
            + " AS age_ms FROM "
            + t
            + " WHERE instance_key = ? AND status = ? ORDER BY seq LIMIT 1";

    // Parameters: key, status, afterSeq, limit.
    list =
        "SELECT "
            + ROW_COLUMNS
            + " FROM "
            + t
            + " WHERE instance_key = ? AND status = ? AND seq > ? ORDER BY seq LIMIT ?";

    // Parameters: key, messageId.
    inspect = "SELECT " + ROW_COLUMNS + " FROM " + t + " WHERE instance_key = ? AND message_id = ?";
    inspectWithPayload =
        "SELECT "
            + ROW_COLUMNS
            + ", payload, headers::text AS headers FROM "
            + t
            + " WHERE instance_key = ? AND message_id = ?";

    String requeueSet =
        "UPDATE "
            + t
            + " SET status = 'PENDING', attempts = 0, next_attempt_at = NULL,"
            + " last_failure_code = NULL, isolated = FALSE, lease_owner = NULL,"
            + " lease_expires_at = NULL, lease_token = lease_token + 1,"
            // Back among the rows awaiting delivery (schema version 7: parked_at is in the due
            // indexes' predicate).
            + " parked_at = NULL";
    // Parameters: key, statuses[], then the selector's own.
    String parkedOfKey =
        " WHERE instance_key = ? AND status IN " + PARKED + " AND status = ANY (CAST(? AS text[]))";
    for (RequeueRequest.Selector selector : RequeueRequest.Selector.values()) {
      String where = parkedOfKey + selectorCondition(selector);
      countRequeueable.put(selector, "SELECT count(*) FROM " + t + where);
      if (selector != RequeueRequest.Selector.MESSAGE_IDS) { // see requeueMessageIds
        // One batch, in insertion order, of the rows between a cursor and the last seq when the
        // requeue began (rows parked later are left for the next requeue, so a row that fails
        // again at once cannot keep the loop going). The UPDATE repeats the selection, so a row
        // that changed since the batch was picked is left alone. Returns the batch's last seq
        // (the next cursor; null when no row is left) and how many rows were requeued.
        // Parameters: the selection's, afterSeq, upToSeq, limit, the selection's again.
        requeueBatch.put(
            selector,
            "WITH picked AS (SELECT seq FROM "
                + t
                + where
                + " AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?),"
                + " requeued AS ("
                + requeueSet
                + where
                + " AND seq IN (SELECT seq FROM picked) RETURNING 1)"
                + " SELECT (SELECT max(seq) FROM picked) AS last_seq,"
                + " (SELECT count(*) FROM requeued) AS requeued");
      }
    }

    // Requeue by message id, and the reason for every requested id that was not requeued, in one
    // statement and so one snapshot. Parameters: ids[], key, statuses[], key. The outer SELECT sees
    // the rows as they were before the UPDATE.
    requeueMessageIds =
        "WITH requested AS (SELECT r.message_id, r.n"
            + " FROM unnest(CAST(? AS text[])) WITH ORDINALITY AS r(message_id, n)),"
            + " requeued AS ("
            + requeueSet
            + parkedOfKey
            + " AND message_id IN (SELECT message_id FROM requested) RETURNING message_id)"
            + " SELECT r.message_id, q.message_id IS NOT NULL AS requeued,"
            + " COALESCE(o.instance_key = ?, FALSE) AS own, o.status"
            + " FROM requested r LEFT JOIN requeued q ON q.message_id = r.message_id"
            + " LEFT JOIN "
            + t
            + " o ON o.message_id = r.message_id ORDER BY r.n";

    // Parameters: key, cutoff. The same rows PostgresOutboxStore.deletePublished removes.
    countPurgeable =
        "SELECT count(*) FROM "
            + t
            + " WHERE instance_key = ? AND status = 'PUBLISHED' AND published_at < ?";

    lastSeq = "SELECT COALESCE(max(seq), 0) FROM " + t;

    // Parameter: the quoted table name, as a value (to_regclass parses it).
    tableExists = "SELECT to_regclass(?) IS NOT NULL";
  }

  private static String selectorCondition(RequeueRequest.Selector selector) {
    return switch (selector) {
      case MESSAGE_IDS -> " AND message_id = ANY (CAST(? AS text[]))";
      case CORRELATION_ID -> " AND correlation_id = ?";
      case ALL -> "";
    };
  }
}
