package dev.outboxrelay.config;

import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/** Bad values, one per case, shared by the parsing and the validation tests. */
final class BadConfigs {
  /** Keys whose rejected value must never appear in the error (it may be secret, SQL, or junk). */
  private static final Set<String> NEVER_ECHOED =
      Set.of(
          "connection.url", "outbox.table", "instance.keys", "topic.template", "dead.letter.topic");

  private BadConfigs() {}

  static Stream<Arguments> cases() {
    return Stream.of(
        // Connection
        Arguments.of("connection.url", ""),
        Arguments.of("connection.url", "postgresql://localhost/app"),
        Arguments.of("connection.url", "jdbc:mysql://localhost/app"),
        Arguments.of("connection.url", "JDBC:POSTGRESQL://localhost/app"),
        // A malformed %-escape: the JDK's decoder quotes the rest of the value (a password's).
        Arguments.of("connection.url", "jdbc:postgresql://localhost/app?password=p%zzsecret"),
        Arguments.of("connection.url", "jdbc:postgresql://localhost/app?user=app&password=secret%"),
        // A user and password before the host, which the driver would take for the host.
        Arguments.of("connection.url", "jdbc:postgresql://alice:s3cret@localhost:5432/app"),
        Arguments.of("connection.url", "postgresql://alice:s3cret@localhost/app"),
        // No '/' after the host, or more than one: the driver refuses it and logs the URL.
        Arguments.of("connection.url", "jdbc:postgresql://localhost:5432"),
        Arguments.of("connection.url", "jdbc:postgresql://localhost:5432?sslmode=require"),
        Arguments.of("connection.url", "jdbc:postgresql://localhost:5432/app/"),
        Arguments.of("connection.pool.size", "1"),
        Arguments.of("connection.pool.size", "65"),
        Arguments.of("connection.pool.size", "four"),
        Arguments.of("connection.pool.size", ""),
        Arguments.of("connection.timeout.ms", "249"),
        Arguments.of("connection.timeout.ms", "300001"),
        Arguments.of("connection.timeout.ms", "5s"),
        Arguments.of("statement.timeout.ms", "99"),
        Arguments.of("statement.timeout.ms", "86400001"),
        Arguments.of("statement.timeout.ms", "30s"),
        Arguments.of("socket.timeout.ms", "999"),
        Arguments.of("socket.timeout.ms", "86400001"),
        Arguments.of("socket.timeout.ms", "30000"),
        // Outbox
        Arguments.of("outbox.table", ""),
        Arguments.of("outbox.table", "outbox; drop table x"),
        Arguments.of("outbox.table", "\"x\""),
        Arguments.of("outbox.table", "x\"; drop table y; --"),
        Arguments.of("outbox.table", "Outbox"),
        Arguments.of("outbox.table", "a.b.c"),
        Arguments.of("outbox.table", "public."),
        Arguments.of("outbox.table", "1outbox"),
        Arguments.of("outbox.table", "o".repeat(49)),
        Arguments.of("instance.keys", ""),
        Arguments.of("instance.keys", ","),
        Arguments.of("instance.keys", "a,,b"),
        Arguments.of("instance.keys", "a, a"),
        Arguments.of("instance.keys", "a\u0001b"),
        Arguments.of("instance.keys", "a\u0000"),
        Arguments.of("instance.keys", "\u001bb"),
        Arguments.of("instance.keys", "k".repeat(201)),
        Arguments.of("instance.keys", "orders\u200b"), // a zero-width space: looks like "orders"
        Arguments.of("instance.keys", "a\u202eb"),
        Arguments.of("schema.migrate.on.start", "yes"),
        // Claiming
        Arguments.of("claim.batch.size", "0"),
        Arguments.of("claim.batch.size", "10001"),
        Arguments.of("poll.interval.ms", "9"),
        Arguments.of("poll.interval.ms", "600001"),
        Arguments.of("lease.duration.ms", "999"),
        Arguments.of("lease.duration.ms", "86400001"),
        Arguments.of("lease.renewal.interval.ms", "99"),
        Arguments.of("lease.renewal.interval.ms", "60000"),
        Arguments.of("max.attempts", "-1"),
        Arguments.of("max.attempts", "1000001"),
        Arguments.of("retry.backoff.initial.ms", "-1"),
        Arguments.of("retry.backoff.max.ms", "-1"),
        Arguments.of("retry.backoff.max.ms", "999"),
        Arguments.of("retry.backoff.initial.ms", "3153600000001"),
        Arguments.of("retry.backoff.max.ms", "3153600000001"),
        Arguments.of("retry.backoff.multiplier", "0.99"),
        Arguments.of("retry.backoff.multiplier", "100.5"),
        Arguments.of("retry.backoff.multiplier", "fast"),
        // Kafka's Range lets NaN through; the task would refuse it at start.
        Arguments.of("retry.backoff.multiplier", "NaN"),
        Arguments.of("retry.backoff.jitter", "NaN"),
        Arguments.of("retry.backoff.jitter", "-0.1"),
        Arguments.of("retry.backoff.jitter", "1.01"),
        Arguments.of("ordering.enabled", "maybe"),
        // Records
        Arguments.of("routing.convention", "kafka-connect"),
        Arguments.of("routing.convention", ""),
        Arguments.of("topic.template", "outbox.${unknown}"),
        Arguments.of("topic.template", "outbox.${Aggregate_Type}"),
        Arguments.of("topic.template", "outbox.${aggregate_type"),
        Arguments.of("topic.template", "outbox/${aggregate_type}"),
        Arguments.of("topic.template", "outbox ${aggregate_type}"),
        Arguments.of("topic.template", "$${aggregate_type}"),
        Arguments.of("topic.template", "${aggregate_type}${x; drop}"),
        Arguments.of("topic.template", ".."),
        Arguments.of("topic.template", "t".repeat(250)),
        Arguments.of("topic.template", "t".repeat(250) + "${event_type}"),
        Arguments.of("payload.format", "avro"),
        Arguments.of("record.timestamp", "log_append_time"),
        Arguments.of("payload.json.schema", "avro"),
        // With the default payload.format (bytes), which has no JSON to infer a schema from.
        Arguments.of("payload.json.schema", "inferred"),
        Arguments.of("payload.json.null.behavior", "drop"),
        Arguments.of("payload.max.bytes", "0"),
        Arguments.of("payload.max.bytes", "104857601"),
        Arguments.of("dead.letter.topic", "dead letters"),
        Arguments.of("dead.letter.topic", "."),
        Arguments.of("dead.letter.topic", "d".repeat(250)),
        Arguments.of("dead.letter.topic", "__consumer_offsets"),
        Arguments.of("topic.template", "__consumer_offsets"),
        Arguments.of("null.metadata.policy", "ignore"),
        // Maintenance
        Arguments.of("retention.published.ms", "-2"),
        Arguments.of("retention.published.ms", "forever"),
        // Past 5,000 years: a cut-off before the timestamp type's range failed every run.
        Arguments.of("retention.published.ms", "157680000000001"),
        Arguments.of("retention.published.ms", Long.toString(Long.MAX_VALUE)),
        Arguments.of("cleanup.interval.ms", "999"),
        Arguments.of("cleanup.interval.ms", "86400001"),
        Arguments.of("cleanup.batch.size", "0"),
        Arguments.of("cleanup.batch.size", "100001"),
        Arguments.of("metrics.backlog.interval.ms", "999"),
        Arguments.of("metrics.backlog.interval.ms", "3600001"),
        // Wake-up
        Arguments.of("notify.enabled", "on"));
  }

  static void assertNotEchoed(String key, String value, String message) {
    if (NEVER_ECHOED.contains(key) && value.length() > 2) {
      assertFalse(message.contains(value.strip()), "value echoed in: " + message);
    }
    // Nor a user or password written before the host ("//alice:s3cret@").
    int userInfoEnd = value.indexOf('@');
    int authority = value.indexOf("//");
    if (NEVER_ECHOED.contains(key) && authority >= 0 && userInfoEnd > authority) {
      for (String part : value.substring(authority + 2, userInfoEnd).split(":")) {
        if (part.length() >= 4) {
          assertFalse(message.contains(part), "part of a value echoed in: " + message);
        }
      }
    }
    // Nor any part of a query string's values (a password), as a decoder's message would quote.
    int query = value.indexOf('?');
    if (NEVER_ECHOED.contains(key) && query >= 0) {
      for (String pair : value.substring(query + 1).split("&")) {
        int eq = pair.indexOf('=');
        for (String part : pair.substring(eq + 1).split("%")) {
          if (part.length() >= 4) {
            assertFalse(message.contains(part), "part of a value echoed in: " + message);
          }
        }
      }
    }
  }
}
