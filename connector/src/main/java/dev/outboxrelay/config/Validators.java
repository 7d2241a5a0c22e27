package dev.outboxrelay.config;

import dev.outboxrelay.mapping.TopicRouter;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.store.postgres.OutboxColumns;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.writer.InstanceKeys;
import dev.outboxrelay.writer.TopicNames;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * The validators of {@link OutboxSourceConfig}, one small named method per rule.
 *
 * <p>Every error names the key and what is wrong, never a string value: a value can hold a
 * credential (a password in a JDBC URL), SQL, or anything else a user pasted (number ranges are
 * Kafka's own, and name the number). Errors are therefore thrown with {@link
 * ConfigException#ConfigException(String)}, never with the constructor that echoes the value. A
 * null value means the key is unset: ConfigDef reports a missing required key itself, so validators
 * accept null.
 */
final class Validators {
  static final String JDBC_PREFIX = "jdbc:postgresql://";

  static final List<String> TEMPLATE_VARIABLES =
      List.of(
          "${" + TopicRouter.AGGREGATE_TYPE + "}",
          "${" + TopicRouter.EVENT_TYPE + "}",
          "${" + TopicRouter.INSTANCE_KEY + "}");

  /** A topic template variable, ${...}. */
  static final Pattern VARIABLE = Pattern.compile("\\$\\{[^}]*}");

  /** A PostgreSQL channel name that needs no quoting: NAMEDATALEN - 1 = 63 bytes. */
  private Validators() {}

  /** A string validator with a readable description for the generated reference. */
  private static ConfigDef.Validator of(String description, Check check) {
    return new ConfigDef.Validator() {
      @Override
      public void ensureValid(String name, Object value) {
        if (value != null) {
          check.accept(name, value);
        }
      }

      @Override
      public String toString() {
        return description;
      }
    };
  }

  @FunctionalInterface
  private interface Check {
    void accept(String name, Object value);
  }

  /**
   * Only PostgreSQL URLs, without a user or password before the host (the driver does not read them
   * there: it would take them for the host); the URL itself is never echoed (it may carry a
   * password).
   */
  static ConfigDef.Validator jdbcUrl() {
    return of(
        "a URL starting with " + JDBC_PREFIX,
        (name, value) -> {
          if (!((String) value).startsWith(JDBC_PREFIX)) {
            throw new ConfigException(name + " must start with " + JDBC_PREFIX);
          }
          if (DataSourceFactory.hasUserInfo((String) value)) {
            throw new ConfigException(
                name
                    + " must not carry a user or password before the host (user:password@host):"
                    + " set connection.user and connection.password instead (an '@' elsewhere"
                    + " before the query string, as in a database name, is written %40)");
          }
          if (DataSourceFactory.hasMisplacedPassword((String) value)) {
            throw new ConfigException(
                name
                    + " must not carry a password in its hosts, its database name or another"
                    + " parameter's value (as in /app;password=... or ?user=app;password=...):"
                    + " the driver would take it for part of that name or value; set"
                    + " connection.password instead");
          }
          if (!DataSourceFactory.namesTheDatabaseAfterItsHosts((String) value)) {
            throw new ConfigException(
                name
                    + " must end its hosts with one '/' before the database name, as in"
                    + " jdbc:postgresql://host:5432/app (a '/' in the database name is written"
                    + " %2F)");
          }
          if (!DataSourceFactory.portsAreNumbers((String) value)) {
            throw new ConfigException(
                name
                    + " names a port that is not a number from 1 to 65535 (a user:password before"
                    + " the host without its '@host'? set connection.user and connection.password"
                    + " instead)");
          }
          if (!DataSourceFactory.databaseNameDecodes((String) value)) {
            // The driver refuses such a URL, and the password check cannot read the name.
            throw new ConfigException(
                name + " has a malformed %-escape in its database name: write a literal % as %25");
          }
          try {
            DataSourceFactory.urlParameters((String) value);
          } catch (IllegalArgumentException e) {
            // The driver refuses such a URL too; every later rule reads its parameters.
            throw new ConfigException(
                name + " has a malformed %-escape in its query string: write a literal % as %25");
          }
        });
  }

  /**
   * A number in {@code [min, max]}, and so not NaN, which Kafka's {@code Range} lets through (every
   * comparison with NaN is false): the task would refuse it at start instead.
   */
  static ConfigDef.Validator finiteBetween(double min, double max) {
    return of(
        "[" + min + ",...," + max + "]",
        (name, value) -> {
          double number = (Double) value;
          if (!(number >= min && number <= max)) {
            throw new ConfigException(name + " must be a number between " + min + " and " + max);
          }
        });
  }

  /** {@link OutboxTable#parse} is the one rule for table names; its messages carry no value. */
  static ConfigDef.Validator outboxTable() {
    return of(
        "table or schema.table: lower-case letters, digits, underscores, not starting with a digit",
        (name, value) -> {
          try {
            OutboxTable.parse((String) value);
          } catch (IllegalArgumentException e) {
            throw new ConfigException(name + " is invalid: " + e.getMessage());
          }
        });
  }

  /**
   * A non-empty list of distinct keys, each valid per {@link InstanceKeys#requireValid(String)}.
   * Entries are named by position, not by value.
   */
  static ConfigDef.Validator instanceKeys() {
    return of(
        "non-empty list of distinct instance keys",
        (name, value) -> {
          List<?> keys = (List<?>) value;
          if (keys.isEmpty()) {
            throw new ConfigException(name + " must name at least one instance key");
          }
          Set<Object> seen = new HashSet<>();
          for (int i = 0; i < keys.size(); i++) {
            try {
              InstanceKeys.requireValid((String) keys.get(i));
            } catch (IllegalArgumentException e) {
              throw new ConfigException(
                  name + " entry " + (i + 1) + " is invalid: " + e.getMessage());
            }
            if (!seen.add(keys.get(i))) {
              throw new ConfigException(
                  name + " entry " + (i + 1) + " repeats an earlier entry: keys must be distinct");
            }
          }
        });
  }

  /**
   * Raw-text check for instance keys: ConfigDef trims list entries, so a control character at
   * either end would be dropped silently and the key would change meaning. Reject it instead.
   */
  static void requireNoControlCharacters(String name, String raw) {
    if (raw.chars().anyMatch(Character::isISOControl)) {
      throw new ConfigException(name + " must not contain control characters");
    }
  }

  /** A legal Kafka topic name ({@link TopicNames}, the one rule), or empty for "none". */
  static ConfigDef.Validator optionalTopicName() {
    return of(
        "empty, or " + TopicNames.RULE + ", not one of Kafka's internal topics",
        (name, value) -> {
          String topic = (String) value;
          if (!topic.isEmpty() && !TopicNames.isLegal(topic)) {
            throw new ConfigException(name + " must be empty or a topic name: " + TopicNames.RULE);
          }
          if (TopicNames.isInternal(topic)) {
            throw new ConfigException(name + " must not be one of Kafka's internal topics");
          }
        });
  }

  /**
   * A topic template as {@link TopicRouter} parses it; empty means the routing convention's
   * default. Also rejected: a template whose fixed text alone is too long for a topic name, which
   * would make every row unroutable.
   */
  static ConfigDef.Validator topicTemplate() {
    return of(
        "empty, or topic-name characters and the variables "
            + String.join(", ", TEMPLATE_VARIABLES),
        (name, value) -> {
          String template = (String) value;
          if (template.isEmpty()) {
            return;
          }
          try {
            TopicRouter.requireValidTemplate(template);
          } catch (IllegalArgumentException e) {
            throw new ConfigException(name + " is invalid: " + e.getMessage());
          }
          if (VARIABLE.matcher(template).replaceAll("").length() > TopicNames.MAX_LENGTH) {
            throw new ConfigException(name + " is longer than a topic name may be");
          }
        });
  }

  /** Empty, or a Java regular expression. */
  static ConfigDef.Validator optionalRegex() {
    return of(
        "empty, or a Java regular expression",
        (name, value) -> {
          String regex = (String) value;
          if (regex.isEmpty()) {
            return;
          }
          try {
            Pattern.compile(regex);
          } catch (PatternSyntaxException e) {
            // The index only: the description quotes the value.
            throw new ConfigException(
                name + " is not a valid regular expression (near index " + e.getIndex() + ")");
          }
        });
  }

  /**
   * The column of the outbox table that holds the message's {@code field}, as {@link ColumnMapping}
   * takes it (always quoted in SQL): the field's own column or one the relay does not have.
   */
  static ConfigDef.Validator columnName(OutboxColumns.Row field) {
    return of(
        ColumnMapping.COLUMN_RULE + ", not another of the relay's columns",
        (name, value) -> {
          if (!ColumnMapping.isColumnName((String) value)) {
            throw new ConfigException(name + " must be " + ColumnMapping.COLUMN_RULE);
          }
          String misuse = ColumnMapping.misuse(field, (String) value);
          if (misuse != null) {
            throw new ConfigException(name + " " + misuse);
          }
        });
  }

  /** Debezium's placement syntax, header placements only ({@link HeaderPlacements}). */
  static ConfigDef.Validator additionalPlacement() {
    return of(
        "empty, or a list of column:header[:alias]",
        (name, value) -> {
          @SuppressWarnings("unchecked")
          List<String> entries = (List<String>) value;
          try {
            HeaderPlacements.parse(entries);
          } catch (IllegalArgumentException e) {
            throw new ConfigException(name + " " + e.getMessage());
          }
        });
  }

  /** Unset, or a whole number in [min, max]. */
  static ConfigDef.Validator optionalBetween(long min, long max) {
    ConfigDef.Range range = ConfigDef.Range.between(min, max);
    return of("unset, or " + range, range::ensureValid);
  }

  /** -1, or from zero to {@code max}. */
  static ConfigDef.Validator minusOneOrBetweenZeroAnd(long max) {
    return of(
        "-1 (never), or [0,...," + max + "]",
        (name, value) -> {
          long v = (Long) value;
          if (v < -1 || v > max) {
            throw new ConfigException(name + " must be -1 (keep forever) or from 0 to " + max);
          }
        });
  }

  /** One of a few words, ignoring case; the words are listed in the error and the reference. */
  static ConfigDef.Validator oneOf(String... words) {
    List<String> allowed = Arrays.asList(words);
    return of(
        String.join(", ", allowed) + " (case-insensitive)",
        (name, value) -> {
          if (!allowed.contains(((String) value).toLowerCase(Locale.ROOT))) {
            throw new ConfigException(name + " must be one of: " + String.join(", ", allowed));
          }
        });
  }

  /** Offers the allowed words to UIs that render a choice. */
  static ConfigDef.Recommender choices(String... words) {
    List<Object> values = List.of((Object[]) words);
    return new ConfigDef.Recommender() {
      @Override
      public List<Object> validValues(String name, Map<String, Object> parsed) {
        return values;
      }

      @Override
      public boolean visible(String name, Map<String, Object> parsed) {
        return true;
      }
    };
  }
}
