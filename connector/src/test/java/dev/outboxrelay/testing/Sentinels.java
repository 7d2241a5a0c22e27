package dev.outboxrelay.testing;

import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.logging.log4j.Level;

/**
 * Secrets planted where a careless log line, metric or status would show them, and where to look
 * for them: every log event of the test JVM from the moment they are watched (through {@link
 * LogCapture}, whatever the logger and level), every MBean, and any text a test collects (REST
 * statuses, validation errors).
 */
public final class Sentinels implements AutoCloseable {
  private final LogCapture logs = LogCapture.get();
  private final Set<String> values = new LinkedHashSet<>();

  private Sentinels() {
    logs.stopWatching(); // hits of earlier watches are not this test's
  }

  /** From now on, any log event containing one of {@code values}, at any level, is a leak. */
  public static Sentinels watch(String... values) {
    Sentinels sentinels = new Sentinels();
    sentinels.values.addAll(List.of(values));
    sentinels.logs.watch(values);
    return sentinels;
  }

  /**
   * Also {@code value}: in log events only at {@code level} or more severe, everywhere else always.
   */
  public Sentinels watchFrom(Level level, String value) {
    values.add(value);
    logs.watchFrom(level, value);
    return this;
  }

  public Set<String> values() {
    return Set.copyOf(values);
  }

  /** Asserts that {@code text} (found at {@code where}) carries none of the sentinels. */
  public void assertAbsent(String where, String text) {
    for (String sentinel : values) {
      assertFalse(text.contains(sentinel), () -> where + " leaks " + sentinel + ": " + text);
    }
  }

  /** MBeans whose domain starts with {@code domainPrefix} that show a sentinel, one line a hit. */
  public List<String> inMBeans(String domainPrefix) {
    return ConnectMBeans.leaks(domainPrefix, values);
  }

  /**
   * Log events since {@link #watch} that carry a sentinel, one line per sentinel and event, except
   * those of loggers whose names start with one of {@code ignoredLoggers}.
   */
  public List<String> inLogs(String... ignoredLoggers) {
    return logs.leaks(ignoredLoggers);
  }

  /** Stops watching the logs. */
  @Override
  public void close() {
    logs.stopWatching();
  }
}
