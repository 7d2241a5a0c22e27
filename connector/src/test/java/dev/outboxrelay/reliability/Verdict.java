package dev.outboxrelay.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.testing.KafkaRecords;
import dev.outboxrelay.testing.KafkaRecords.Delivered;
import dev.outboxrelay.testing.LoadWriter;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb.Row;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The checks every scenario ends with, and its figures:
 *
 * <ul>
 *   <li>every main row written is in Kafka at least once and PUBLISHED (or parked, FAILED or
 *       EXHAUSTED, with the reason the scenario expects), and the Kafka coordinates the row records
 *       hold a record of that very message: nothing lost, nothing marked published that Kafka does
 *       not have;
 *   <li>the other connector delivered all of its rows too, to its own topic, and no owner of the
 *       main connector ever changed one of them (the audit trigger's record); legacy rows and rows
 *       of a key nobody relays are unchanged, column for column;
 *   <li>per aggregate, first deliveries in Kafka follow the rows' insertion order ({@code seq});
 *   <li>every duplicate in Kafka is accounted for by a real loss of lease: the row was reclaimed
 *       after its lease expired ({@code abandoned_claims > 0}) or a claim-lost line names it.
 * </ul>
 */
final class Verdict {
  /** What a scenario ended with; {@code lost} is asserted to be 0 before this is returned. */
  record Figures(
      String scenario,
      int inserted,
      long published,
      long failed,
      long lost,
      int duplicateRecords,
      int duplicatedRows,
      int claimLostLines,
      long reclaimedRows,
      int otherInserted,
      long otherPublished,
      long seconds) {

    String row() {
      return String.format(
          "| %s | %d | %d | %d | %d | %d (%d rows) | %d | %d | %d / %d | %d s |",
          scenario,
          inserted,
          published,
          failed,
          lost,
          duplicateRecords,
          duplicatedRows,
          claimLostLines,
          reclaimedRows,
          otherPublished,
          otherInserted,
          seconds);
    }
  }

  private Verdict() {}

  static Figures check(Scenario s) {
    return check(s, Map.of(), Set.of());
  }

  /**
   * @param expectedParked main rows that must end parked, with their status and reason code ({@code
   *     "FAILED PAYLOAD_INVALID_JSON"}); they are not expected in the main topic
   * @param claimLostElsewhere message ids named in claim-lost lines of logs outside this JVM
   */
  static Figures check(
      Scenario s, Map<String, String> expectedParked, Set<String> claimLostElsewhere) {
    s.awaitDrained();
    LoadWriter.Spec spec = s.spec();
    Map<String, Row> rows = s.db.rows(Scenario.MAIN_KEY);
    List<Delivered> mainRecords = s.kit.readAll(s.mainTopic);
    List<Delivered> otherRecords = s.kit.readAll(s.otherTopic);

    // Nothing of one connector in the other's topic.
    assertTrue(
        mainRecords.stream().allMatch(r -> Scenario.MAIN_KEY.equals(r.instanceKey())),
        s.name + ": a record of another instance key in the main topic");
    assertTrue(
        otherRecords.stream().allMatch(r -> Scenario.OTHER_KEY.equals(r.instanceKey())),
        s.name + ": a record of another instance key in the other topic");

    // Every main row written: in Kafka at least once, PUBLISHED where Kafka has it.
    Map<String, List<Delivered>> byId = KafkaRecords.byMessageId(mainRecords);
    Set<String> expectedIds = new HashSet<>();
    for (int n = 0; n < spec.total(); n++) {
      expectedIds.add("m-" + n);
    }
    expectedIds.addAll(s.extraRows(Scenario.MAIN_KEY));
    assertEquals(expectedIds, rows.keySet(), s.name + ": main rows in the table");
    List<String> lost = new ArrayList<>();
    long published = 0;
    long failed = 0;
    for (Row row : rows.values()) {
      String parked = expectedParked.get(row.messageId());
      if (parked != null) {
        if (!parked.equals(row.status() + " " + row.lastFailureCode())) {
          lost.add(row.messageId() + " (" + row.status() + " " + row.lastFailureCode() + ")");
        }
        failed++;
        continue;
      }
      List<Delivered> copies = byId.getOrDefault(row.messageId(), List.of());
      if (!"PUBLISHED".equals(row.status())
          || copies.isEmpty()
          || !KafkaRecords.pointsAtOneOf(row, copies)) {
        lost.add(row.messageId() + " (" + row.status() + ", " + copies.size() + " in Kafka)");
      } else {
        published++;
      }
    }
    assertEquals(List.of(), lost.subList(0, Math.min(lost.size(), 20)), s.name + ": lost rows");
    assertEquals(
        List.of(),
        expectedParked.keySet().stream().filter(byId::containsKey).sorted().limit(20).toList(),
        s.name + ": parked rows in the main topic");

    // Per-aggregate order of first deliveries.
    List<String> disorder = orderViolations(mainRecords, rows);
    assertEquals(List.of(), disorder, s.name + ": per-aggregate first-delivery order");

    // Every duplicate accounted for by a real loss of lease.
    Set<String> claimLost = new HashSet<>(claimLostElsewhere);
    List<LogCapture.ClaimLost> lines = LogCapture.get().claimLost(s.mainConnector, s.logMark);
    lines.forEach(l -> claimLost.add(l.messageId()));
    int duplicateRecords = 0;
    int duplicatedRows = 0;
    List<String> unaccounted = new ArrayList<>();
    for (Map.Entry<String, List<Delivered>> e : byId.entrySet()) {
      int copies = e.getValue().size();
      if (copies > 1) {
        duplicateRecords += copies - 1;
        duplicatedRows++;
        Row row = rows.get(e.getKey());
        if (row == null || (row.abandonedClaims() == 0 && !claimLost.contains(e.getKey()))) {
          unaccounted.add(e.getKey() + " x" + copies);
        }
      }
    }
    assertEquals(List.of(), unaccounted, s.name + ": duplicates without a lost lease");

    // The other connector: all delivered, to its topic; never touched by the main connector.
    Map<String, Row> others = s.db.rows(Scenario.OTHER_KEY);
    Set<String> otherExtras = s.extraRows(Scenario.OTHER_KEY);
    assertTrue(others.keySet().containsAll(otherExtras), s.name + ": extra rows of the other key");
    assertEquals(spec.otherTotal() + otherExtras.size(), others.size(), s.name);
    Map<String, List<Delivered>> otherById = KafkaRecords.byMessageId(otherRecords);
    List<String> otherLost =
        others.values().stream()
            .filter(
                r ->
                    expectedParked.containsKey(r.messageId())
                        ? !expectedParked
                                .get(r.messageId())
                                .equals(r.status() + " " + r.lastFailureCode())
                            || otherById.containsKey(r.messageId())
                        : !"PUBLISHED".equals(r.status())
                            || !otherById.containsKey(r.messageId())
                            || !KafkaRecords.pointsAtOneOf(r, otherById.get(r.messageId())))
            .map(Row::messageId)
            .limit(20)
            .toList();
    assertEquals(List.of(), otherLost, s.name + ": rows of the other instance key lost");
    // A duplicate of the other connector's is its own lost lease too, never the main connector's
    // doing (a release or requeue of a row it does not own would show here).
    Set<String> otherClaimLost = new HashSet<>();
    LogCapture.get()
        .claimLost(s.otherConnector, s.logMark)
        .forEach(l -> otherClaimLost.add(l.messageId()));
    List<String> otherUnaccounted =
        otherById.entrySet().stream()
            .filter(e -> e.getValue().size() > 1)
            .filter(
                e ->
                    !otherClaimLost.contains(e.getKey())
                        && (others.get(e.getKey()) == null
                            || others.get(e.getKey()).abandonedClaims() == 0))
            .map(e -> e.getKey() + " x" + e.getValue().size())
            .limit(20)
            .toList();
    assertEquals(
        List.of(), otherUnaccounted, s.name + ": other key's duplicates without a lost lease");
    assertNeighboursUntouched(s);

    long reclaimed = rows.values().stream().filter(r -> r.abandonedClaims() > 0).count();
    Figures figures =
        new Figures(
            s.name,
            rows.size(),
            published,
            failed,
            lost.size(),
            duplicateRecords,
            duplicatedRows,
            lines.size() + claimLostElsewhere.size(),
            reclaimed,
            others.size(),
            others.values().stream().filter(r -> "PUBLISHED".equals(r.status())).count(),
            s.elapsed().toSeconds());
    Scenario.report(figures.row());
    return figures;
  }

  /**
   * No lease owner of the main connector ever changed a row of another instance key (the audit
   * trigger's record), and legacy and unowned rows are unchanged, column for column.
   */
  static void assertNeighboursUntouched(Scenario s) {
    String mainOwner = s.mainConnector + "/task-%";
    assertEquals(
        0,
        s.db.scalar(
            "SELECT count(*) FROM relay_audit WHERE old_owner LIKE ? OR new_owner LIKE ?"
                + " OR application = ?",
            mainOwner,
            mainOwner,
            Scenario.MAIN_APPLICATION),
        s.name + ": the main connector changed a row that is not its own");
    assertEquals(
        0,
        s.db.scalar(
            "SELECT count(*) FROM relay_audit WHERE instance_key IS NULL OR instance_key = ?",
            Scenario.UNOWNED_KEY),
        s.name + ": a legacy or unowned row was updated");
    s.assertUntouched();
  }

  /**
   * Walks each partition in offset order, keeping the first copy of each message; per aggregate
   * (the record key), the rows' seq must then only grow. And each aggregate's records are in one
   * partition of a topic: split across two, no order between them would hold for a consumer.
   */
  static List<String> orderViolations(List<Delivered> records, Map<String, Row> rows) {
    Map<String, List<Delivered>> byPartition = new TreeMap<>();
    Map<String, String> partitionOfAggregate = new HashMap<>();
    List<String> violations = new ArrayList<>();
    for (Delivered r : records) {
      byPartition.computeIfAbsent(r.topic() + "-" + r.partition(), k -> new ArrayList<>()).add(r);
      Row row = rows.get(r.messageId());
      if (row != null) {
        String partition = r.topic() + "-" + r.partition();
        String first =
            partitionOfAggregate.putIfAbsent(r.topic() + "/" + row.aggregateId(), partition);
        if (first != null && !first.equals(partition)) {
          violations.add(row.aggregateId() + ": in " + first + " and " + partition);
        }
      }
    }
    for (List<Delivered> partition : byPartition.values()) {
      partition.sort((a, b) -> Long.compare(a.offset(), b.offset()));
      Set<String> seen = new HashSet<>();
      Map<String, Long> lastSeq = new HashMap<>();
      for (Delivered r : partition) {
        if (!seen.add(r.messageId())) {
          continue;
        }
        Row row = rows.get(r.messageId());
        if (row == null) {
          continue;
        }
        Long last = lastSeq.put(row.aggregateId(), row.seq());
        if (last != null && last > row.seq()) {
          violations.add(
              row.aggregateId() + ": seq " + row.seq() + " first delivered after seq " + last);
        }
      }
    }
    return violations.subList(0, Math.min(20, violations.size()));
  }
}
