package dev.outboxrelay.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.store.BacklogSnapshot;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.SteppableTime;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.MetricValueProvider;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Registration against Kafka's own plugin metrics, as a Connect worker hands them to a task. */
class RelayMetricsTest {
  private final Metrics registry = new Metrics();

  @AfterEach
  void close() {
    registry.close();
  }

  private PluginMetricsImpl taskMetrics() {
    return new PluginMetricsImpl(registry, Map.of("connector", "orders", "task", "0"));
  }

  private Object value(String name) {
    for (Map.Entry<MetricName, ? extends org.apache.kafka.common.Metric> e :
        registry.metrics().entrySet()) {
      if (e.getKey().name().equals(name)) {
        return e.getValue().metricValue();
      }
    }
    return null;
  }

  /**
   * A worker before Kafka 4.1 offers no plugin metrics: the task registers beans of its own, under
   * the name Connect gives plugin metrics, so that the same JMX exporter rules read them, and
   * nothing else (its registry's count of metrics is the worker's bean). A replacement started
   * while they are registered runs without, as with plugin metrics.
   */
  @Test
  void withoutPluginMetricsTheTaskRegistersItsOwnBeansUnderTheSameName() throws Exception {
    MBeanServer server = ManagementFactory.getPlatformMBeanServer();
    ObjectName bean = new ObjectName("kafka.connect:type=plugins,connector=older-worker,task=3");
    // The worker's own registry, with the bean of its count of metrics
    Metrics worker =
        new Metrics(
            new org.apache.kafka.common.metrics.MetricConfig(),
            List.of(new JmxReporter()),
            org.apache.kafka.common.utils.Time.SYSTEM,
            new KafkaMetricsContext("kafka.connect"));
    Set<ObjectName> before = connectBeans(server);
    assertTrue(before.contains(new ObjectName("kafka.connect:type=kafka-metrics-count")));
    RelayMetrics.PluginMetricsSource none =
        () -> {
          throw new UnsupportedOperationException("no plugin metrics");
        };
    RelayMetrics metrics = new RelayMetrics();
    metrics.register(none, true, "older-worker", 3);
    metrics.published.set(2);
    metrics.recordOutcomeWrite(12);

    assertEquals(2.0, server.getAttribute(bean, "published-total"));
    assertEquals(12.0, server.getAttribute(bean, "outcome-write-latency-max-ms"));
    assertEquals(Double.NaN, server.getAttribute(bean, "lag-ms"), "not read yet");
    Set<ObjectName> added = connectBeans(server);
    added.removeAll(before);
    assertEquals(Set.of(bean), added, "only the task's own bean");

    RelayMetrics replacement = new RelayMetrics();
    replacement.register(none, true, "older-worker", 3);
    replacement.published.set(5);
    assertEquals(2.0, server.getAttribute(bean, "published-total"), "the old bean stays");
    replacement.unregister();
    assertTrue(server.isRegistered(bean), "and is not the replacement's to remove");

    metrics.unregister();
    assertFalse(server.isRegistered(bean));
    assertEquals(before, connectBeans(server), "no other bean registered or removed");
    worker.close();
  }

  @Test
  void aReplacementStartsWhileTheOldInstanceStillHoldsTheNamesAndTakesThemOnItsNextStart() {
    RelayMetrics old = new RelayMetrics();
    old.register(this::taskMetrics, false, "orders", 0);
    old.claimed.set(7);
    assertEquals(7.0, ((Number) value("claimed-total")).doubleValue());

    // Connect starts the replacement while the old instance's thread has not returned.
    RelayMetrics replacement = new RelayMetrics();
    // does not throw: the task must not fail for this
    replacement.register(this::taskMetrics, false, "orders", 0);
    replacement.claimed.set(3);
    assertEquals(7.0, ((Number) value("claimed-total")).doubleValue(), "the old names stay");
    replacement.recordOutcomeWrite(5); // and recording without exposed metrics is harmless

    old.unregister();
    assertTrue(value("claimed-total") == null, "the old instance removed its names");
    RelayMetrics next = new RelayMetrics();
    next.register(this::taskMetrics, false, "orders", 0);
    next.claimed.set(1);
    assertEquals(1.0, ((Number) value("claimed-total")).doubleValue());
    next.recordOutcomeWrite(5);
    assertEquals(5.0, ((Number) value("outcome-write-latency-max-ms")).doubleValue());
  }

