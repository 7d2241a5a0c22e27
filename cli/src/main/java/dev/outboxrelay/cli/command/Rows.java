package dev.outboxrelay.cli.command;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.outboxrelay.cli.Text;
import dev.outboxrelay.cli.TextTable;
import dev.outboxrelay.cli.operator.RowView;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.List;

/** How rows are shown: one place, so list and inspect agree. Payloads only when asked for. */
final class Rows {
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

  static TextTable detailTable(RowView row) {
    TextTable table = TextTable.keyValue();
    table.row("message id", Text.safe(row.messageId()));
    table.row("seq", row.seq());
    table.row("instance key", Text.safe(row.instanceKey()));
    table.row("status", row.status());
    table.row("aggregate", Text.safe(row.aggregateType()) + "/" + Text.safe(row.aggregateId()));
    table.row("event type", Text.safe(row.eventType()));
    table.row("topic", Text.safe(row.topic()));
    table.row("correlation id", Text.safe(row.correlationId()));
    table.row("created at", Text.instant(row.createdAt()));
    table.row("deliver before", Text.instant(row.deliverBefore()));
    table.row("attempts", row.attempts());
    table.row("abandoned claims", row.abandonedClaims());
    table.row("isolated", row.isolated());
    table.row("next attempt at", Text.instant(row.nextAttemptAt()));
    table.row("last failure code", Text.safe(row.lastFailureCode()));
    table.row("lease owner", Text.safe(row.leaseOwner()));
    table.row("lease token", row.leaseToken());
    table.row("lease expires at", Text.instant(row.leaseExpiresAt()));
    table.row("published at", Text.instant(row.publishedAt()));
    table.row(
        "kafka",
        row.kafkaTopic() == null
            ? "-"
            : Text.safe(row.kafkaTopic()) + "-" + row.kafkaPartition() + "@" + row.kafkaOffset());
    table.row(
        "payload size", row.payloadBytes() == null ? "no payload" : row.payloadBytes() + " bytes");
    return table;
  }

  static ObjectNode json(RowView row, boolean withPayload) {
    ObjectNode node = Text.json().createObjectNode();
    node.put("seq", row.seq());
    node.put("message_id", row.messageId());
    node.put("instance_key", row.instanceKey());
    node.put("status", row.status().name());
    node.put("aggregate_type", row.aggregateType());
    node.put("aggregate_id", row.aggregateId());
    node.put("event_type", row.eventType());
    node.put("topic", row.topic());
    node.put("correlation_id", row.correlationId());
    node.put("created_at", iso(row.createdAt()));
    node.put("deliver_before", iso(row.deliverBefore()));
    node.put("attempts", row.attempts());
    node.put("abandoned_claims", row.abandonedClaims());
    node.put("isolated", row.isolated());
    node.put("next_attempt_at", iso(row.nextAttemptAt()));
    node.put("last_failure_code", row.lastFailureCode());
    node.put("lease_owner", row.leaseOwner());
    node.put("lease_token", row.leaseToken());
    node.put("lease_expires_at", iso(row.leaseExpiresAt()));
    node.put("published_at", iso(row.publishedAt()));
    node.put("kafka_topic", row.kafkaTopic());
    node.put("kafka_partition", row.kafkaPartition());
    node.put("kafka_offset", row.kafkaOffset());
    node.put("payload_bytes", row.payloadBytes());
    if (withPayload) {
      if (row.headersJson() == null) {
        node.putNull("headers");
      } else {
        try {
          node.set("headers", Text.json().readTree(row.headersJson()));
        } catch (JsonProcessingException e) {
          node.put("headers", row.headersJson()); // jsonb always parses; kept as text otherwise
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
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      return null;
    }
  }

  private static String iso(Instant instant) {
    return instant == null ? null : instant.toString();
  }
}
