package dev.outboxrelay.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.OutboxDb.Row;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/** At-least-once, checked: every row PUBLISHED, in Kafka, and pointing at one of its copies. */
public final class Deliveries {
  private Deliveries() {}

  /**
   * Asserts that each of {@code ids} is PUBLISHED and was consumed at least once, and that its row
   * records the coordinates of one of its copies. Returns the duplicates: message id → copies.
   */
  public static Map<String, Integer> assertAllPublishedAtLeastOnce(
      Map<String, Row> rows, List<Delivered> delivered, Collection<String> ids) {
    Map<String, List<Delivered>> byId =
        delivered.stream().collect(Collectors.groupingBy(Delivered::messageId));
    Map<String, Integer> duplicates = new TreeMap<>();
    for (String id : ids) {
      Row row = rows.get(id);
      assertEquals("PUBLISHED", row == null ? null : row.status(), () -> "status of " + id);
      List<Delivered> copies = byId.getOrDefault(id, List.of());
      assertTrue(!copies.isEmpty(), () -> id + " was never consumed");
      assertTrue(
          KafkaRecords.pointsAtOneOf(row, copies),
          () -> id + " records coordinates of none of its copies: " + row + " " + copies);
      if (copies.size() > 1) {
        duplicates.put(id, copies.size());
      }
    }
    return duplicates;
  }

  /**
   * Reasons that account for a record sent twice: a lost lease or a late acknowledgement, said at
   * WARN, or the abandoned row's reclaim, said at INFO and counted (docs/metrics.md).
   */
  private static final Pattern DUPLICATE_REASON =
      Pattern.compile(
          "reason=(LEASE_TAKEN_OVER|LATE_ACK|LEASE_NOT_HELD_AT_STOP|ABANDONED_RECLAIMED)");

  /**
   * Every duplicate comes from a lost lease, a late acknowledgement or the reclaim of an abandoned
   * row, and is reported with its message id and that reason (docs/design.md, "Exactly-once"); any
   * other line naming the row accounts for nothing.
   */
  public static void assertDuplicatesReported(Map<String, Integer> duplicates, long logMark) {
    for (String id : duplicates.keySet()) {
      // The id whole: m-1 is not named by a line about m-12.
      Pattern named = Pattern.compile("message_id=" + Pattern.quote(id) + "(?![^\\s),])");
      assertTrue(
          !LogCapture.get()
              .matching(
                  logMark,
                  e ->
                      named.matcher(e.message()).find()
                          && DUPLICATE_REASON.matcher(e.message()).find()
                          && (e.level().equals("WARN")
                              || e.message().contains("reason=ABANDONED_RECLAIMED")))
              .isEmpty(),
          () -> "duplicate " + id + " was not reported");
    }
  }

  /** Restarts and outages charge no attempt (docs/design.md, "Attempts"). */
  public static void assertNoAttemptCharged(Map<String, Row> rows, Collection<String> ids) {
    for (String id : ids) {
      assertEquals(0, rows.get(id).attempts(), () -> "attempts charged to " + rows.get(id));
    }
  }
}
