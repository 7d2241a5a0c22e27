package dev.outboxrelay.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.OutboxHeaders;
import dev.outboxrelay.mapping.UnpublishableReasons;
import dev.outboxrelay.reliability.Verdict.Figures;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.OutboxDb;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Rows that can never be published, mixed among good rows of the same aggregates while tens of
 * thousands flow (payload format JSON, a payload limit, a dead-letter topic for the main connector
 * and none for the other): each bad row ends FAILED with its reason code (after its dead-letter
 * record, where there is a dead-letter topic), its neighbours and successors are all PUBLISHED,
 * nothing is lost. What each reason means row by row is the mapping tests' business; this is the
 * same under load, through Connect, with ordering on.
 */
class BadInputUnderLoadTest {
  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.TWO_WORKERS);

  private static final int ROWS = 10_000;

  /** A kind of bad row: how it is written, and the reason it must be parked with. */
  private enum Bad {
    INVALID_JSON(UnpublishableReasons.PAYLOAD_INVALID_JSON, "{\"n\": 1,", null, null, false),
    NUMBER_UNREPRESENTABLE(
        UnpublishableReasons.PAYLOAD_NUMBER_UNREPRESENTABLE,
        "{\"n\": 123456789012345678901234567890}",
        null,
        null,
        false),
    TOO_LARGE(
        UnpublishableReasons.PAYLOAD_TOO_LARGE,
        "{\"big\":\"" + "y".repeat(1500) + "\"}",
        null,
        null,
        false),
    HEADERS_MALFORMED(
        UnpublishableReasons.HEADERS_MALFORMED, "{}", "{\"h\": {\"nested\": true}}", null, false),
    HEADER_RESERVED(
        UnpublishableReasons.HEADER_NAME_RESERVED,
        "{}",
        "{\"" + OutboxHeaders.EVENT_TYPE + "\": \"spoofed\"}",
        null,
        false),
    TOPIC_UNROUTABLE(UnpublishableReasons.TOPIC_UNROUTABLE, "{}", null, "no spaces allowed", false),
    DEADLINE_EXPIRED(UnpublishableReasons.DEADLINE_EXPIRED, "{}", null, null, true);

    final String reason;
    final String payload;
    final String headers;
    final String topic;
    final boolean expired;

    Bad(String reason, String payload, String headers, String topic, boolean expired) {
      this.reason = reason;
      this.payload = payload;
      this.headers = headers;
      this.topic = topic;
      this.expired = expired;
    }
  }

  @Test
  void badRowsAreParkedWithTheirReasonAndTheirNeighboursFlow() throws Exception {
    try (Scenario s = Scenario.open(CLUSTER, "bad-input")) {
      String dlq = "rel.bad-input.dlq";
      s.kit.createTopic(dlq, 1);
      Map<String, String> main = s.mainConfig(3);
      json(main);
      main.put("payload.max.bytes", "1024");
      main.put("dead.letter.topic", dlq);
      Map<String, String> other = s.otherConfig(2);
      json(other);
      other.put("payload.max.bytes", "1024");
      s.deploy(main, other);

      Map<String, String> expected = new ConcurrentHashMap<>();
      s.startLoad(
          Scenario.load(ROWS), (c, first, count) -> writeBadRows(s, c, first, count, expected));
      Figures f = Verdict.check(s, expected, Set.of());

      // Every bad row of the main connector is in the dead-letter topic, with its reason.
      Map<String, List<Delivered>> dead = new HashMap<>();
      for (Delivered r : s.kit.readAll(dlq)) {
        dead.computeIfAbsent(r.messageId(), k -> new ArrayList<>()).add(r);
      }
      List<String> missing = new ArrayList<>();
      expected.forEach(
          (id, parked) -> {
            if (id.startsWith("bad-orders-")) {
              String reason = parked.substring("FAILED ".length());
              List<Delivered> copies = dead.getOrDefault(id, List.of());
              if (copies.isEmpty()
                  || !reason.equals(copies.get(0).headers().get(OutboxHeaders.FAILURE_REASON))) {
                missing.add(id + " " + reason);
              }
            }
          });
      assertEquals(List.of(), missing, "bad rows missing from the dead-letter topic");
      // Each dead-lettered row holds where its copy is; the other connector's (no dead-letter
      // topic) hold no position: discard --dead-lettered tells the two apart.
      List<String> positions = new ArrayList<>();
      for (OutboxDb.Row row : s.db.rows().values()) {
        if (!"FAILED".equals(row.status())) {
          continue;
        }
        List<Delivered> copies = dead.getOrDefault(row.messageId(), List.of());
        boolean pointsAtACopy =
            copies.stream()
                .anyMatch(
                    c ->
                        c.topic().equals(row.kafkaTopic())
                            && Integer.valueOf(c.partition()).equals(row.kafkaPartition())
                            && Long.valueOf(c.offset()).equals(row.kafkaOffset()));
        boolean expectedCopy = row.messageId().startsWith("bad-orders-");
        if (expectedCopy ? !pointsAtACopy : row.kafkaOffset() != null) {
          positions.add(
              row.messageId()
                  + " "
                  + row.kafkaTopic()
                  + "-"
                  + row.kafkaPartition()
                  + "@"
                  + row.kafkaOffset());
        }
      }
      assertEquals(List.of(), positions, "FAILED rows whose position is not their copy's");
      assertTrue(
          dead.keySet().stream().allMatch(id -> id.startsWith("bad-orders-")),
          "only bad rows of the main connector are dead-lettered");
      assertTrue(f.failed() > 0 && f.published() == ROWS, f::toString);
      Scenario.report(
          "|  | bad-input: "
              + expected.size()
              + " bad rows of "
              + Bad.values().length
              + " kinds, "
              + dead.size()
              + " dead-lettered |");
    }
  }

  private static void json(Map<String, String> config) {
    config.put("payload.format", "json");
    config.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
    config.put("value.converter.schemas.enable", "false");
  }

  /**
   * With each batch, in the same transaction: one bad row per kind for the main key (every other
   * batch) or the other key, in the aggregates of the good rows around it.
   */
  private static void writeBadRows(
      Scenario s, Connection c, int first, int count, Map<String, String> expected)
      throws SQLException {
    String key = (first / count) % 2 == 0 ? Scenario.MAIN_KEY : Scenario.OTHER_KEY;
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id,"
                + " event_type, topic, payload, headers, deliver_before)"
                + " VALUES (?, ?, 'order', ?, 'Bad', ?, ?, CAST(? AS jsonb),"
                + " CASE WHEN ? THEN now() - INTERVAL '1 hour' END)"
                + " ON CONFLICT (message_id) DO NOTHING")) {
      for (Bad bad : Bad.values()) {
        String id = "bad-" + key + "-" + bad.name().toLowerCase() + "-" + first;
        ps.setString(1, id);
        ps.setString(2, key);
        ps.setString(3, (key.equals(Scenario.MAIN_KEY) ? "agg-" : "other-agg-") + first % 300);
        ps.setString(4, bad.topic);
        ps.setBytes(5, bad.payload.getBytes(StandardCharsets.UTF_8));
        ps.setString(6, bad.headers);
        ps.setBoolean(7, bad.expired);
        ps.addBatch();
        expected.put(id, "FAILED " + bad.reason);
        s.wroteExtraRow(key, id);
      }
      ps.executeBatch();
    }
  }
}
