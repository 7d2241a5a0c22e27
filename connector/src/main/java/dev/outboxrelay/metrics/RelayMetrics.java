package dev.outboxrelay.metrics;

import dev.outboxrelay.store.BacklogSnapshot;
import dev.outboxrelay.store.MessageStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Avg;
import org.apache.kafka.common.metrics.stats.Max;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A task's metrics. Counts are kept here (tests and logs read them) and exposed through Connect's
 * plugin metrics (KIP-877) where the worker offers them, as beans of the task's own under the same
 * names where it does not ({@link MetricsSink}). Names carry their unit; values are counts and
 * durations only, never identifiers or payloads. The reference is docs/metrics.md.
 */
public final class RelayMetrics {
  private static final Logger log = LoggerFactory.getLogger(RelayMetrics.class);

  public final AtomicLong claimed = new AtomicLong();
  public final AtomicLong published = new AtomicLong();
  public final AtomicLong claimLost = new AtomicLong();
  public final AtomicLong retried = new AtomicLong();
  public final AtomicLong exhausted = new AtomicLong();
  public final AtomicLong failed = new AtomicLong();
  public final AtomicLong deadLettered = new AtomicLong();
  public final AtomicLong released = new AtomicLong();
  public final AtomicLong abandonedReclaimed = new AtomicLong();
  public final AtomicLong leaseRenewalsLost = new AtomicLong();
  public final AtomicLong leaseRenewalsLocked = new AtomicLong();
  public final AtomicLong outcomesRowLocked = new AtomicLong();
  public final AtomicLong lateAcks = new AtomicLong();

  /**
   * Held leases a stop found no longer held (expired, or reclaimed by another task: a duplicate in
   * Kafka is possible). In the stop summary only: the stop unregisters the metrics at once.
   */
  public final AtomicLong leasesNotHeldAtStop = new AtomicLong();

  public final AtomicLong recoveredPublished = new AtomicLong();
  public final AtomicLong recoveredReleased = new AtomicLong();
  public final AtomicLong unconfirmedReleased = new AtomicLong();
  public final AtomicLong laterEpochRows = new AtomicLong();
  public final AtomicLong foreignLeasedRows = new AtomicLong();
  public final AtomicLong waitingOnKafka = new AtomicLong();
  public final AtomicLong taskUnresponsive = new AtomicLong();
  public final AtomicLong databaseErrors = new AtomicLong();
  public final AtomicLong cleanedUp = new AtomicLong();
  private volatile LongSupplier inFlightRecords = () -> 0;
  private volatile LongSupplier inFlightBytes = () -> 0;
  private final Time time;

  /**
   * The last backlog read, replaced whole: a scrape never pairs one read's lag with another's time.
   */
  private volatile BacklogRead lastRead = new BacklogRead(0, 0, Long.MAX_VALUE, false);

  /**
   * Whether a backlog read has found the lag, and which statuses it has counted: until then their
   * figures are NaN, not 0 (task 0 started while the database was away, a migration ran or an
   * exactly-once recovery paged), so that no alert takes an unread backlog for an empty one.
   */
  private volatile boolean lagRead;

  private final Set<MessageStatus> counted = ConcurrentHashMap.newKeySet();

  private final LinkedHashMap<MessageStatus, AtomicLong> backlog = new LinkedHashMap<>();

  private final List<MetricName> registered = new ArrayList<>();
  private MetricsSink sink;

  /**
   * A registration whose names were taken, tried again from poll(); written under this, volatile so
   * that each poll reads it without the lock.
   */
  private volatile Registration waitingRegistration;

  private long nextRegistrationMs;
  private volatile Sensor outcomeWriteSensor;

  /**
   * This instance's own sensor name: a worker's plugin metrics share sensors by name across every
   * task it runs, so a fixed name gave all of them one sensor (each task's latency recorded into
   * every task's figures) and the first task to stop removed the others' latency metrics. The name
   * is never exported; the metrics' names and tags are.
   */
  private final String outcomeWriteSensorName =
      "outbox-relay-outcome-write-latency-" + UUID.randomUUID();

  public RelayMetrics() {
    this(Time.SYSTEM);
  }

  /**
   * With the clock that ages {@code lag-ms} between backlog reads (see {@link #lagMs()}) and spaces
   * the registration's retries: its monotonic one ({@link Time#hiResClockMs()}), as both are
   * durations. On the wall clock, one stepped back held the lag at its last reading for as long,
   * and one stepped forward added the step to it.
   */
  public RelayMetrics(Time time) {
    this.time = time;
    for (MessageStatus s : MessageStatus.values()) {
      if (s != MessageStatus.PUBLISHED) {
        backlog.put(s, new AtomicLong());
      }
    }
  }

