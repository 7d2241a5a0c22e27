package dev.outboxrelay.benchmark;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.TreeMap;

/**
 * The physical reference (issue 11): the least a relay of this workload can ask of PostgreSQL. A
 * minimal outbox table (identity key, aggregate id, payload, status, one partial index of the
 * pending rows) in a database of the same server, the same rows, and one JDBC connection that
 * claims up to {@code --minimal-batch-size} rows per statement ({@code UPDATE … WHERE id IN (SELECT
 * … FOR UPDATE SKIP LOCKED) RETURNING …}, reading every payload) and marks them with one batched
 * UPDATE, each its own durable commit (autocommit; the server runs with {@code fsync=on} and {@code
 * synchronous_commit=on}). No Kafka, no lease, no order, no fencing: what is left is the claim and
 * the mark themselves.
 */
final class MinimalLoop {
  static final String TABLE = "minimal_outbox";

  record Result(
      double seconds,
      double rowsPerSecond,
      Map<String, Long> finalCounts,
      double load,
      RunCost.Result cost) {}

  private final BenchPostgres pg;
  private final Options options;

  MinimalLoop(BenchPostgres pg, Options options) {
    this.pg = pg;
    this.options = options;
  }

  static String label(int batchSize) {
    return "minimal loop: claim %d per statement, one batched mark, 1 connection"
        .formatted(batchSize);
  }

  Result run(int rows, int batchSize) throws Exception {
    String url = pg.freshDatabase("minimal", false);
    try (RunCost.Meter meter = new RunCost.Meter(pg, url, TABLE, rows)) {
      try (Connection c = BenchPostgres.connect(url);
          Statement s = c.createStatement()) {
        s.execute(
            "CREATE TABLE "
                + TABLE
                + " (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                + " aggregate_id text NOT NULL,"
                + " payload bytea NOT NULL,"
                + " status text NOT NULL DEFAULT 'PENDING')");
        s.execute(
            "CREATE INDEX " + TABLE + "_pending ON " + TABLE + " (id) WHERE status = 'PENDING'");
      }
      meter.insertStarted();
      Backlog.insertSeries(
          url,
          "INSERT INTO "
              + TABLE
              + " (aggregate_id, payload) SELECT "
              + Backlog.aggregateIdSql(options.aggregates)
              + ", convert_to("
              + Backlog.payloadSql(options.aggregates, options.payloadBytes)
              + ", 'UTF8') FROM generate_series(?::bigint, ?::bigint) g",
          1,
          rows);
      meter.insertDone();
      Backlog.vacuum(url, TABLE);
      pg.checkpoint();
      double load = Machine.loadAverage();
      long relayed = 0;
      long start;
      long done;
      try (Connection c = BenchPostgres.connect(url);
          PreparedStatement claim =
              c.prepareStatement(
                  "UPDATE "
                      + TABLE
                      + " SET status = 'IN_FLIGHT' WHERE id IN (SELECT id FROM "
                      + TABLE
                      + " WHERE status = 'PENDING' ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)"
                      + " RETURNING id, aggregate_id, payload");
          PreparedStatement mark =
              c.prepareStatement(
                  "UPDATE " + TABLE + " SET status = 'PUBLISHED' WHERE id = ANY (?)")) {
        claim.setInt(1, batchSize);
        meter.relayStarted();
        start = System.nanoTime();
        long payloadBytes = 0;
        while (true) {
          Long[] ids = new Long[batchSize];
          int n = 0;
          try (ResultSet rs = claim.executeQuery()) {
            while (rs.next()) {
              ids[n++] = rs.getLong(1);
              payloadBytes += rs.getString(2).length() + rs.getBytes(3).length;
            }
          }
          if (n == 0) {
            break;
          }
          Long[] claimed = java.util.Arrays.copyOf(ids, n);
          Array array = c.createArrayOf("bigint", claimed);
          mark.setArray(1, array);
          int marked = mark.executeUpdate();
          array.free();
          if (marked != n) {
            throw new IllegalStateException("minimal loop marked " + marked + " of " + n);
          }
          relayed += n;
        }
        done = System.nanoTime();
        meter.relayDone();
        if (relayed != rows || payloadBytes == 0) {
          throw new IllegalStateException("minimal loop relayed " + relayed + " of " + rows);
        }
      }
      Map<String, Long> counts = new TreeMap<>();
      try (Connection c = BenchPostgres.connect(url);
          Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT status, count(*) FROM " + TABLE + " GROUP BY 1")) {
        while (rs.next()) {
          counts.put(rs.getString(1), rs.getLong(2));
        }
      }
      checkNothingLeft(counts);
      double seconds = (done - start) / 1e9;
      return new Result(seconds, rows / seconds, counts, load, meter.finish());
    } finally {
      pg.dropDatabase(url);
    }
  }

  private static void checkNothingLeft(Map<String, Long> counts) throws SQLException {
    if (counts.keySet().stream().anyMatch(k -> !k.equals("PUBLISHED"))) {
      throw new SQLException("minimal loop left rows unpublished: " + counts);
    }
  }
}
