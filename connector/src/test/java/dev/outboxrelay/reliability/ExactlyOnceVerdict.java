package dev.outboxrelay.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.reliability.ExactlyOnceMode.Recoveries;
import dev.outboxrelay.testing.KafkaRecords;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.OutboxDb.Row;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The checks every exactly-once scenario ends with, on both connectors: a read_committed consumer
 * sees every row exactly once (0 duplicates, 0 lost), every row is PUBLISHED, pointing at its
 * record unless recovery recorded it from the offsets, and per aggregate the records follow the
 * rows' insertion order; neighbours are untouched (as in {@link Verdict}). It also counts what a
 * read_uncommitted consumer sees besides: records of aborted transactions.
 */
final class ExactlyOnceVerdict {
  static final String RECOVERED_FROM_OFFSETS = "RECOVERED_FROM_OFFSETS";

  /** What a scenario ended with; duplicates (read_committed) and lost are asserted to be 0. */
  record Figures(
      String scenario,
      int inserted,
      long lost,
      int committedDuplicates,
      int abortedRecords,
      int uncommittedDuplicatedRows,
      long recordedFromOffsets,
      Recoveries recoveries,
      long otherPublished,
      int otherInserted,
      long seconds) {

    String row() {
      return String.format(
          "| %s (exactly-once) | %d | %d | %d records (%d rows) | %d | %d starts: %d recorded"
              + " PUBLISHED, %d released (%d rows end RECOVERED_FROM_OFFSETS) | %d / %d | %d s |",
          scenario,
          inserted,
          committedDuplicates,
          abortedRecords,
          uncommittedDuplicatedRows,
          lost,
          recoveries.starts(),
          recoveries.published(),
          recoveries.released(),
          recordedFromOffsets,
          otherPublished,
          otherInserted,
          seconds);
    }
  }

  private ExactlyOnceVerdict() {}

  static Figures check(Scenario s) {
    return check(s, new Recoveries(0, 0, 0));
  }

  /**
   * @param elsewhere recoveries logged outside this JVM (a worker process)
   */
  static Figures check(Scenario s, Recoveries elsewhere) {
    s.awaitDrained();
    Map<String, Row> rows = s.db.rows(Scenario.MAIN_KEY);
    List<Delivered> committed = s.kit.readCommitted(s.mainTopic);
    List<Delivered> everything = s.kit.readAll(s.mainTopic);
    List<Delivered> otherCommitted = s.kit.readCommitted(s.otherTopic);
    assertTrue(
        committed.stream().allMatch(r -> Scenario.MAIN_KEY.equals(r.instanceKey())),
        s.name + ": a record of another instance key in the main topic");
    assertTrue(
        otherCommitted.stream().allMatch(r -> Scenario.OTHER_KEY.equals(r.instanceKey())),
        s.name + ": a record of another instance key in the other topic");

    Set<String> expectedIds = new HashSet<>(s.extraRows(Scenario.MAIN_KEY));
    for (int n = 0; n < s.spec().total(); n++) {
      expectedIds.add("m-" + n);
    }
    assertEquals(expectedIds, rows.keySet(), s.name + ": main rows in the table");
    Map<String, List<Delivered>> byId = KafkaRecords.byMessageId(committed);
    List<String> lost = lostRows(rows, byId);
    List<String> duplicated = duplicatedRows(byId);
    assertEquals(List.of(), first20(lost), s.name + ": main rows lost");
    assertEquals(List.of(), first20(duplicated), s.name + ": read_committed duplicates (main)");
    assertEquals(
        List.of(),
        Verdict.orderViolations(committed, rows),
        s.name + ": per-aggregate order (read_committed)");

    Map<String, Row> others = s.db.rows(Scenario.OTHER_KEY);
    Map<String, List<Delivered>> otherById = KafkaRecords.byMessageId(otherCommitted);
    assertEquals(s.spec().otherTotal(), others.size(), s.name + ": other rows in the table");
    assertEquals(List.of(), first20(lostRows(others, otherById)), s.name + ": other rows lost");
    assertEquals(
        List.of(),
        first20(duplicatedRows(otherById)),
        s.name + ": read_committed duplicates (other)");
    assertEquals(
        List.of(),
        Verdict.orderViolations(otherCommitted, others),
        s.name + ": per-aggregate order (other)");
    Verdict.assertNeighboursUntouched(s);

    int uncommittedDuplicatedRows =
        (int)
            KafkaRecords.byMessageId(everything).values().stream()
                .filter(c -> c.size() > 1)
                .count();
    Figures figures =
        new Figures(
            s.name,
            rows.size(),
            lost.size(),
            duplicated.size(),
            everything.size() - committed.size(),
            uncommittedDuplicatedRows,
            rows.values().stream()
                .filter(r -> RECOVERED_FROM_OFFSETS.equals(r.lastFailureCode()))
                .count(),
            ExactlyOnceMode.recoveries(s.mainConnector, s.logMark).plus(elsewhere),
            others.values().stream().filter(r -> "PUBLISHED".equals(r.status())).count(),
            others.size(),
            s.elapsed().toSeconds());
    Scenario.report(figures.row());
    return figures;
  }

  /**
   * Rows not PUBLISHED, not in Kafka, or pointing at none of their records; a row recorded from the
   * offsets has no coordinates to check (the offsets do not hold them).
   */
  private static List<String> lostRows(Map<String, Row> rows, Map<String, List<Delivered>> byId) {
    List<String> lost = new ArrayList<>();
    for (Row row : rows.values()) {
      List<Delivered> copies = byId.getOrDefault(row.messageId(), List.of());
      boolean recovered = RECOVERED_FROM_OFFSETS.equals(row.lastFailureCode());
      if (!"PUBLISHED".equals(row.status())
          || copies.isEmpty()
          || (!recovered && !KafkaRecords.pointsAtOneOf(row, copies))) {
        lost.add(
            row.messageId()
                + " ("
                + row.status()
                + " at "
                + row.kafkaPartition()
                + "@"
                + row.kafkaOffset()
                + ", "
                + copies.size()
                + " in Kafka)");
      }
    }
    return lost;
  }

  private static List<String> duplicatedRows(Map<String, List<Delivered>> byId) {
    return byId.entrySet().stream()
        .filter(e -> e.getValue().size() > 1)
        .map(e -> e.getKey() + " x" + e.getValue().size())
        .toList();
  }

  private static List<String> first20(List<String> items) {
    return items.subList(0, Math.min(20, items.size()));
  }
}