  /**
   * Exposes every metric: through Connect's plugin metrics (Kafka 4.1 and later), else, on older
   * workers, as beans of the task's own under the same names ({@link JmxMetricsSink}).
   *
   * @param readsBacklog this task reads the backlog figures ({@code lag-ms}, {@code backlog-*}):
   *     only such a task registers them, so that when it is down they are missing, not zero
   * @param connector the connector's name and {@code task} the task's number, which name the beans
   *     on older workers (Connect adds both itself to plugin metrics)
   */
  public synchronized void register(
      PluginMetricsSource source, boolean readsBacklog, String connector, int task) {
    Registration asked = new Registration(source, readsBacklog, connector, task);
    boolean registered;
    try {
      registered = tryRegister(asked);
    } catch (RuntimeException e) { // NOPMD: metrics must never fail the task, nor its start
      notExposed(e);
      return;
    }
    if (!registered) {
      log.warn(
          "Metrics of an earlier instance of this task are still registered; this instance runs"
              + " without exposing its metrics, and tries again every {} s"
              + " (reason=METRICS_NAME_TAKEN)",
          REGISTRATION_RETRY.toSeconds());
      waitingRegistration = asked;
      nextRegistrationMs = time.hiResClockMs() + REGISTRATION_RETRY.toMillis();
    }
  }

  /**
   * Registers again, once {@link #REGISTRATION_RETRY} has passed, a registration whose names an
   * earlier instance of the task held (its thread had not returned when this one started): that
   * instance frees them when its stop ends, and this one would otherwise run without exposed
   * metrics, its lost claims and late acknowledgements unseen, until its next restart. Called from
   * each {@code poll()}; cheap when there is nothing to retry.
   */
  public void retryRegistrationIfDue() {
    if (waitingRegistration != null) { // nearly always null: no lock taken on the poll's path
      retryRegistration();
    }
  }

  private synchronized void retryRegistration() {
    Registration asked = waitingRegistration;
    if (asked == null || time.hiResClockMs() < nextRegistrationMs) {
      return;
    }
    boolean registered;
    try {
      registered = tryRegister(asked);
    } catch (RuntimeException e) { // NOPMD: metrics must never fail the task's poll
      notExposed(e);
      return;
    }
    if (registered) {
      waitingRegistration = null;
      log.info("Metrics of this task exposed: the earlier instance released their names");
    } else {
      waitingRegistration = asked; // the failed attempt's unregister() forgot it
      nextRegistrationMs = time.hiResClockMs() + REGISTRATION_RETRY.toMillis();
    }
  }

  /**
   * Registering failed for another reason than names taken (a JMX error, a metric the worker
   * refused): what was registered before the failure goes, the task's own bean with it (left, it
   * would take the names of every later instance), and the task runs without exposed metrics.
   */
  private void notExposed(RuntimeException e) {
    unregister();
    log.warn(
        "Metrics of this task not exposed: registering them failed"
            + " (reason=METRICS_REGISTRATION_FAILED, error={}); not tried again until the task"
            + " restarts",
        e.getClass().getName());
  }

  /**
   * False when an earlier instance of this task still holds the names: its thread has not returned
   * (Connect gave up on a graceful stop). Runs without exposed metrics rather than fail.
   */
  private boolean tryRegister(Registration asked) {
    MetricsSink opened;
    try {
      PluginMetrics metrics = asked.source().get();
      if (metrics == null) {
        return true;
      }
      opened = new PluginMetricsSink(metrics);
    } catch (LinkageError | UnsupportedOperationException e) {
      opened = JmxMetricsSink.open(asked.connector(), asked.task()); // worker predates KIP-877
      if (opened == null) {
        return false;
      }
    }
    this.sink = opened;
    try {
      registerAll(asked.readsBacklog());
      return true;
    } catch (IllegalArgumentException e) {
      unregister();
      return false;
    }
  }

  /** What {@link #register} was asked. */
  private record Registration(
      PluginMetricsSource source, boolean readsBacklog, String connector, int task) {}

  /** How often a registration whose names were taken is tried again. */
  static final Duration REGISTRATION_RETRY = Duration.ofSeconds(10);

