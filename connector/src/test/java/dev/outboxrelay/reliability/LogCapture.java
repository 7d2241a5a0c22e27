package dev.outboxrelay.reliability;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
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
 * Every log event of the test JVM, from every logger: a Log4j2 appender added programmatically to
 * the root logger (and to any logger that does not pass events up), plus a handler on the root of
 * java.util.logging (the PostgreSQL driver logs there). Each event is rendered once, with its
 * logger, thread, context data (MDC) and the whole stack trace of its exception, causes and
 * suppressed included, and checked against the sentinels registered at that moment. Events of
 * {@code dev.outboxrelay} are also kept, so tests can read the relay's own lines (claim-lost).
 */
final class LogCapture {
  /**
   * Loggers that are not the worker or the plugin, so not scanned for sentinels: the test kit's
   * REST client logs the requests the test itself sends (a curl transcript, connector configs
   * included), and the embedded PostgreSQL library relays the database server's own log (a separate
   * process in production; PostgreSQL logs every error message it raises).
   */
  static final List<String> NOT_THE_RELAY =
      List.of("org.apache.kafka.connect.util.clusters", "io.zonky.test.db.postgres");

  private static final Pattern CLAIM_LOST =
      Pattern.compile("Claim lost: outcome (\\S+) not recorded for message_id=(\\S+) ");
  private static final Pattern TASK_CONTEXT = Pattern.compile("\\[([^|\\]]+)\\|task-(\\d+)]");

  private static LogCapture installed;

  /** Sentinel to the least severe level (Log4j2 int level) at which it must not appear. */
  private final Map<String, Integer> sentinels = new ConcurrentHashMap<>();

  private final ConcurrentLinkedQueue<String> leaks = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<Line> relayLines = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
  private final AtomicLong events = new AtomicLong();

  /** One line of the relay's own logging. */
  record Line(String level, String logger, String context, String message) {
    /** The connector and task from Connect's MDC, e.g. {@code [orders|task-1]}. */
    String connector() {
      Matcher m = TASK_CONTEXT.matcher(context);
      return m.find() ? m.group(1) : "";
    }

    int task() {
      Matcher m = TASK_CONTEXT.matcher(context);
      return m.find() ? Integer.parseInt(m.group(2)) : -1;
    }
  }

  /** A stale write the relay rejected: message id, outcome kind, connector and task. */
  record ClaimLost(String messageId, String outcome, String connector, int task) {}

  private LogCapture() {}

  static synchronized LogCapture get() {
    if (installed == null) {
      installed = new LogCapture();
      installed.install();
    }
    return installed;
  }

  private void install() {
    LoggerContext context = (LoggerContext) LogManager.getContext(false);
    Configuration config = context.getConfiguration();
    Appender appender = new Appender(this);
    appender.start();
    config.addAppender(appender);
    for (LoggerConfig logger : config.getLoggers().values()) {
      if (!logger.isAdditive() || logger == config.getRootLogger()) {
        logger.addAppender(appender, Level.ALL, null);
      }
    }
    config.getRootLogger().addAppender(appender, Level.ALL, null);
    context.updateLoggers();
    java.util.logging.Logger.getLogger("").addHandler(new JulHandler(this));
  }

  /** From now on, any event containing one of {@code values}, at any level, is a leak. */
  void watch(String... values) {
    for (String v : values) {
      sentinels.put(v, Level.ALL.intLevel());
    }
  }

  /** From now on, an event at {@code level} or more severe containing {@code value} is a leak. */
  void watchFrom(Level level, String value) {
    sentinels.put(value, level.intLevel());
  }

  /**
   * Lets every event of {@code loggers} through (Level.ALL) until the returned handle is closed,
   * which restores their previous levels.
   */
  static AutoCloseable everyLevelOf(String... loggers) {
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

  void unwatchAll() {
    sentinels.clear();
  }

  /** Events that contained a watched sentinel, rendered, since the last {@link #clearLeaks}. */
  List<String> leaks() {
    return new ArrayList<>(leaks);
  }

  void clearLeaks() {
    leaks.clear();
  }

  long events() {
    return events.get();
  }

  List<Line> relayLines() {
    return new ArrayList<>(relayLines);
  }

  /** A mark in the relay's lines: what was logged after it is {@link #relayLinesSince}. */
  int mark() {
    return relayLines.size();
  }

  List<Line> relayLinesSince(int mark) {
    List<Line> all = relayLines();
    return all.subList(Math.min(mark, all.size()), all.size());
  }

  /** Every "Claim lost" line logged so far, optionally only those of {@code connector}. */
  List<ClaimLost> claimLost(String connector) {
    List<ClaimLost> lost = new ArrayList<>();
    for (Line line : relayLines) {
      Matcher m = CLAIM_LOST.matcher(line.message());
      if (m.find() && (connector == null || connector.equals(line.connector()))) {
        lost.add(new ClaimLost(m.group(2), m.group(1), line.connector(), line.task()));
      }
    }
    return lost;
  }

  long countRelayLines(String connector, String fragment) {
    return relayLines.stream()
        .filter(l -> connector == null || connector.equals(l.connector()))
        .filter(l -> l.message().contains(fragment))
        .count();
  }

  /** ERROR events of every logger, rendered, in order. */
  List<String> errors() {
    return new ArrayList<>(errors);
  }

  private void accept(String logger, int level, String rendered, boolean relay, Line line) {
    events.incrementAndGet();
    if (rendered.startsWith("ERROR") || rendered.startsWith("SEVERE")) {
      errors.add(rendered);
    }
    if (relay) {
      relayLines.add(line);
    }
    if (NOT_THE_RELAY.stream().anyMatch(logger::startsWith)) {
      return;
    }
    for (Map.Entry<String, Integer> watched : sentinels.entrySet()) {
      String sentinel = watched.getKey();
      if (level <= watched.getValue() && rendered.contains(sentinel)) {
        leaks.add("[" + sentinel + "] " + rendered);
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

  private static final class Appender extends AbstractAppender {
    private final LogCapture capture;

    Appender(LogCapture capture) {
      super("reliability-capture", null, null, true, Property.EMPTY_ARRAY);
      this.capture = capture;
    }

    @Override
    public void append(LogEvent event) {
      String logger = String.valueOf(event.getLoggerName());
      String message = event.getMessage() == null ? "" : event.getMessage().getFormattedMessage();
      String context = String.valueOf(event.getContextData().toMap());
      String rendered =
          event.getLevel()
              + " ["
              + event.getThreadName()
              + "] "
              + logger
              + " "
              + context
              + " - "
              + message
              + "\n"
              + stackTrace(event.getThrown());
      boolean relay = logger.startsWith("dev.outboxrelay") && !logger.contains("reliability");
      capture.accept(
          logger,
          event.getLevel().intLevel(),
          rendered,
          relay,
          relay ? new Line(event.getLevel().name(), logger, context, message) : null);
    }
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

  private static final class JulHandler extends Handler {
    private final LogCapture capture;

    JulHandler(LogCapture capture) {
      this.capture = capture;
    }

    @Override
    public void publish(LogRecord record) {
      String message = record.getMessage();
      Object[] params = record.getParameters();
      if (params != null) {
        for (Object p : params) {
          message = message + " " + p;
        }
      }
      String logger = String.valueOf(record.getLoggerName());
      capture.accept(
          logger,
          log4jLevel(record.getLevel()).intLevel(),
          record.getLevel()
              + " "
              + logger
              + " - "
              + message
              + "\n"
              + stackTrace(record.getThrown()),
          false,
          null);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  }
}
