package dev.outboxrelay.benchmark;

import com.sun.management.OperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;

/**
 * What one run cost PostgreSQL per row (issue 11), measured around its two phases:
 *
 * <ul>
 *   <li><b>insert</b>: the backlog's INSERT statements (not the VACUUM and CHECKPOINT after them);
 *   <li><b>relay</b>: from resuming the relay (or starting the loop) until the run's clock stops.
 * </ul>
 *
 * <p>Per phase: WAL bytes ({@code pg_wal_lsn_diff} of {@code pg_current_wal_insert_lsn()} before
 * and after) and, from {@code pg_walinspect}'s {@code pg_get_wal_stats} over the same range, WAL
 * records and full-page-image bytes. The WAL is the whole server's: anything else that ran then
 * (autovacuum, a checkpoint record) counts too. For the relay phase: the PostgreSQL server's CPU
 * seconds ({@link ServerCpu}) and this JVM's ({@code getProcessCpuTime}: the relay, the broker, the
 * worker and the consumer all run in it). After the run, once every other session of the run's
 * database has closed (so that their statistics are flushed): the table's updates and HOT updates
 * ({@code pg_stat_user_tables}), its heap, index and total size, and the total size of its
 * published log where it has one (the relay's table from schema version 9: publishing moves each
 * row there). When the relay phase's clock stops: the five statements of the phase with the most
 * total execution time ({@code pg_stat_statements}, reset when the phase starts, recorded as each
 * statement ends, so not behind like the table's counts).
 */
final class RunCost {
  private RunCost() {}

  /** A statement of {@code pg_stat_statements}, its text on one line. */
  record TopStatement(String query, long calls, double totalMs, double meanMs, long rows) {
    @Override
    public String toString() {
      return "%.1f ms total, %d calls, %.3f ms mean, %d rows: %s"
          .formatted(totalMs, calls, meanMs, rows, query);
    }
  }

  /**
   * One kind of WAL record of the relay phase ({@code pg_get_wal_stats} per record type): how many,
   * their bytes without and with full-page images.
   */
  record WalRecordType(String type, long count, long recordBytes, long fpiBytes) {
    long totalBytes() {
      return recordBytes + fpiBytes;
    }
  }

  record Result(
      long rows,
      long insertWalBytes,
      long insertWalRecords,
      long insertFpiBytes,
      long relayWalBytes,
      long relayWalRecords,
      long relayFpiBytes,
      double pgCpuSeconds,
      double jvmCpuSeconds,
      long updates,
      long hotUpdates,
      long heapBytes,
      long indexBytes,
      long totalBytes,
      long publishedLogBytes,
      long vacuumedBytes,
      List<TopStatement> topStatements,
      List<WalRecordType> relayWalByType,
      boolean statisticsLagged) {

    /** True when the relayed table has a published log (its size is then measured). */
    boolean hasPublishedLog() {
      return publishedLogBytes >= 0;
    }

    double insertWalPerRow() {
      return (double) insertWalBytes / rows;
    }

    double relayWalPerRow() {
      return (double) relayWalBytes / rows;
    }

    /** NaN where pg_walinspect could not read the range. */
    double insertFpiPerRow() {
      return insertFpiBytes < 0 ? Double.NaN : (double) insertFpiBytes / rows;
    }

    double relayFpiPerRow() {
      return relayFpiBytes < 0 ? Double.NaN : (double) relayFpiBytes / rows;
    }

    double insertRecordsPerRow() {
      return insertWalRecords < 0 ? Double.NaN : (double) insertWalRecords / rows;
    }

    double relayRecordsPerRow() {
      return relayWalRecords < 0 ? Double.NaN : (double) relayWalRecords / rows;
    }

    /** Microseconds of PostgreSQL CPU per row relayed. */
    double pgCpuMicrosPerRow() {
      return pgCpuSeconds * 1e6 / rows;
    }

    double jvmCpuMicrosPerRow() {
      return jvmCpuSeconds * 1e6 / rows;
    }

    /** HOT updates / updates of the table; NaN if nothing was updated. */
    double hotRatio() {
      return updates == 0 ? Double.NaN : (double) hotUpdates / updates;
    }

    @Override
    public String toString() {
      return ("walInsertBytesPerRow=%.1f, walInsertRecordsPerRow=%.2f, walInsertFpiBytesPerRow=%.1f,"
              + " walRelayBytesPerRow=%.1f, walRelayRecordsPerRow=%.2f, walRelayFpiBytesPerRow=%.1f,"
              + " pgCpuSeconds=%.2f, jvmCpuSeconds=%.2f, updates=%d, hotUpdates=%d,"
              + " heapBytes=%d, indexBytes=%d, totalBytes=%d, publishedLogBytes=%d,"
              + " vacuumedBytes=%d, statisticsLagged=%b,"
              + " topStatements=[%s]")
          .formatted(
              insertWalPerRow(),
              insertRecordsPerRow(),
              insertFpiPerRow(),
              relayWalPerRow(),
              relayRecordsPerRow(),
              relayFpiPerRow(),
              pgCpuSeconds,
              jvmCpuSeconds,
              updates,
              hotUpdates,
              heapBytes,
              indexBytes,
              totalBytes,
              publishedLogBytes,
              vacuumedBytes,
              statisticsLagged,
              topStatements.stream()
                  .map(TopStatement::toString)
                  .collect(Collectors.joining(" | ")));
    }
  }