  private void registerAll(boolean readsBacklog) {
    gauge("claimed-total", "Rows claimed under a lease (records).", claimed::get);
    gauge(
        "published-total",
        "Rows recorded PUBLISHED after Kafka acknowledged them.",
        published::get);
    gauge(
        "claim-lost-total",
        "Claims lost to another owner, at an outcome write or a renewal (possible duplicate).",
        claimLost::get);
    gauge("retried-total", "Rows scheduled for another attempt (AMBIGUOUS).", retried::get);
    gauge("exhausted-total", "Rows that spent their attempt budget (EXHAUSTED).", exhausted::get);
    gauge("failed-total", "Rows recorded FAILED (unpublishable, not dead-lettered).", failed::get);
    gauge(
        "dead-lettered-total",
        "Rows sent to the dead-letter topic and recorded FAILED.",
        deadLettered::get);
    gauge("released-total", "Claims given back without being sent.", released::get);
    gauge(
        "abandoned-reclaimed-total",
        "Rows claimed again alone: after another owner's lease expired (possible duplicate);"
            + " exactly-once, suspects a recovery released twice (no duplicate), and rows of"
            + " another connector's expired lease a recovery released (possible duplicate).",
        abandonedReclaimed::get);
    gauge("lease-renewal-lost-total", "Held leases found lost at renewal.", leaseRenewalsLost::get);
    gauge(
        "lease-renewal-locked-total",
        "Held leases not renewed because another session held their row's lock (each renewal).",
        leaseRenewalsLocked::get);
    gauge(
        "outcome-row-locked-total",
        "Outcomes set aside because another session held their row's lock past the write's lock"
            + " wait (each time set aside).",
        outcomesRowLocked::get);
    gauge(
        "late-ack-total",
        "Outcomes the task could no longer write (late acknowledgements, unqueued FAILED).",
        lateAcks::get);
    gauge(
        "recovered-published-total",
        "Exactly-once: rows recorded PUBLISHED from committed offsets, not sent again.",
        recoveredPublished::get);
    gauge(
        "recovered-released-total",
        "Exactly-once: claims of earlier instances Kafka never committed, released to be sent.",
        recoveredReleased::get);
    gauge(
        "later-epoch-rows",
        "Exactly-once: rows of this task's buckets found at its start or last sweep leased under"
            + " a later epoch than its own, leases expired, which nothing recovers.",
        laterEpochRows::get);
    gauge(
        "waiting-on-kafka",
        "1 while the task thread has waited in Kafka's producer for over half a lease (a broker"
            + " unreachable, a topic without metadata), its leases kept; else 0.",
        waitingOnKafka::get);
    gauge(
        "task-unresponsive",
        "1 while the task thread has not polled, and Kafka has acknowledged none of its records,"
            + " for over half a lease (stuck outside poll; not a task paused by Connect, which"
            + " keeps its leases): its leases are not renewed, and run out; else 0.",
        taskUnresponsive::get);
    gauge(
        "foreign-leased-rows",
        "Rows in flight under live leases of another connector's tasks (two connectors on one"
            + " instance key): at least once counted by task 0 with the backlog, exactly once by"
            + " each task among its buckets' rows.",
        foreignLeasedRows::get);
    gauge(
        "unconfirmed-claim-released-total",
        "Rows of a claim whose result never arrived (connection lost at COMMIT), released.",
        unconfirmedReleased::get);
    gauge(
        "database-errors-total",
        "Failed database operations (classified by SQLState).",
        databaseErrors::get);
    gauge("cleaned-up-total", "PUBLISHED rows deleted by retention cleanup.", cleanedUp::get);
    gauge(
        "in-flight-records",
        "Rows the task holds and has not yet resolved: records handed to Connect, a batch claimed"
            + " ahead, rows awaiting their park.",
        this::inFlight);
    gauge(
        "in-flight-bytes",
        "Estimated size of the rows the task holds and has not yet resolved, bytes.",
        this::inFlightBytes);
    if (readsBacklog) {
      figure(
          "lag-ms",
          "Age of the oldest row awaiting delivery, milliseconds (NaN until first read).",
          this::lagGauge);
      backlog.forEach(
          (status, value) ->
              figure(
                  "backlog-" + status.name().toLowerCase().replace('_', '-') + "-records",
                  "Rows of this connector's instance keys in status "
                      + status
                      + " (NaN until first counted).",
                  () -> counted.contains(status) ? value.get() : Double.NaN));
      figure(
          "retention-behind-ms",
          "How long since a retention run ended on full batches without one catching up since"
              + " (the published log grows), milliseconds; 0 once a run catches up.",
          this::retentionBehindMs);
    }
    outcomeWriteSensor = sink.addSensor(outcomeWriteSensorName);
    outcomeWriteSensor.add(
        sink.metricName(
            "outcome-write-latency-avg-ms",
            "Average duration of one fenced outcome write (a batch), milliseconds."),
        new Avg());
    outcomeWriteSensor.add(
        sink.metricName(
            "outcome-write-latency-max-ms",
            "Longest fenced outcome write (a batch) in the window, milliseconds."),
        new Max());
  }

