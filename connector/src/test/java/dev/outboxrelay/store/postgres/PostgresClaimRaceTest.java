package dev.outboxrelay.store.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.testing.Postgres;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.RepeatedTest;

/** Concurrent claimers on real connections, released together by a latch. */
class PostgresClaimRaceTest {
  static final OutboxTable TABLE = OutboxTable.parse("outbox");
  static HikariDataSource dataSource;
  static PostgresOutboxStore store;

  @BeforeAll
  static void database() {
    dataSource = Postgres.pool(Postgres.freshDatabase("race"), 12);
    new SchemaMigrator(dataSource, TABLE).migrate();
    store = new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);
  }

  @AfterAll
  static void close() {
    dataSource.close();
  }

  @BeforeEach
  void fill() throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("TRUNCATE outbox RESTART IDENTITY");
    }
    PostgresOutboxWriter writer = new PostgresOutboxWriter(TABLE.tableName(), "eu");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      for (int i = 0; i < 400; i++) {
        writer.enqueue(
            c,
            OutboxMessage.builder()
                .messageId("m" + i)
                .aggregateType("order")
                .aggregateId("agg" + (i % 7))
                .eventType("E")
                .build());
      }
      c.commit();
    }
  }

  @RepeatedTest(3)
  void concurrentClaimersNeverGetTheSameRowAndNeverSplitAnAggregate() throws Exception {
    int claimers = 6;
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(claimers);
    List<Future<List<ClaimedMessage>>> futures = new ArrayList<>();
    for (int w = 0; w < claimers; w++) {
      String owner = "w" + w;
      Callable<List<ClaimedMessage>> claimer =
          () -> {
            start.await();
            List<ClaimedMessage> mine = new ArrayList<>();
            for (int round = 0; round < 10; round++) {
              mine.addAll(
                  store
                      .claim(
                          new ClaimRequest(owner, Set.of("eu"), 7, Duration.ofMinutes(5), 10, true))
                      .claimed());
            }
            return mine;
          };
      futures.add(pool.submit(claimer));
    }
    start.countDown();
    Set<String> seen = new HashSet<>();
    for (Future<List<ClaimedMessage>> f : futures) {
      for (ClaimedMessage m : f.get(60, TimeUnit.SECONDS)) {
        assertTrue(seen.add(m.messageId()), "claimed twice: " + m.messageId());
      }
    }
    pool.shutdown();
    assertTrue(seen.size() > 0);

    // Ordered claiming: every aggregate's claimed rows are a prefix of it, held by one owner.
    Map<String, List<String[]>> byAggregate = new HashMap<>();
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT aggregate_id, status, coalesce(lease_owner, '') FROM outbox ORDER BY seq")) {
      while (rs.next()) {
        byAggregate
            .computeIfAbsent(rs.getString(1), a -> new ArrayList<>())
            .add(new String[] {rs.getString(2), rs.getString(3)});
      }
    }
    byAggregate.forEach(
        (aggregate, rows) -> {
          Set<String> owners = new HashSet<>();
          boolean inPrefix = true;
          for (String[] row : rows) {
            boolean claimed = row[0].equals("IN_FLIGHT");
            assertTrue(inPrefix || !claimed, aggregate + ": a claimed row after an unclaimed one");
            inPrefix &= claimed;
            if (claimed) {
              owners.add(row[1]);
            }
          }
          assertTrue(owners.size() <= 1, aggregate + " split between owners " + owners);
        });
  }

  @RepeatedTest(3)
  void unorderedConcurrentClaimersShareTheWholeBacklogWithoutOverlap() throws Exception {
    int claimers = 4;
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(claimers);
    List<Future<List<ClaimedMessage>>> futures = new ArrayList<>();
    for (int w = 0; w < claimers; w++) {
      String owner = "u" + w;
      futures.add(
          pool.submit(
              () -> {
                start.await();
                List<ClaimedMessage> mine = new ArrayList<>();
                List<ClaimedMessage> batch;
                do {
                  batch =
                      store
                          .claim(
                              new ClaimRequest(
                                  owner, Set.of("eu"), 25, Duration.ofMinutes(5), 10, false))
                          .claimed();
                  mine.addAll(batch);
                } while (!batch.isEmpty());
                return mine;
              }));
    }
    start.countDown();
    Set<String> seen = new HashSet<>();
    for (Future<List<ClaimedMessage>> f : futures) {
      for (ClaimedMessage m : f.get(60, TimeUnit.SECONDS)) {
        assertTrue(seen.add(m.messageId()), "claimed twice: " + m.messageId());
      }
    }
    pool.shutdown();
    assertEquals(400, seen.size());
  }
}