  /**
   * Takes the measurements of one run. Holds one connection to the run's database (idle between
   * readings); {@link #finish} closes it.
   */
  static final class Meter implements AutoCloseable {
    private static final int TOP = 5;
    private static final Duration SESSIONS_CLOSE = Duration.ofSeconds(15);

    private final BenchPostgres pg;
    private final String table;
    private final String publishedLog;
    private final long rows;
    private final Connection c;
    private String insertStart;
    private String insertEnd;
    private long insertRecords = -1;
    private long insertFpi = -1;
    private String relayStart;
    private String relayEnd;
    private double pgCpuStart;
    private double pgCpuEnd;
    private long jvmCpuStart;
    private long jvmCpuEnd;

    /**
     * @param table the table the run relays from, as SQL names it; it has no published log
     * @param rows the rows of the backlog, the divisor of every per-row figure
     */
    Meter(BenchPostgres pg, String url, String table, long rows) throws SQLException {
      this(pg, url, table, null, rows);
    }

    /**
     * @param table the table the run relays from, as SQL names it
     * @param publishedLog its published log, as SQL names it, or null: none
     * @param rows the rows of the backlog, the divisor of every per-row figure
     */
    Meter(BenchPostgres pg, String url, String table, String publishedLog, long rows)
        throws SQLException {
      this.pg = pg;
      this.table = table;
      this.publishedLog = publishedLog;
      this.rows = rows;
      this.c = BenchPostgres.connect(url);
    }

    /** A meter of the relay's own table and its published log. */
    static Meter ofRelayTable(BenchPostgres pg, String url, long rows) throws SQLException {
      return new Meter(
          pg,
          url,
          BenchPostgres.TABLE.qualified(),
          BenchPostgres.TABLE.qualifiedPublishedLog(),
          rows);
    }

    /** The relay phase's top statements, read when it ended. */
    private List<TopStatement> relayTop;

    void insertStarted() throws SQLException {
      insertStart = lsn();
    }

    /** Call before the VACUUM and CHECKPOINT: a checkpoint may recycle the phase's WAL. */
    void insertDone() throws SQLException {
      insertEnd = lsn();
      long[] stats = walStats(insertStart, insertEnd);
      insertRecords = stats[0];
      insertFpi = stats[1];
    }

