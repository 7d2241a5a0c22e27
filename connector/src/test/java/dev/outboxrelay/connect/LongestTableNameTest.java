package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.RelayClock;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import dev.outboxrelay.store.postgres.SchemaMigrator;
import dev.outboxrelay.testing.Postgres;
import dev.outboxrelay.writer.OutboxMessage;
import dev.outboxrelay.writer.PostgresOutboxWriter;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The longest schema and table names {@link OutboxTable#parse} accepts work end to end, and every
 * name derived from a table name is the one PostgreSQL holds: it cuts longer identifiers silently
 * (and pg_notify rejects a channel of 64 bytes or more), so a mismatch means a cut name.
 */
class LongestTableNameTest {
  private static final String SCHEMA = longest("relay_schema_");
  private static final OutboxTable TABLE = OutboxTable.parse(SCHEMA + "." + longest("outbox_"));

  /**
   * The indexes the migrations leave (V6 dropped V1's active_idx, V7 replaced the status ones, V12
   * the parked rows', V14 added the parked rows' by seq, V15 replaced V12's), by suffix.
   */
  private static final String[] INDEXES = {
    "pkey",
    "message_id_key",
    "due_key_seq_idx",
    "due_aggregate_idx",
    "settled_idx",
    "parked_cid_seq_idx",
    "parked_key_seq_idx"
  };

  private static final String[] CONSTRAINTS = {
    "pkey",
    "message_id_key",
    "status_check",
    "attempts_check",
    "lease_token_check",
    "message_id_check",
    "instance_key_check",
    "in_flight_lease_check",
    "failure_code_check",
    "instance_key_required"
  };

  private static final String[] TRIGGERS = {"instance_key_immutable", "notify_inserted"};

  private static final String TRIGGERS_OF_TABLE =
      " FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid"
          + " WHERE t.tgrelid = to_regclass(?) AND NOT t.tgisinternal";

  private HikariDataSource dataSource;
  private String url;
  private NotificationListener listener;
  private final WakeSignal wake = new WakeSignal();
  private final AtomicInteger inserted = new AtomicInteger();

  /** A name of exactly 48 characters, the most the validator accepts per part. */
  private static String longest(String prefix) {
    return prefix + "x".repeat(48 - prefix.length());
  }

  @BeforeEach
  void setUp() throws SQLException {
    url = Postgres.freshDatabase("longest_name");
    dataSource = Postgres.pool(url, 3);
    exec("CREATE SCHEMA " + SCHEMA);
    new SchemaMigrator(dataSource, TABLE).migrate();
    listener =
        new NotificationListener(
            () -> {
              try {
                return DriverManager.getConnection(url, Postgres.user(), "");
              } catch (SQLException e) {
                throw new IllegalStateException(e);
              }
            },
            TABLE,
            Set.of("eu"),
            wake,
            "test-listener");
  }

  @AfterEach
  void tearDown() {
    listener.stop();
    dataSource.close();
  }

  @Test
  void theseAreTheLongestNamesTheValidatorAccepts() {
    String[] parts = TABLE.toString().split("\\.");
    assertThrows(
        IllegalArgumentException.class, () -> OutboxTable.parse(parts[0] + "x." + parts[1]));
    assertThrows(
        IllegalArgumentException.class, () -> OutboxTable.parse(parts[0] + "." + parts[1] + "x"));
  }

  @Test
  void rowsAreInsertedNotifiedAndClaimed() throws SQLException {
    listener.start();
    // Woken once its LISTEN took effect (not by a notification): consume that, then insert. A
    // trigger and a listener whose shortened channel names differ hear nothing.
    await().atMost(Duration.ofSeconds(60)).until(wake::isSignalled);
    wake.await(Duration.ZERO);
    insert("eu");
    await().until(() -> listener.received() > 0);
    assertTrue(wake.isSignalled(), "the notification wakes the task");
    PostgresOutboxStore store =
        new PostgresOutboxStore(dataSource, TABLE, RelayClock.database(), null);
    var claim = new ClaimRequest("w", Set.of("eu"), 1000, Duration.ofSeconds(30), 5, true);
    assertEquals(inserted.get(), store.claim(claim).claimed().size());
  }

  @Test
  void theDerivedNamesAreTheNamesPostgresHolds() throws SQLException {
    assertDerivedNames(TABLE);
    // Shorter table names too: each length cuts the names differently, and Flyway's own names of
    // the history table (<history>_pk, <history>_s_idx) collide from a 62-byte history name on.
    for (int length = 40; length < 48; length++) {
      String prefix = "outbox_" + length + "_";
      OutboxTable table =
          OutboxTable.parse(SCHEMA + "." + prefix + "x".repeat(length - prefix.length()));
      assertEquals(
          Integer.parseInt(SchemaMigrator.CURRENT_VERSION),
          new SchemaMigrator(dataSource, table).migrate(),
          table.name());
      assertDerivedNames(table);
    }
  }

  private void assertDerivedNames(OutboxTable table) throws SQLException {
    String t = table.qualified();
    String name = table.name();
    assertEquals(
        objectNames(table, INDEXES),
        names(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                + " WHERE i.indrelid = to_regclass(?)",
            t),
        name + ": indexes");
    assertEquals(
        objectNames(table, CONSTRAINTS),
        names("SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(?)", t),
        name + ": constraints");
    assertEquals(
        objectNames(table, TRIGGERS),
        names("SELECT t.tgname" + TRIGGERS_OF_TABLE, t),
        name + ": triggers");
    String notifyFunction = unqualified(table.qualifiedNotifyFunction());
    assertEquals(
        Set.of(unqualified(table.qualifiedFunction()), notifyFunction),
        names("SELECT p.proname" + TRIGGERS_OF_TABLE, t),
        name + ": trigger functions");
    // V5 replaced the very function V3's trigger calls, which notifies on the listened channel.
    assertEquals(
        Set.of(notifyFunction),
        names(
            "SELECT p.proname"
                + TRIGGERS_OF_TABLE
                + " AND p.proname = ? AND strpos(p.prosrc, 'outbox_relay.notify') > 0"
                + " AND strpos(p.prosrc, 'pg_notify(''' || ? || '''') > 0",
            t,
            notifyFunction,
            table.notifyChannel()),
        name + ": notify function");
    assertEquals(
        Set.of(table.historyTable()),
        names(
            "SELECT relname FROM pg_class WHERE relnamespace = ?::regnamespace AND relname = ?",
            SCHEMA,
            table.historyTable()),
        name + ": history table");
    assertEquals(
        objectNames(table, "published_id_hash", "published_at_idx"),
        names(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                + " WHERE i.indrelid = to_regclass(?)",
            table.qualifiedPublishedLog()),
        name + ": published log and its indexes");
    assertEquals(Set.of(table.notifyChannel()), listeningChannels(table), name + ": channel");
    assertTrue(table.notifyChannel().getBytes(StandardCharsets.UTF_8).length <= 63);
  }

  private static Set<String> objectNames(OutboxTable table, String... suffixes) {
    Set<String> names = new TreeSet<>();
    for (String suffix : suffixes) {
      names.add(table.objectName(suffix));
    }
    return names;
  }

  /** What LISTEN registers for the channel: PostgreSQL cuts it to 63 bytes without a word. */
  private Set<String> listeningChannels(OutboxTable table) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute("LISTEN \"" + table.notifyChannel() + "\"");
      Set<String> channels = new TreeSet<>();
      try (ResultSet rs = s.executeQuery("SELECT pg_listening_channels()")) {
        while (rs.next()) {
          channels.add(rs.getString(1));
        }
      }
      s.execute("UNLISTEN *");
      return channels;
    }
  }

  private static String unqualified(String qualified) {
    return qualified.substring(qualified.lastIndexOf('.') + 1).replace("\"", "");
  }

  private Set<String> names(String sql, String... parameters) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < parameters.length; i++) {
        ps.setString(i + 1, parameters[i]);
      }
      Set<String> names = new TreeSet<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1));
        }
      }
      return names;
    }
  }

  private void insert(String key) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      new PostgresOutboxWriter(TABLE.tableName(), key)
          .enqueue(
              c,
              OutboxMessage.builder()
                  .aggregateType("order")
                  .aggregateId("a" + inserted.incrementAndGet())
                  .eventType("E")
                  .build());
      c.commit();
    }
  }

  private void exec(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
