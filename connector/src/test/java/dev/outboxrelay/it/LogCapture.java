package dev.outboxrelay.it;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.SimpleFormatter;
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
 * appender is added to the root logger at runtime, so log4j2-test.xml stays as it is.
 *
 * <p>Every event is checked for the registered sentinels as it is logged, whatever its level, so a
 * secret cannot slip through because the event was not kept. Events of INFO and above, and all
 * events of {@code dev.outboxrelay}, are kept for tests to search.
 */
final class LogCapture {
  /** One log event, flattened to text as it was logged. */
  record Event(
      long seq,
      String level,
      String logger,
      String thread,
      String message,
      String thrown,
      Map<String, String> context) {

    /** Everything about the event that a reader of the log could see. */
    String fullText() {
      return level + " " + logger + " [" + thread + "] " + context + " " + message + "\n" + thrown;
    }

    /** Connect's logging context, e.g. "[my-connector|task-0] ". */
    String connectContext() {
      return context.getOrDefault("connector.context", "");
    }
  }

  private static final int MAX_KEPT = 400_000;
  private static final LogCapture INSTANCE = new LogCapture();
  private static final String APPENDER = "outbox-it-capture";
  private static boolean julInstalled;
  // java.util.logging holds loggers weakly: keep the ones whose level we change.
  private static final java.util.logging.Logger JUL_ROOT = java.util.logging.Logger.getLogger("");
  private static final java.util.logging.Logger JUL_DRIVER =
      java.util.logging.Logger.getLogger("org.postgresql");

  private final AtomicLong sequence = new AtomicLong();
  private final Queue<Event> kept = new ConcurrentLinkedQueue<>();
  private final AtomicInteger keptCount = new AtomicInteger();
  private final Set<String> sentinels = ConcurrentHashMap.newKeySet();
  private final Queue<Event> sentinelHits = new ConcurrentLinkedQueue<>();
  private final AtomicLong scanned = new AtomicLong();

  private LogCapture() {}

  /**
   * Attaches the capture to Log4j2's root logger and to java.util.logging's root; idempotent, and
   * attaches again should something have replaced Log4j2's configuration meanwhile.
   */
  static synchronized LogCapture install() {
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

  static LogCapture get() {
    return install();
  }

  private void record(LogEvent event) {
    String thrown = "";
    if (event.getThrown() != null) {
      StringWriter out = new StringWriter();
      event.getThrown().printStackTrace(new PrintWriter(out));
      thrown = out.toString();
    }
    Map<String, String> context = new HashMap<>(event.getContextData().toMap());
    keep(
        new Event(
            sequence.incrementAndGet(),
            event.getLevel().name(),
            event.getLoggerName(),
            event.getThreadName(),
            event.getMessage().getFormattedMessage(),
            thrown,
            context),
        event.getLevel().isMoreSpecificThan(Level.INFO)
            || String.valueOf(event.getLoggerName()).startsWith("dev.outboxrelay"));
  }

  private void record(LogRecord record, String message) {
    String thrown = "";
    if (record.getThrown() != null) {
      StringWriter out = new StringWriter();
      record.getThrown().printStackTrace(new PrintWriter(out));
      thrown = out.toString();
    }
    keep(
        new Event(
            sequence.incrementAndGet(),
            "JUL-" + record.getLevel().getName(),
            record.getLoggerName(),
            Thread.currentThread().getName(),
            message,
            thrown,
            Map.of()),
        record.getLevel().intValue() >= java.util.logging.Level.INFO.intValue());
  }

  private void keep(Event event, boolean worthKeeping) {
    scanned.incrementAndGet();
    if (!sentinels.isEmpty()) {
      String text = event.fullText();
      for (String sentinel : sentinels) {
        if (text.contains(sentinel)) {
          sentinelHits.add(event);
          break;
        }
      }
    }
    if (worthKeeping) {
      kept.add(event);
      if (keptCount.incrementAndGet() > MAX_KEPT) {
        kept.poll();
        keptCount.decrementAndGet();
      }
    }
  }

  /** A position in the log: {@link #since} returns what was logged after it. */
  long mark() {
    return sequence.get();
  }

  /** How many events, of every level, the capture has seen so far. */
  long scannedCount() {
    return scanned.get();
  }

  List<Event> matching(long mark, Predicate<Event> filter) {
    List<Event> out = new ArrayList<>();
    for (Event e : kept) {
      if (e.seq() > mark && filter.test(e)) {
        out.add(e);
      }
    }
    return out;
  }

  /** Every later event, of any level and logger, is checked for these strings. */
  void watchFor(String... values) {
    sentinels.addAll(List.of(values));
  }

  void stopWatching() {
    sentinels.clear();
  }

  List<Event> sentinelHits() {
    return List.copyOf(sentinelHits);
  }

  /**
   * Makes every Log4j2 logger (the root and each one configured in log4j2-test.xml) and the
   * PostgreSQL driver's java.util.logging logger log everything, until the returned handle is
   * closed, which restores the previous levels.
   */
  static AutoCloseable everyLevel() {
    LoggerContext context = (LoggerContext) LogManager.getContext(false);
    Map<String, Level> previous = new HashMap<>();
    Map<String, Level> all = new HashMap<>();
    for (LoggerConfig logger : context.getConfiguration().getLoggers().values()) {
      previous.put(logger.getName(), logger.getLevel());
      all.put(logger.getName(), Level.ALL);
    }
    previous.put(LogManager.ROOT_LOGGER_NAME, context.getRootLogger().getLevel());
    all.put(LogManager.ROOT_LOGGER_NAME, Level.ALL);
    Configurator.setLevel(all);
    java.util.logging.Level driverLevel = JUL_DRIVER.getLevel();
    JUL_DRIVER.setLevel(java.util.logging.Level.ALL);
    return () -> {
      Configurator.setLevel(previous);
      JUL_DRIVER.setLevel(driverLevel);
    };
  }
}