    /** Right before the clock starts: resets pg_stat_statements, reads the WAL position and CPU. */
    void relayStarted() throws SQLException {
      try (Statement s = c.createStatement()) {
        s.execute("SELECT pg_stat_statements_reset()");
      }
      relayStart = lsn();
      pgCpuStart = pg.cpuSeconds();
      jvmCpuStart = jvmCpuNanos();
    }

    /**
     * Right after the clock stopped; the top statements too (pg_stat_statements counts a statement
     * as it ends): read later, they held the idle relay's empty claims after the clock stopped and
     * the connector's shutdown.
     */
    void relayDone() throws SQLException {
      jvmCpuEnd = jvmCpuNanos();
      pgCpuEnd = pg.cpuSeconds();
      relayEnd = lsn();
      relayTop = topStatements();
    }

    /**
     * After the relay's own sessions are closed (connector deleted, loop's connection closed):
     * waits for them to leave, then reads the table's figures (the top statements were read when
     * the relay phase ended).
     */
    Result finish() throws SQLException {
      try {
        boolean statisticsLagged = !awaitOtherSessionsClosed();
        List<TopStatement> top = relayTop == null ? List.of() : relayTop;
        long[] relayStats = walStats(relayStart, relayEnd);
        List<WalRecordType> relayByType = walByType(relayStart, relayEnd);
        long updates;
        long hot;
        long heap;
        long indexes;
        long total;
        try (PreparedStatement ps =
            c.prepareStatement(
                "SELECT coalesce(s.n_tup_upd, 0), coalesce(s.n_tup_hot_upd, 0),"
                    + " pg_relation_size(t.oid), pg_indexes_size(t.oid),"
                    + " pg_total_relation_size(t.oid)"
                    + " FROM pg_class t LEFT JOIN pg_stat_user_tables s ON s.relid = t.oid"
                    + " WHERE t.oid = ?::regclass")) {
          ps.setString(1, table);
          try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            updates = rs.getLong(1);
            hot = rs.getLong(2);
            heap = rs.getLong(3);
            indexes = rs.getLong(4);
            total = rs.getLong(5);
          }
        }
        long logTotal = -1;
        if (publishedLog != null) {
          try (PreparedStatement ps =
              c.prepareStatement("SELECT pg_total_relation_size(?::regclass)")) {
            ps.setString(1, publishedLog);
            try (ResultSet rs = ps.executeQuery()) {
              rs.next();
              logTotal = rs.getLong(1);
            }
          }
        }
        long vacuumed = vacuumedSize();
        return new Result(
            rows,
            lsnDiff(insertEnd, insertStart),
            insertRecords,
            insertFpi,
            lsnDiff(relayEnd, relayStart),
            relayStats[0],
            relayStats[1],
            pgCpuEnd - pgCpuStart,
            (jvmCpuEnd - jvmCpuStart) / 1e9,
            updates,
            hot,
            heap,
            indexes,
            total,
            logTotal,
            vacuumed,
            top,
            relayByType,
            statisticsLagged);
      } finally {
        close();
      }
    }

