package dev.outboxrelay.reliability;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.ConnectMBeans;
import dev.outboxrelay.testing.LoadWriter;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One fault scenario: a fresh database, the main connector (instance key {@link #MAIN_KEY}, the one
 * under fault) and a second connector with another instance key ({@link #OTHER_KEY}) on the same
 * table, each with its own topic, and the application writing rows of both throughout. {@link
 * #verdict} runs the checks every scenario ends with.
 */
final class Scenario implements AutoCloseable {
  static final String MAIN_KEY = "orders";
  static final String OTHER_KEY = "billing";

  /** Lease of every connector in the suite; faults are made to outlast it. */
  static final Duration LEASE = Duration.ofSeconds(6);

  static final int LEGACY_ROWS = 25;
  static final int UNOWNED_ROWS = 25;
  static final String UNOWNED_KEY = "unowned";

  /**
   * The main connector's connections say so ({@code ApplicationName} in its URL, which the relay
   * honours): the audit then tells its changes from the other connector's whatever the owner
   * columns say, a release of another key's row (owner set to null) included.
   */
  static final String MAIN_APPLICATION = "outbox-relay-main";

  /** Long enough for a loaded 2-core machine; every wait is on a condition. */
  static final Duration DRAIN = Duration.ofMinutes(3);

  /** How long a worker (or a connector's tasks) may take to start on a loaded 2-core machine. */
  static final Duration STARTUP = Duration.ofSeconds(90);

  final String name;
  final ConnectCluster kit;
  final OutboxDb db;
  final String mainConnector;
  final String otherConnector;
  final String mainTopic;
  final String otherTopic;
  final Map<String, String> untouchedBefore;

  /** Where this scenario starts in the log: its connectors' lines all come after. */
  final long logMark = LogCapture.get().mark();

  private LoadWriter writer;
  private LoadWriter.Spec spec;

  /** Rows a test wrote besides the load's, by instance key: the verdict expects exactly these. */
  private final Map<String, Set<String>> extraRows = new ConcurrentHashMap<>();

  private final long startedNanos = System.nanoTime();

  /** Whether a connector of this scenario runs exactly once: tasks with transactions. */
  private volatile boolean transactional;

  /** When {@link #restartTasksTheBrokerFailed} last looked, on {@link System#nanoTime}. */
  private volatile long lastRestartLook = System.nanoTime() - RESTART_LOOK_INTERVAL.toNanos();

  private static final Duration RESTART_LOOK_INTERVAL = Duration.ofSeconds(1);

  private Scenario(ConnectCluster kit, String name, OutboxDb db) {
    this.name = name;
    this.kit = kit;
    this.db = db;
    this.mainConnector = name + "-orders";
    this.otherConnector = name + "-billing";
    this.mainTopic = "rel." + name + ".orders";
    this.otherTopic = "rel." + name + ".billing";
    this.untouchedBefore = untouched();
  }

  static Scenario open(ConnectCluster kit, String name) {
    return open(kit, name, OutboxDb.fresh("rel_" + name.replace('-', '_')));
  }

  static Scenario open(ConnectCluster kit, String name, String database) {
    return open(kit, name, OutboxDb.create(database));
  }

  private static Scenario open(ConnectCluster kit, String name, OutboxDb db) {
    prepare(db);
    Scenario s = new Scenario(kit, name, db);
    kit.createTopic(s.mainTopic, 3);
    kit.createTopic(s.otherTopic, 3);
    return s;
  }

  /**
   * Schema V1, then {@link #LEGACY_ROWS} rows without an instance key (as before V2), then the
   * current version, then {@link #UNOWNED_ROWS} rows of {@link #UNOWNED_KEY}, and the audit of
   * every update to a row that is not the main connector's (who held it before and after), kept by
   * a trigger.
   */
  private static void prepare(OutboxDb db) {
    db.migrateTo("1");
    db.update(
        "INSERT INTO outbox (message_id, aggregate_type, aggregate_id, event_type, payload)"
            + " SELECT 'legacy-' || g, 'order', 'legacy-agg-' || (g % 7), 'Legacy',"
            + " convert_to('{\"legacy\":' || g || '}', 'UTF8') FROM generate_series(1, ?) g",
        LEGACY_ROWS);
    db.migrate();
    db.update(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " payload) SELECT 'unowned-' || g, ?, 'order', 'u-agg-' || (g % 5), 'Unowned',"
            + " convert_to('{\"u\":' || g || '}', 'UTF8') FROM generate_series(1, ?) g",
        UNOWNED_KEY, UNOWNED_ROWS);
    db.update(
        "CREATE TABLE relay_audit (id BIGSERIAL PRIMARY KEY, message_id TEXT, instance_key TEXT,"
            + " old_owner TEXT, new_owner TEXT, old_status TEXT, new_status TEXT,"
            + " application TEXT)");
    db.update(
        "CREATE FUNCTION relay_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            + " INSERT INTO relay_audit (message_id, instance_key, old_owner, new_owner,"
            + " old_status, new_status, application) VALUES (OLD.message_id, OLD.instance_key,"
            + " OLD.lease_owner,"
            + " CASE WHEN TG_OP = 'UPDATE' THEN NEW.lease_owner END,"
            + " OLD.status, CASE WHEN TG_OP = 'UPDATE' THEN NEW.status ELSE 'DELETED' END,"
            + " current_setting('application_name'));"
            + " RETURN NULL; END $$");
    // Deletes too: publishing moves a row out of the table (schema version 9).
    db.update(
        "CREATE TRIGGER relay_audit AFTER UPDATE OR DELETE ON outbox FOR EACH ROW"
            + " WHEN (OLD.instance_key IS DISTINCT FROM '"
            + MAIN_KEY
            + "') EXECUTE FUNCTION relay_audit_row()");
  }

  /** Legacy rows (no instance key) and rows of a key nobody relays, as JSON, by message id. */
  Map<String, String> untouched() {
    return db.snapshot("instance_key IS NULL OR instance_key = ?", UNOWNED_KEY);
  }

  Map<String, String> mainConfig(int tasks) {
    Map<String, String> config = relayConfig(MAIN_KEY, tasks, mainTopic);
    config.put("connection.url", db.url() + "?ApplicationName=" + MAIN_APPLICATION);
    return config;
  }

  Map<String, String> otherConfig(int tasks) {
    return relayConfig(OTHER_KEY, tasks, otherTopic);
  }

  /** A connector config relaying {@code instanceKeys} to {@code topic}, with the suite's lease. */
  private Map<String, String> relayConfig(String instanceKeys, int tasks, String topic) {
    Map<String, String> config = ConnectCluster.relayConfig(db, instanceKeys, tasks);
    config.put("connection.pool.size", "3");
    config.put("topic.template", topic);
    config.put("claim.batch.size", "100");
    config.put("poll.interval.ms", "500");
    config.put("lease.duration.ms", Long.toString(LEASE.toMillis()));
    config.put("lease.renewal.interval.ms", Long.toString(LEASE.toMillis() / 4));
    config.put("metrics.backlog.interval.ms", "1000");
    return config;
  }

  void deploy(Map<String, String> main, Map<String, String> other) throws InterruptedException {
    transactional =
        "exactly-once".equals(main.get("delivery.guarantee"))
            || "exactly-once".equals(other.get("delivery.guarantee"));
    kit.deploy(otherConnector, other);
    kit.deploy(mainConnector, main);
  }

  /**
   * Exactly once, restarts a connector's failed tasks when every one of them failed on the broker's
   * InvalidTxnStateException: a race in its transaction coordinator on this loaded machine (seen in
   * CI, nothing of the relay's), after which Connect leaves the task FAILED until an operator or
   * Strimzi's auto-restart restarts it. A task failed for any other reason is left failed, and the
   * wait that looked fails.
   */
  void restartTasksTheBrokerFailed() {
    long now = System.nanoTime();
    if (!transactional || now - lastRestartLook < RESTART_LOOK_INTERVAL.toNanos()) {
      return; // a look a second: two status calls a look, beside waits polling every 20-100 ms
    }
    lastRestartLook = now;
    for (String connector : List.of(mainConnector, otherConnector)) {
      kit.restartTasksTheBrokerFailed(connector); // quiet while not deployed or rebalancing
    }
  }

  /** The usual load: {@code total} main rows in batches of 200 over 300 aggregates. */
  static LoadWriter.Spec load(int total) {
    return new LoadWriter.Spec(MAIN_KEY, OTHER_KEY, total, 200, 300, 5, 3000, 160);
  }

  LoadWriter startLoad(LoadWriter.Spec spec, LoadWriter.Batch extras) {
    this.spec = spec;
    writer = LoadWriter.load(db, spec, extras).start();
    return writer;
  }

  LoadWriter startLoad(LoadWriter.Spec spec) {
    return startLoad(spec, null);
  }

  /** What the application writes in this scenario. */
  LoadWriter.Spec spec() {
    return spec;
  }

  /** Waits until {@code rows} main rows are PUBLISHED: the fault then hits a flowing stream. */
  void awaitPublished(long rows) {
    awaitTrue(
        name + ": " + rows + " rows published",
        DRAIN,
        () -> {
          restartTasksTheBrokerFailed();
          writer.check();
          return db.count("PUBLISHED", MAIN_KEY) >= rows;
        });
  }

  /** Waits until the writer is done and nothing of either connector is left to deliver. */
  void awaitDrained() {
    awaitTrue(name + ": every row written and delivered", DRAIN, this::drained);
  }

  /** Whether the writer is done and nothing of either connector is left to deliver. */
  boolean drained() {
    restartTasksTheBrokerFailed();
    writer.check();
    return writer.done() && db.active(MAIN_KEY) == 0 && db.active(OTHER_KEY) == 0;
  }

  /** Waits for {@code condition}, polling, within {@code atMost}. */
  static void awaitTrue(String what, Duration atMost, Callable<Boolean> condition) {
    awaitTrue(what, atMost, Duration.ofMillis(100), condition);
  }

  static void awaitTrue(String what, Duration atMost, Duration poll, Callable<Boolean> condition) {
    await(what).atMost(atMost).pollInterval(poll).until(condition);
  }

  Duration elapsed() {
    return Duration.ofNanos(System.nanoTime() - startedNanos);
  }

  /** Appends a line of figures to target/reliability/figures.md, for docs/reliability.md. */
  static void report(String line) {
    Path file = Path.of("target", "reliability", "figures.md");
    try {
      Files.createDirectories(file.getParent());
      Files.writeString(
          file,
          line + System.lineSeparator(),
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  void assertUntouched() {
    assertEquals(untouchedBefore, untouched(), name + ": legacy and unowned rows changed");
  }

  /**
   * Deletes both connectors and waits until every database connection of the relay (pools and
   * listeners) is closed and every relay metric is unregistered: nothing leaks once the tasks are
   * gone, including tasks that failed, were restarted, hung or were abandoned as zombies.
   */
  void deleteAndAwaitReleased() {
    kit.deleteQuietly(mainConnector);
    kit.deleteQuietly(otherConnector);
    awaitTrue(
        name + ": relay connections and metrics released",
        Duration.ofSeconds(90),
        Duration.ofMillis(500),
        () ->
            db.backends(DataSourceFactory.APPLICATION_NAME) == 0
                && db.backends(DataSourceFactory.APPLICATION_NAME + "-listener") == 0
                && db.backends(MAIN_APPLICATION) == 0
                && ConnectMBeans.metricBeans(mainConnector).isEmpty()
                && ConnectMBeans.metricBeans(otherConnector).isEmpty());
  }

  /** Stops the writer, then {@link #deleteAndAwaitReleased}: a leak fails the scenario. */
  @Override
  public void close() {
    try {
      if (writer != null) {
        writer.close();
      }
      deleteAndAwaitReleased();
    } finally {
      db.close();
    }
  }

  /** Records a row the test wrote itself (a bad row, a sentinel row) under {@code instanceKey}. */
  void wroteExtraRow(String instanceKey, String messageId) {
    extraRows.computeIfAbsent(instanceKey, k -> ConcurrentHashMap.newKeySet()).add(messageId);
  }

  /** The rows the test wrote itself under {@code instanceKey}. */
  Set<String> extraRows(String instanceKey) {
    return Set.copyOf(extraRows.getOrDefault(instanceKey, Set.of()));
  }
}