  /**
   * A replacement that found the names taken takes them once the old instance released them, tried
   * again from its polls every {@link RelayMetrics#REGISTRATION_RETRY}, not only at its next
   * restart: its lost claims and late acknowledgements were unseen meanwhile. A stopped instance
   * never registers later.
   */
  @Test
  void aReplacementThatFoundTheNamesTakenTakesThemOnceReleased() {
    RelayMetrics old = new RelayMetrics();
    old.register(this::taskMetrics, false, "orders", 0);
    old.claimed.set(7);
    MockTime time = new MockTime();
    RelayMetrics replacement = new RelayMetrics(time);
    replacement.register(this::taskMetrics, false, "orders", 0);
    replacement.claimLost.set(2);

    time.sleep(RelayMetrics.REGISTRATION_RETRY.toMillis());
    replacement.retryRegistrationIfDue();
    assertEquals(7.0, ((Number) value("claimed-total")).doubleValue(), "still the old names");

    old.unregister();
    time.sleep(RelayMetrics.REGISTRATION_RETRY.toMillis() - 1);
    replacement.retryRegistrationIfDue();
    assertTrue(value("claim-lost-total") == null, "not due yet");
    time.sleep(1);
    replacement.retryRegistrationIfDue();
    assertEquals(2.0, ((Number) value("claim-lost-total")).doubleValue(), "the replacement's");

    RelayMetrics stopped = new RelayMetrics(time);
    stopped.register(this::taskMetrics, false, "orders", 0); // taken by the replacement
    stopped.unregister();
    replacement.unregister();
    time.sleep(RelayMetrics.REGISTRATION_RETRY.toMillis());
    stopped.retryRegistrationIfDue();
    assertTrue(value("claim-lost-total") == null, "a stopped instance registers nothing later");
  }

  /**
   * A worker shares plugin-metric sensors by name across all its tasks: two tasks on one worker
   * keep their own latency figures, and one that stops leaves the other's.
   */
  @Test
  void twoTasksOnOneWorkerKeepTheirOwnLatencyFigures() {
    RelayMetrics task0 = new RelayMetrics();
    task0.register(this::taskMetrics, false, "orders", 0);
    RelayMetrics task1 = new RelayMetrics();
    task1.register(
        () -> new PluginMetricsImpl(registry, Map.of("connector", "orders", "task", "1")),
        false,
        "orders",
        1);

    task0.recordOutcomeWrite(500);

    assertEquals(500.0, latencyMax("0"));
    assertFalse(latencyMax("1") == 500.0, "task 1 recorded nothing");
    task1.unregister();
    assertEquals(500.0, latencyMax("0"), "task 0's figures outlive task 1");
    task0.unregister();
  }