    /**
     * What the relayed table (and its published log) take once VACUUM has run after the drain, as
     * autovacuum would soon: the steady-state footprint, not the dead versions of the drain.
     */
    private long vacuumedSize() throws SQLException {
      String sizes = "pg_total_relation_size(?::regclass)";
      try (Statement s = c.createStatement()) {
        s.execute("VACUUM " + table + (publishedLog == null ? "" : ", " + publishedLog));
      }
      try (PreparedStatement ps =
          c.prepareStatement("SELECT " + sizes + (publishedLog == null ? "" : " + " + sizes))) {
        ps.setString(1, table);
        if (publishedLog != null) {
          ps.setString(2, publishedLog);
        }
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getLong(1);
        }
      }
    }

    private List<TopStatement> topStatements() throws SQLException {
      List<TopStatement> top = new ArrayList<>();
      try (PreparedStatement ps =
          c.prepareStatement(
              "SELECT regexp_replace(query, '\\s+', ' ', 'g'), calls, total_exec_time,"
                  + " mean_exec_time, rows FROM pg_stat_statements"
                  + " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                  + " AND query NOT LIKE '%pg_stat_statements%'"
                  + " AND query NOT LIKE '%pg_current_wal_insert_lsn%'"
                  + " AND query NOT LIKE '%pg_stat_activity%'"
                  + " ORDER BY total_exec_time DESC LIMIT "
                  + TOP)) {
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            String query = rs.getString(1).replace(';', ',');
            top.add(
                new TopStatement(
                    query.length() > 240 ? query.substring(0, 237) + "..." : query,
                    rs.getLong(2),
                    rs.getDouble(3),
                    rs.getDouble(4),
                    rs.getLong(5)));
          }
        }
      }
      return top;
    }

    /**
     * Statistics of a backend reach the shared counters when it exits at the latest.
     *
     * @return false if sessions were still open when the wait timed out: the table's update and HOT
     *     counts may then miss some of the run's
     */
    private boolean awaitOtherSessionsClosed() throws SQLException {
      long deadline = System.nanoTime() + SESSIONS_CLOSE.toNanos();
      try (Statement s = c.createStatement()) {
        while (true) {
          try (ResultSet rs =
              s.executeQuery(
                  "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                      + " AND pid <> pg_backend_pid()"
                      + " AND backend_type IN ('client backend', 'walsender')")) {
            rs.next();
            if (rs.getLong(1) == 0) {
              return true;
            }
          }
          if (System.nanoTime() > deadline) {
            BenchmarkMain.Progress.log(
                "sessions of the run still open after " + SESSIONS_CLOSE + ": HOT figures may lag");
            return false;
          }
          LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
        }
      }
    }

    private String lsn() throws SQLException {
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT pg_current_wal_insert_lsn()::text")) {
        rs.next();
        return rs.getString(1);
      }
    }

    private long lsnDiff(String end, String start) throws SQLException {
      try (PreparedStatement ps =
          c.prepareStatement("SELECT pg_wal_lsn_diff(?::pg_lsn, ?::pg_lsn)::bigint")) {
        ps.setString(1, end);
        ps.setString(2, start);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getLong(1);
        }
      }
    }

    /** WAL records and full-page-image bytes between two positions; -1, -1 if unreadable. */
    private long[] walStats(String start, String end) {
      if (start.equals(end)) {
        return new long[] {0, 0};
      }
      try (PreparedStatement ps =
          c.prepareStatement(
              "SELECT coalesce(sum(count), 0)::bigint, coalesce(sum(fpi_size), 0)::bigint"
                  + " FROM pg_get_wal_stats(?::pg_lsn, ?::pg_lsn, false)")) {
        ps.setString(1, start);
        ps.setString(2, end);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return new long[] {rs.getLong(1), rs.getLong(2)};
        }
      } catch (SQLException e) {
        BenchmarkMain.Progress.log("pg_walinspect could not read the WAL: " + e.getMessage());
        return new long[] {-1, -1};
      }
    }

    /** The phase's WAL by record type, largest first; empty if unreadable. */
    private List<WalRecordType> walByType(String start, String end) {
      List<WalRecordType> types = new ArrayList<>();
      if (start.equals(end)) {
        return types;
      }
      try (PreparedStatement ps =
          c.prepareStatement(
              "SELECT \"resource_manager/record_type\", count, record_size, fpi_size"
                  + " FROM pg_get_wal_stats(?::pg_lsn, ?::pg_lsn, true) WHERE count > 0"
                  + " ORDER BY combined_size DESC")) {
        ps.setString(1, start);
        ps.setString(2, end);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            types.add(
                new WalRecordType(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getLong(4)));
          }
        }
      } catch (SQLException e) {
        BenchmarkMain.Progress.log("pg_walinspect could not read the WAL: " + e.getMessage());
      }
      return types;
    }

    private static long jvmCpuNanos() {
      return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
          .getProcessCpuTime();
    }

    @Override
    public void close() throws SQLException {
      c.close();
    }
  }
}