  private void gauge(String name, String description, LongSupplier value) {
    figure(name, description, value::getAsLong);
  }

  /** A gauge that may be NaN: a figure not known yet. */
  private void figure(String name, String description, DoubleSupplier value) {
    MetricName metricName = sink.metricName(name, description);
    sink.addMetric(metricName, (config, now) -> value.getAsDouble());
    registered.add(metricName);
  }

  /**
   * Since when (task 0's monotonic clock) every retention run has ended on full batches; -1 while
   * retention keeps up (or runs not at all).
   */
  private volatile long retentionBehindSinceMs = -1;

  /** A retention run ended on a full batch; the first of a row marks when retention fell behind. */
  public void retentionBehind(long runStartMs) {
    if (retentionBehindSinceMs < 0) {
      retentionBehindSinceMs = runStartMs;
    }
  }

  /** A retention run deleted everything due. */
  public void retentionCaughtUp() {
    retentionBehindSinceMs = -1;
  }

  /** How long retention has been behind, in ms; 0 while it keeps up. */
  public long retentionBehindMs() {
    long since = retentionBehindSinceMs;
    return since < 0 ? 0 : Math.max(0, time.hiResClockMs() - since);
  }

  /** Where the in-flight figures are read: the task's ledger, at every read (never stale). */
  public void readInFlightFrom(LongSupplier records, LongSupplier bytes) {
    inFlightRecords = records;
    inFlightBytes = bytes;
  }

  public long inFlight() {
    return inFlightRecords.getAsLong();
  }

  public long inFlightBytes() {
    return inFlightBytes.getAsLong();
  }

  public void recordOutcomeWrite(long millis) {
    Sensor sensor = outcomeWriteSensor;
    if (sensor != null) {
      sensor.record(millis);
    }
  }

  /**
   * A backlog read.
   *
   * @param overdueAfter how long until the next read is overdue: the time to the next read and some
   *     slack
   */
  public void recordBacklog(BacklogSnapshot snapshot, Duration overdueAfter) {
    backlog.forEach((status, value) -> value.set(snapshot.count(status)));
    counted.addAll(backlog.keySet());
    recordLag(snapshot.lag(), overdueAfter);
  }

  /**
   * The lag alone, read where counting the backlog failed (it reads every row awaiting delivery,
   * and times out first): the backlog figures keep their last values.
   */
  public void recordLag(Duration lag, Duration overdueAfter) {
    lastRead = new BacklogRead(lag.toMillis(), time.hiResClockMs(), overdueAfter.toMillis(), false);
    lagRead = true;
  }

  /**
   * The parked rows alone (FAILED, EXHAUSTED), read where counting the backlog failed: the other
   * backlog figures keep their last values.
   */
  public void recordParked(Map<MessageStatus, Long> parked) {
    for (MessageStatus status : List.of(MessageStatus.FAILED, MessageStatus.EXHAUSTED)) {
      backlog.get(status).set(parked.getOrDefault(status, 0L));
      counted.add(status);
    }
  }

  /** The backlog could not be read (the database is unavailable): see {@link #lagMs()}. */
  public void backlogReadFailed() {
    BacklogRead read = lastRead;
    lastRead = new BacklogRead(read.lagMs(), read.atMs(), read.overdueAfterMs(), true);
  }

  /** One backlog read: the lag it found, when, when the next is overdue, and whether one failed. */
  private record BacklogRead(long lagMs, long atMs, long overdueAfterMs, boolean failedSince) {}

  /**
   * The age of the oldest undelivered row at the last backlog read. When the next read failed or is
   * overdue (an interval after it was due: the task thread is held up, e.g. blocked on a full
   * producer buffer), the age that row has now: it keeps growing, so a lag alert fires during a
   * database or broker outage instead of showing the figure from before it. No row at the last read
   * stays 0 here; the gauge is NaN then ({@link #lagGauge()}).
   */
  public long lagMs() {
    BacklogRead read = lastRead;
    long lag = read.lagMs();
    if (lag > 0 && stale(read)) {
      return lag + Math.max(0, time.hiResClockMs() - read.atMs());
    }
    return lag;
  }