  private double latencyMax(String task) {
    return registry.metrics().entrySet().stream()
        .filter(
            e ->
                e.getKey().name().equals("outcome-write-latency-max-ms")
                    && task.equals(e.getKey().tags().get("task")))
        .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue())
        .findFirst()
        .orElseThrow(() -> new AssertionError("no latency metric of task " + task));
  }

  @Test
  void unregisterRemovesEverythingAndIsIdempotent() {
    RelayMetrics metrics = new RelayMetrics();
    metrics.register(this::taskMetrics, false, "orders", 0);
    assertFalse(registry.metrics().keySet().stream().noneMatch(n -> n.group().equals("plugins")));
    metrics.unregister();
    metrics.unregister();
    assertTrue(registry.metrics().keySet().stream().noneMatch(n -> n.group().equals("plugins")));
  }

  @Test
  void onlyTheTaskThatReadsTheBacklogExportsItSoThatItsAbsenceShows() {
    RelayMetrics other = new RelayMetrics();
    other.register(this::taskMetrics, false, "orders", 0);
    assertTrue(value("claimed-total") != null);
    assertNull(value("lag-ms"), "a zero here would hide a backlog when the reading task is down");
    assertNull(value("backlog-pending-records"));
    other.unregister();

    RelayMetrics first = new RelayMetrics();
    first.register(this::taskMetrics, true, "orders", 0);
    first.recordBacklog(backlog(Duration.ZERO), Duration.ofSeconds(60));
    assertEquals(0.0, ((Number) value("lag-ms")).doubleValue());
    assertEquals(0.0, ((Number) value("backlog-pending-records")).doubleValue());
    first.unregister();
  }

  /**
   * Until the reading task first reads the backlog (it started while the database was away, a
   * migration ran or an exactly-once recovery paged) its figures are NaN, not 0: an unread backlog
   * is not an empty one (the shipped rules count a NaN lag as missing). The parked rows, read alone
   * where counting failed, are known before the rest.
   */
  @Test
  void theBacklogFiguresAreNaNUntilRead() {
    MockTime time = new MockTime(0, 1_000_000, 0);
    RelayMetrics metrics = new RelayMetrics(time);
    metrics.register(this::taskMetrics, true, "orders", 0);
    time.sleep(600_000);
    metrics.backlogReadFailed();
    assertTrue(Double.isNaN(((Number) value("lag-ms")).doubleValue()));
    assertTrue(Double.isNaN(((Number) value("backlog-pending-records")).doubleValue()));

    metrics.recordParked(Map.of(MessageStatus.FAILED, 2L));
    assertEquals(2.0, ((Number) value("backlog-failed-records")).doubleValue());
    assertEquals(0.0, ((Number) value("backlog-exhausted-records")).doubleValue());
    assertTrue(Double.isNaN(((Number) value("backlog-pending-records")).doubleValue()));
    assertTrue(Double.isNaN(((Number) value("lag-ms")).doubleValue()));

    metrics.recordLag(Duration.ofSeconds(4), Duration.ofSeconds(60));
    assertEquals(4_000.0, ((Number) value("lag-ms")).doubleValue());
    metrics.unregister();
  }

  @Test
  void lagKeepsAgeingWhileTheBacklogCannotBeReadOrItsReadIsOverdue() {
    MockTime time = new MockTime(0, 1_000_000, 0);
    RelayMetrics metrics = new RelayMetrics(time);
    metrics.register(this::taskMetrics, true, "orders", 0);
    Duration overdue = Duration.ofSeconds(60); // twice a 30 s interval
    metrics.recordBacklog(backlog(Duration.ofSeconds(5)), overdue);
    time.sleep(20_000);
    assertEquals(5_000, metrics.lagMs(), "a fresh reading is reported as read");

    metrics.backlogReadFailed(); // the database is unavailable
    assertEquals(25_000, metrics.lagMs());
    assertEquals(25_000.0, ((Number) value("lag-ms")).doubleValue());
    time.sleep(60_000);
    assertEquals(85_000, metrics.lagMs());

    metrics.recordBacklog(backlog(Duration.ofSeconds(2)), overdue);
    assertEquals(2_000, metrics.lagMs(), "the next reading replaces the estimate");
    time.sleep(60_000);
    assertEquals(2_000, metrics.lagMs(), "not yet overdue");
    time.sleep(1);
    assertEquals(62_001, metrics.lagMs(), "overdue: the task thread is held up");

    metrics.recordBacklog(backlog(Duration.ZERO), overdue);
    assertEquals(0.0, ((Number) value("lag-ms")).doubleValue(), "no row waited");
    metrics.backlogReadFailed();
    assertEquals(0, metrics.lagMs(), "no row waited at the last reading");
    // Rows may have come since: not known to be 0 (a 0 hid a growing backlog from the lag alert).
    assertTrue(Double.isNaN(((Number) value("lag-ms")).doubleValue()), "read failed since");

    metrics.recordBacklog(backlog(Duration.ZERO), overdue);
    time.sleep(60_000);
    assertEquals(0.0, ((Number) value("lag-ms")).doubleValue(), "not yet overdue");
    time.sleep(1);
    assertTrue(Double.isNaN(((Number) value("lag-ms")).doubleValue()), "overdue");
    metrics.recordBacklog(backlog(Duration.ZERO), overdue);
    assertEquals(0.0, ((Number) value("lag-ms")).doubleValue(), "read again");
    metrics.unregister();
  }

  /**
   * A registration that fails for another reason than names taken neither fails the task's start
   * nor leaves behind what it registered before the failure: thrown from start(), it failed the
   * task over metrics, and what it left took the names of every later instance.
   */
  @Test
  void aRegistrationThatFailsLeavesNothingRegisteredAndDoesNotThrow() {
    long mark = LogCapture.get().mark();
    int[] added = {0};
    RelayMetrics metrics = new RelayMetrics();
    metrics.register(
        () ->
            new PluginMetricsImpl(registry, Map.of("connector", "orders", "task", "0")) {
              @Override
              public void addMetric(MetricName name, MetricValueProvider<?> provider) {
                if (++added[0] > 3) {
                  throw new IllegalStateException("refused");
                }
                super.addMetric(name, provider);
              }
            },
        true,
        "orders",
        0);

    assertEquals(4, added[0], "three registered before the failure");
    assertNull(value("claimed-total"), "removed again");
    assertEquals(
        1,
        LogCapture.get()
            .matching(mark, e -> e.message().contains("reason=METRICS_REGISTRATION_FAILED"))
            .size());
    metrics.unregister();
  }

  /**
   * A removal that throws at the stop (a metric the worker removed already) keeps the others'
   * going: one try around them all left every later metric, and the sink's close that unregisters a
   * pre-4.1 worker's bean, in place, the names taken from the task's next instance.
   */
  @Test
  void aRemovalThatThrowsAtTheStopDoesNotKeepTheOthersRegistered() {
    RelayMetrics metrics = new RelayMetrics();
    metrics.register(
        () ->
            new PluginMetricsImpl(registry, Map.of("connector", "orders", "task", "0")) {
              @Override
              public void removeMetric(MetricName name) {
                if (name.name().equals("claimed-total")) {
                  throw new IllegalStateException("removed already");
                }
                super.removeMetric(name);
              }
            },
        true,
        "orders",
        0);
    assertNotNull(value("published-total"));

    metrics.unregister();

    assertNull(value("published-total"), "removed after the one that threw");
    assertNull(value("lag-ms"));
  }

  /** Nor is the registration's retry held back by a wall clock stepped back (NTP). */
  @Test
  void aWallClockSteppedBackDoesNotHoldTheRegistrationsRetryBack() {
    RelayMetrics old = new RelayMetrics();
    old.register(this::taskMetrics, false, "orders", 0);
    SteppableTime time = new SteppableTime();
    RelayMetrics replacement = new RelayMetrics(time);
    replacement.register(this::taskMetrics, false, "orders", 0);
    replacement.claimLost.set(2);
    old.unregister();

    time.stepWallClock(Duration.ofHours(-1));
    time.sleep(RelayMetrics.REGISTRATION_RETRY.toMillis());
    replacement.retryRegistrationIfDue();
    assertEquals(2.0, ((Number) value("claim-lost-total")).doubleValue(), "the replacement's");
    replacement.unregister();
  }

  /** The lag ages by the monotonic clock: a wall clock stepped (NTP) is no part of it. */
  @Test
  void lagAgesWhateverTheWallClockIsSteppedBy() {
    SteppableTime time = new SteppableTime();
    RelayMetrics metrics = new RelayMetrics(time);
    metrics.recordBacklog(backlog(Duration.ofSeconds(5)), Duration.ofSeconds(60));
    time.stepWallClock(Duration.ofHours(1));
    assertEquals(5_000, metrics.lagMs(), "stepped forward: not overdue");

    metrics.backlogReadFailed();
    time.stepWallClock(Duration.ofHours(-2));
    time.sleep(20_000);
    assertEquals(25_000, metrics.lagMs(), "stepped back: it ages all the same");
  }

  private static BacklogSnapshot backlog(Duration lag) {
    return new BacklogSnapshot(Map.of(MessageStatus.PENDING, lag.isZero() ? 0L : 3L), lag);
  }

  /** The stop line: every count, the lost and late ones included, each once, with its value. */
  @Test
  void theSummaryNamesEveryCount() {
    RelayMetrics metrics = new RelayMetrics();
    metrics.lateAcks.set(3);
    metrics.claimLost.set(2);
    String summary = metrics.toString();

    assertTrue(summary.contains("lateAcks=3"), summary);
    assertTrue(summary.contains("claimLost=2"), summary);
    for (var field : RelayMetrics.class.getFields()) {
      if (field.getType() == java.util.concurrent.atomic.AtomicLong.class) {
        int named = (" " + summary).split(" " + field.getName() + "=", -1).length - 1;
        assertEquals(1, named, field.getName() + ": " + summary);
      }
    }
  }

  /**
   * Connect's beans but those of other connectors: tasks of the embedded clusters' connectors that
   * earlier test classes deleted may still be stopping, and their beans come and go meanwhile.
   */
  private static Set<ObjectName> connectBeans(MBeanServer server) throws Exception {
    Set<ObjectName> beans = new java.util.HashSet<>();
    for (ObjectName name : server.queryNames(new ObjectName("kafka.connect:*"), null)) {
      String connector = name.getKeyProperty("connector");
      if (connector == null || connector.equals("older-worker")) {
        beans.add(name);
      }
    }
    return beans;
  }
}
