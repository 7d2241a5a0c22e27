package dev.outboxrelay.cli.command;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.cli.TextTable;
import dev.outboxrelay.cli.operator.RowView;
import dev.outboxrelay.mapping.StrictUtf8;
import dev.outboxrelay.store.postgres.OutboxColumns.Row;
import java.nio.charset.CharacterCodingException;
import java.time.Instant;
import java.util.Base64;
import java.util.List;

/** How rows are shown: one place, so list and inspect agree. Payloads only when asked for. */
final class Rows {
  /**
   * Reads a row's headers keeping each number as the row holds it ({@code 1.50}, a decimal of 34
   * digits), as the relay sends them (their text), not rounded to a double.
   */
  private static final ObjectReader EXACT_NUMBERS =
      Text.json()
          .reader()
          .with(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
          .without(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES);

  private Rows() {}

  static TextTable summaryTable(List<RowView> rows) {
    TextTable table =
        new TextTable(
            "SEQ",
            "MESSAGE ID",
            "ATTEMPTS",
            "REASON",
            "AGGREGATE",
            "EVENT TYPE",
            "CORRELATION ID",
            "CREATED AT");
    for (RowView row : rows) {
      table.row(
          row.seq(),
          Text.safe(row.messageId()),
          row.attempts(),
          Text.safe(row.lastFailureCode()),
          Text.safe(row.aggregateType()) + "/" + Text.safe(row.aggregateId()),
          Text.safe(row.eventType()),
          Text.safe(row.correlationId()),
          Text.instant(row.createdAt()));
    }
    return table;
  }

  /** One row, a line per field, each named as its column ({@code message_id}: "message id"). */
  static TextTable detailTable(RowView row) {
    TextTable table = TextTable.keyValue();
    table.row(name(Row.MESSAGE_ID), Text.safe(row.messageId()));
    table.row(name(Row.SEQ), row.seq());
    table.row(name(Row.INSTANCE_KEY), Text.safe(row.instanceKey()));
    table.row(name(Row.STATUS), row.status());
    table.row("aggregate", Text.safe(row.aggregateType()) + "/" + Text.safe(row.aggregateId()));
    table.row(name(Row.EVENT_TYPE), Text.safe(row.eventType()));
    table.row(name(Row.TOPIC), Text.safe(row.topic()));
    table.row(name(Row.CORRELATION_ID), Text.safe(row.correlationId()));
    table.row(name(Row.CREATED_AT), Text.instant(row.createdAt()));
    table.row(name(Row.DELIVER_BEFORE), Text.instant(row.deliverBefore()));
    table.row(name(Row.ATTEMPTS), row.attempts());
    table.row(name(Row.ABANDONED_CLAIMS), row.abandonedClaims());
    table.row(name(Row.ISOLATED), row.isolated());
    table.row(name(Row.NEXT_ATTEMPT_AT), Text.instant(row.nextAttemptAt()));
    table.row(name(Row.LAST_FAILURE_CODE), Text.safe(row.lastFailureCode()));
    table.row(name(Row.LEASE_OWNER), Text.safe(row.leaseOwner()));
    table.row(name(Row.LEASE_TOKEN), row.leaseToken());
    table.row(name(Row.LEASE_EXPIRES_AT), Text.instant(row.leaseExpiresAt()));
    table.row(name(Row.LEASE_EPOCH), row.leaseEpoch() == null ? "-" : row.leaseEpoch());
    table.row(name(Row.CLAIM_BATCH), row.claimBatch() == null ? "-" : row.claimBatch());
    table.row(name(Row.PUBLISHED_AT), Text.instant(row.publishedAt()));
    table.row(name(Row.PARKED_AT), Text.instant(row.parkedAt()));
    table.row(
        "kafka",
        row.kafkaTopic() == null
            ? "-"
            : Text.safe(row.kafkaTopic()) + "-" + row.kafkaPartition() + "@" + row.kafkaOffset());
    table.row(
        "payload size", row.payloadBytes() == null ? "no payload" : row.payloadBytes() + " bytes");
    return table;
  }

  /** One row as JSON, each field named by its column; the payload and headers only when asked. */
  static ObjectNode json(RowView row, boolean withPayload) {
    ObjectNode node = Text.json().createObjectNode();
    node.put(Row.SEQ.label, row.seq());
    node.put(Row.MESSAGE_ID.label, row.messageId());
    node.put(Row.INSTANCE_KEY.label, row.instanceKey());
    node.put(Row.STATUS.label, row.status().name());
    node.put(Row.AGGREGATE_TYPE.label, row.aggregateType());
    node.put(Row.AGGREGATE_ID.label, row.aggregateId());
    node.put(Row.EVENT_TYPE.label, row.eventType());
    node.put(Row.TOPIC.label, row.topic());
    node.put(Row.CORRELATION_ID.label, row.correlationId());
    node.put(Row.CREATED_AT.label, iso(row.createdAt()));
    node.put(Row.DELIVER_BEFORE.label, iso(row.deliverBefore()));
    node.put(Row.ATTEMPTS.label, row.attempts());
    node.put(Row.ABANDONED_CLAIMS.label, row.abandonedClaims());
    node.put(Row.ISOLATED.label, row.isolated());
    node.put(Row.NEXT_ATTEMPT_AT.label, iso(row.nextAttemptAt()));
    node.put(Row.LAST_FAILURE_CODE.label, row.lastFailureCode());
    node.put(Row.LEASE_OWNER.label, row.leaseOwner());
    node.put(Row.LEASE_TOKEN.label, row.leaseToken());
    node.put(Row.LEASE_EXPIRES_AT.label, iso(row.leaseExpiresAt()));
    node.put(Row.LEASE_EPOCH.label, row.leaseEpoch());
    node.put(Row.CLAIM_BATCH.label, row.claimBatch());
    node.put(Row.PUBLISHED_AT.label, iso(row.publishedAt()));
    node.put(Row.PARKED_AT.label, iso(row.parkedAt()));
    node.put(Row.KAFKA_TOPIC.label, row.kafkaTopic());
    node.put(Row.KAFKA_PARTITION.label, row.kafkaPartition());
    node.put(Row.KAFKA_OFFSET.label, row.kafkaOffset());
    node.put("payload_bytes", row.payloadBytes());
    if (withPayload) {
      if (row.headersJson() == null) {
        node.putNull(Row.HEADERS.label);
      } else {
        try {
          node.set(Row.HEADERS.label, EXACT_NUMBERS.readTree(row.headersJson()));
        } catch (JsonProcessingException e) {
          node.put(
              Row.HEADERS.label, row.headersJson()); // jsonb always parses; kept as text otherwise
        }
      }
      String text = utf8OrNull(row.payload());
      if (row.payload() == null) {
        node.putNull("payload_utf8");
      } else if (text != null) {
        node.put("payload_utf8", text);
      } else {
        node.put("payload_base64", Base64.getEncoder().encodeToString(row.payload()));
      }
    }
    return node;
  }

  /** The payload and headers as text, for a human who asked for them with --payload. */
  static String payloadText(RowView row) {
    StringBuilder out = new StringBuilder();
    out.append("headers:")
        .append(row.headersJson() == null ? " none" : "\n" + Text.safeMultiline(row.headersJson()))
        .append('\n');
    if (row.payload() == null) {
      out.append("payload: none\n");
      return out.toString();
    }
    String text = utf8OrNull(row.payload());
    if (text != null) {
      out.append("payload (UTF-8):\n").append(Text.safeMultiline(text)).append('\n');
    } else {
      out.append("payload (base64, not UTF-8):\n")
          .append(Base64.getEncoder().encodeToString(row.payload()))
          .append('\n');
    }
    return out.toString();
  }

  private static String utf8OrNull(byte[] bytes) {
    if (bytes == null) {
      return null;
    }
    try {
      return StrictUtf8.decode(bytes);
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  /** The column's name as a detail line shows it: {@code message_id} is "message id". */
  private static String name(Row column) {
    return column.label.replace('_', ' ');
  }

  private static String iso(Instant instant) {
    return instant == null ? null : instant.toString();
  }
}