  /**
   * {@code lag-ms}: {@link #lagMs()}, or NaN where it is not known: before task 0's first read, and
   * where no row waited at the last read and the next failed or is overdue. Rows may have come
   * since, written while the task thread is held up (a send blocked on a topic's metadata) or while
   * only the relay cannot reach the database; a 0 there hid a growing backlog from the lag alert,
   * where NaN lets OutboxRelayBacklogFiguresMissing fire.
   */
  public double lagGauge() {
    if (!lagRead) {
      return Double.NaN;
    }
    BacklogRead read = lastRead;
    return read.lagMs() == 0 && stale(read) ? Double.NaN : lagMs();
  }

  /** The next read after {@code read} failed, or is overdue. */
  private boolean stale(BacklogRead read) {
    return read.failedSince() || time.hiResClockMs() - read.atMs() > read.overdueAfterMs();
  }

  public long backlog(MessageStatus status) {
    AtomicLong value = backlog.get(status);
    return value == null ? 0 : value.get();
  }

  public synchronized void unregister() {
    waitingRegistration = null; // stopped: never registered later
    if (sink == null) {
      return;
    }
    // Each step alone: the worker may already have closed the plugin's metrics, and a removal
    // that throws must not keep the sink's close (the JMX bean's unregistration) from running,
    // or the task's next instance on this worker would find its name taken.
    for (MetricName name : registered) {
      quietly(() -> sink.removeMetric(name));
    }
    if (outcomeWriteSensor != null) {
      quietly(() -> sink.removeSensor(outcomeWriteSensorName));
    }
    quietly(sink::close);
    registered.clear();
    outcomeWriteSensor = null;
    sink = null;
  }

  private static void quietly(Runnable step) {
    try {
      step.run();
    } catch (RuntimeException e) {
      // Closed by the worker already: nothing left to remove.
    }
  }

  /**
   * Every count (and the last lag and rows in flight), for the line a task logs when it stops (the
   * summary a worker without plugin metrics has): a lost claim or a late acknowledgement must show
   * there too.
   */
  @Override
  public String toString() {
    LinkedHashMap<String, AtomicLong> counts = new LinkedHashMap<>();
    counts.put("claimed", claimed);
    counts.put("published", published);
    counts.put("claimLost", claimLost);
    counts.put("leaseRenewalsLost", leaseRenewalsLost);
    counts.put("leaseRenewalsLocked", leaseRenewalsLocked);
    counts.put("outcomesRowLocked", outcomesRowLocked);
    counts.put("lateAcks", lateAcks);
    counts.put("leasesNotHeldAtStop", leasesNotHeldAtStop);
    counts.put("unconfirmedReleased", unconfirmedReleased);
    counts.put("retried", retried);
    counts.put("exhausted", exhausted);
    counts.put("failed", failed);
    counts.put("deadLettered", deadLettered);
    counts.put("released", released);
    counts.put("abandonedReclaimed", abandonedReclaimed);
    counts.put("recoveredPublished", recoveredPublished);
    counts.put("recoveredReleased", recoveredReleased);
    counts.put("laterEpochRows", laterEpochRows);
    counts.put("foreignLeasedRows", foreignLeasedRows);
    counts.put("waitingOnKafka", waitingOnKafka);
    counts.put("taskUnresponsive", taskUnresponsive);
    counts.put("databaseErrors", databaseErrors);
    counts.put("cleanedUp", cleanedUp);
    StringBuilder line = new StringBuilder();
    counts.forEach(
        (name, count) ->
            line.append(line.isEmpty() ? "" : " ").append(name).append('=').append(count));
    double lag = lagGauge(); // as lag-ms shows it: unknown where it is NaN
    return line.append(" inFlight=")
        .append(inFlight())
        .append(" lagMs=")
        .append(Double.isNaN(lag) ? "unknown" : Long.toString((long) lag))
        .toString();
  }

  /**
   * Where the plugin metrics come from: the Connect context's getter, called through a class of its
   * own (not a lambda, whose linking would need {@code PluginMetrics}, absent before Kafka 4.1).
   */
  @FunctionalInterface
  public interface PluginMetricsSource {
    PluginMetrics get();
  }
}
