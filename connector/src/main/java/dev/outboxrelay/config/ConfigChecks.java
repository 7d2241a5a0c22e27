package dev.outboxrelay.config;

import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_ADDITIONAL_PLACEMENT_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_AGGREGATE_ID_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_AGGREGATE_TYPE_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_EVENT_TIMESTAMP_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_EVENT_TYPE_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_MESSAGE_ID_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.COLUMN_PAYLOAD_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.CONNECTION_PASSWORD_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.CONNECTION_URL_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.CONNECTION_USER_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.DEAD_LETTER_TOPIC_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.DELIVERY_GUARANTEE_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.EXACTLY_ONCE;
import static dev.outboxrelay.config.OutboxSourceConfig.INSTANCE_KEYS_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.LEASE_DURATION_MS_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.LEASE_RENEWAL_INTERVAL_MS_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.NULL_METADATA_POLICY_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.ORDERING_ENABLED_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.PAYLOAD_FORMAT_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.PAYLOAD_JSON_SCHEMA_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.RECORD_TIMESTAMP_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.RETRY_BACKOFF_INITIAL_MS_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.RETRY_BACKOFF_MAX_MS_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.ROUTING_CONVENTION_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.ROUTING_DEBEZIUM;
import static dev.outboxrelay.config.OutboxSourceConfig.SCHEMA_MIGRATE_ON_START_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.SOCKET_TIMEOUT_MS_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.STATEMENT_TIMEOUT_MS_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.TOPIC_ALLOWED_REGEX_CONFIG;
import static dev.outboxrelay.config.OutboxSourceConfig.TOPIC_TEMPLATE_CONFIG;
import static dev.outboxrelay.mapping.RecordTimestamp.SEND_TIME;

import dev.outboxrelay.mapping.OutboxHeaders;
import dev.outboxrelay.mapping.RoutingConvention;
import dev.outboxrelay.mapping.TopicRouter;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.DataSourceFactory;
import dev.outboxrelay.writer.Printable;
import dev.outboxrelay.writer.TopicNames;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;

/**
 * Rules a single key's validator cannot enforce: those spanning several keys, and those that need
 * the raw text before ConfigDef trimmed it. Shared by {@link OutboxSourceConfig} (which throws) and
 * {@link ConfigValidation} (which attaches each problem to its key).
 */
final class ConfigChecks {

  /** A broken rule, reported on {@code key}. */
  record Problem(String key, String message) {}

  private ConfigChecks() {}

  /**
   * Every broken rule. {@code parsed} returns a key's parsed value, or null when the key is itself
   * invalid; a rule is only judged when all its keys are valid.
   */
  static List<Problem> find(Function<String, Object> parsed, Map<String, ?> raw) {
    List<Problem> problems = new ArrayList<>();
    renewalWithinLease(parsed, problems);
    backoffMaxAtLeastInitial(parsed, problems);
    socketTimeoutAboveStatementTimeout(parsed, problems);
    instanceKeysWithoutControlCharacters(parsed, raw, problems);
    exactlyOnceRequiredOfConnect(parsed, raw, problems);
    headersNotReserved(parsed, problems);
    mappedColumnsNotMigrated(parsed, problems);
    messageIdColumnOfItsOwn(parsed, problems);
    eventTimestampColumnRead(parsed, problems);
    credentialsInOnePlace(parsed, problems);
    fixedTopicAllowed(parsed, problems);
    schemaInferredForJsonOnly(parsed, problems);
    payloadFormatWrittenByValueConverter(parsed, raw, problems);
    schemaForSchemaConverter(parsed, raw, problems);
    producerAcksAll(raw, problems);
    producerSizesPositive(raw, problems);
    producerKeepsOrder(parsed, raw, problems);
    producerInFlightWithinIdempotence(parsed, raw, problems);
    producerPartitionsByKey(parsed, raw, problems);
    exactlyOnceErrorTolerance(parsed, raw, problems);
    errorLogWithoutRecords(raw, problems);
    exactlyOnceWithoutFilters(parsed, raw, problems);
    filtersParkWhatTheyDrop(parsed, raw, problems);
    exactlyOnceOffsetsInOneStore(parsed, raw, problems);
    exactlyOnceBoundaryOfConnect(parsed, raw, problems);
    exactlyOnceIntervalWithinTransactionTimeout(parsed, raw, problems);
    keyConverterWritesText(raw, problems);
    valueConverterWritesTheValue(raw, problems);
    headerConverterWritesText(raw, problems);
    stringConverterWritesUtf8(raw, CONNECT_VALUE_CONVERTER, problems);
    stringConverterWritesUtf8(raw, CONNECT_KEY_CONVERTER, problems);
    stringConverterWritesUtf8(raw, CONNECT_HEADER_CONVERTER, problems);
    return problems;
  }

  static void requireValid(Function<String, Object> parsed, Map<String, ?> raw) {
    List<Problem> problems = find(parsed, raw);
    if (!problems.isEmpty()) {
      throw new ConfigException(
          problems.stream().map(Problem::message).collect(Collectors.joining("; ")));
    }
  }

  /**
   * A template without variables routes every row to one topic: if no row may go there (the
   * dead-letter topic, or outside topic.allowed.regex), every row would be parked. One whose only
   * variable is the instance key routes each key's rows to one topic, checked the same way.
   */
  private static void fixedTopicAllowed(Function<String, Object> parsed, List<Problem> out) {
    String template = (String) parsed.apply(TOPIC_TEMPLATE_CONFIG);
    if (template == null || template.isEmpty()) {
      // The convention's default is not judged: where every row names its own topic, a regex
      // that only bounds those is right, and the template is never used.
      return;
    }
    if (template.contains("${")) {
      routedTopicsAllowed(parsed, template, out);
      topicPerInstanceKeyAllowed(parsed, template, out);
      return;
    }
    if (TopicNames.collide(template, (String) parsed.apply(DEAD_LETTER_TOPIC_CONFIG))) {
      out.add(
          new Problem(
              TOPIC_TEMPLATE_CONFIG,
              TOPIC_TEMPLATE_CONFIG
                  + " names "
                  + DEAD_LETTER_TOPIC_CONFIG
                  + ", where no row may be published: every row would be parked"
                  + " (TOPIC_NOT_ALLOWED)"));
    }
    String allowed = (String) parsed.apply(TOPIC_ALLOWED_REGEX_CONFIG);
    if (allowed != null && !allowed.isEmpty() && !Pattern.matches(allowed, template)) {
      out.add(
          new Problem(
              TOPIC_ALLOWED_REGEX_CONFIG,
              TOPIC_ALLOWED_REGEX_CONFIG
                  + " does not match "
                  + TOPIC_TEMPLATE_CONFIG
                  + ", a fixed topic: every row without a topic of its own would be parked"
                  + " (TOPIC_NOT_ALLOWED)"));
    }
  }

  /**
   * A template that takes a row's values cannot be checked whole, but its fixed beginning can: a
   * topic.allowed.regex that no topic with that beginning can match (one kept from another relay's
   * naming, say outbox\\.[a-z]+ with outbox.event.${aggregate_type}) parks every row without a
   * topic of its own (TOPIC_NOT_ALLOWED), which validation can say at once. Judged only where the
   * regex reads the whole beginning and wants more (the matcher hit its end): a pattern whose match
   * of it fails earlier refuses every such topic.
   */
  private static void routedTopicsAllowed(
      Function<String, Object> parsed, String template, List<Problem> out) {
    String allowed = (String) parsed.apply(TOPIC_ALLOWED_REGEX_CONFIG);
    if (allowed == null
        || allowed.isEmpty()
        || !(parsed.apply(INSTANCE_KEYS_CONFIG) instanceof List<?> keys)) {
      return;
    }
    String variable = "${" + TopicRouter.INSTANCE_KEY + "}";
    Pattern pattern = Pattern.compile(allowed);
    for (Object key : keys) {
      String filled = template.replace(variable, key.toString());
      int open = filled.indexOf("${");
      if (open < 0) {
        continue; // a fixed topic per key, judged whole by topicPerInstanceKeyAllowed
      }
      java.util.regex.Matcher prefix = pattern.matcher(filled.substring(0, open));
      if (!prefix.matches() && !prefix.hitEnd()) {
        out.add(
            new Problem(
                TOPIC_ALLOWED_REGEX_CONFIG,
                TOPIC_ALLOWED_REGEX_CONFIG
                    + " matches no topic "
                    + TOPIC_TEMPLATE_CONFIG
                    + " gives"
                    + (template.contains(variable)
                        ? " for instance key '" + Printable.escape(key.toString()) + "'"
                        : "")
                    + ", which begin '"
                    + Printable.escape(filled.substring(0, open))
                    + "': every row without a topic of its own would be parked"
                    + " (TOPIC_NOT_ALLOWED)"));
        return;
      }
    }
  }

  private static void topicPerInstanceKeyAllowed(
      Function<String, Object> parsed, String template, List<Problem> out) {
    String variable = "${" + TopicRouter.INSTANCE_KEY + "}";
    if (!(parsed.apply(INSTANCE_KEYS_CONFIG) instanceof List<?> keys)) {
      return; // the keys are refused already
    }
    instanceKeysApartInTopicNames(template, variable, keys, out);
    if (template.replace(variable, "").contains("${")) {
      instanceKeysInTopicNames(template, variable, keys, out);
      return; // the rest of the name is a row's own value
    }
    String allowed = (String) parsed.apply(TOPIC_ALLOWED_REGEX_CONFIG);
    for (Object key : keys) {
      String topic = template.replace(variable, key.toString());
      String filled =
          TOPIC_TEMPLATE_CONFIG
              + " filled with instance key '"
              + Printable.escape(key.toString())
              + "'";
      String parked = "every row of that key without a topic of its own would be parked";
      if (!TopicNames.isRoutable(topic)) {
        String rule = TopicNames.RULE + ", not one of Kafka's internal topics";
        out.add(
            new Problem(
                TOPIC_TEMPLATE_CONFIG,
                filled + " is not a topic name (" + rule + "): " + parked + " (TOPIC_UNROUTABLE)"));
      } else if (TopicNames.collide(topic, (String) parsed.apply(DEAD_LETTER_TOPIC_CONFIG))) {
        out.add(
            new Problem(
                TOPIC_TEMPLATE_CONFIG,
                filled
                    + " names "
                    + DEAD_LETTER_TOPIC_CONFIG
                    + ": "
                    + parked
                    + " (TOPIC_NOT_ALLOWED)"));
      } else if (allowed != null && !allowed.isEmpty() && !Pattern.matches(allowed, topic)) {
        out.add(
            new Problem(
                TOPIC_ALLOWED_REGEX_CONFIG,
                TOPIC_ALLOWED_REGEX_CONFIG
                    + " does not match "
                    + filled
                    + ": "
                    + parked
                    + " (TOPIC_NOT_ALLOWED)"));
      }
    }
  }

  /**
   * Two instance keys that differ only by '.' against '_' fill the template with topic names Kafka
   * takes for one (it refuses to create the second: "collides with existing topic"), the rest of
   * the template's values being equal: every row of one of the keys could never be published, and
   * each would fail its task. Compared by the keys alone, which is exact: the filled names differ
   * only where the keys do.
   */
  private static void instanceKeysApartInTopicNames(
      String template, String variable, List<?> keys, List<Problem> out) {
    if (!template.contains(variable)) {
      return;
    }
    for (int i = 0; i < keys.size(); i++) {
      for (int j = i + 1; j < keys.size(); j++) {
        String a = keys.get(i).toString();
        String b = keys.get(j).toString();
        if (!a.equals(b) && TopicNames.collide(a, b)) {
          out.add(
              new Problem(
                  TOPIC_TEMPLATE_CONFIG,
                  TOPIC_TEMPLATE_CONFIG
                      + " filled with instance keys '"
                      + Printable.escape(a)
                      + "' and '"
                      + Printable.escape(b)
                      + "' names topics Kafka takes for one ('.' and '_' collide in topic"
                      + " names): the second could not be created, and the rows of one of the"
                      + " keys without a topic of their own never published; relay such keys"
                      + " with their own connectors, or leave "
                      + TopicRouter.INSTANCE_KEY
                      + " out of the template"));
          return; // one pair said is enough to fix the keys
        }
      }
    }
  }

  /**
   * A template that also takes a row's own values (outbox.${instance_key}.${aggregate_type}) is
   * judged by the key's part alone: a key with a character no topic name may hold ("orders eu",
   * "acme/eu"), or one whose name with the template's fixed text is already longer than a topic
   * name may be (the row's values only add to it), makes every row of that key unroutable, whatever
   * its own values.
   */
  private static void instanceKeysInTopicNames(
      String template, String variable, List<?> keys, List<Problem> out) {
    if (!template.contains(variable)) {
      return;
    }
    for (Object key : keys) {
      int shortest =
          Validators.VARIABLE.matcher(template.replace(variable, "")).replaceAll("").length()
              + occurrences(template, variable) * key.toString().length();
      if (shortest > TopicNames.MAX_LENGTH) {
        out.add(
            new Problem(
                TOPIC_TEMPLATE_CONFIG,
                TOPIC_TEMPLATE_CONFIG
                    + " filled with instance key '"
                    + Printable.escape(key.toString())
                    + "' is at least "
                    + shortest
                    + " characters, longer than a topic name may be ("
                    + TopicNames.MAX_LENGTH
                    + "): every row of that key without a topic of its own would be parked"
                    + " (TOPIC_UNROUTABLE)"));
      } else if (!TopicNames.LEGAL_CHARS.matcher(key.toString()).matches()) {
        out.add(
            new Problem(
                TOPIC_TEMPLATE_CONFIG,
                TOPIC_TEMPLATE_CONFIG
                    + " takes instance key '"
                    + Printable.escape(key.toString())
                    + "' into the topic name, which must be "
                    + TopicNames.RULE
                    + ": every row of that key without a topic of its own would be parked"
                    + " (TOPIC_UNROUTABLE)"));
      }
    }
  }

  private static int occurrences(String text, String part) {
    return (text.length() - text.replace(part, "").length()) / part.length();
  }

  /** A schema is inferred from JSON only: with another format the setting would do nothing. */
  private static void schemaInferredForJsonOnly(
      Function<String, Object> parsed, List<Problem> out) {
    String schema = (String) parsed.apply(PAYLOAD_JSON_SCHEMA_CONFIG);
    String format = (String) parsed.apply(PAYLOAD_FORMAT_CONFIG);
    if (schema != null
        && format != null
        && schema.equalsIgnoreCase("inferred")
        && !format.equalsIgnoreCase("json")) {
      out.add(
          new Problem(
              PAYLOAD_JSON_SCHEMA_CONFIG,
              PAYLOAD_JSON_SCHEMA_CONFIG
                  + "=inferred needs "
                  + PAYLOAD_FORMAT_CONFIG
                  + "=json (it is "
                  + format
                  + ")"));
    }
  }

  /** Connect's per-connector value converter. */
  static final String CONNECT_VALUE_CONVERTER = "value.converter";

  static final String STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter";
  static final String BYTE_ARRAY_CONVERTER =
      "org.apache.kafka.connect.converters.ByteArrayConverter";
  static final String JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter";

  /**
   * Avro converters of the field: each refuses a member name that is not an Avro name. Confluent's
   * first: only it can scrub such names.
   */
  /** Confluent's Protobuf converter, whose refusals an inferred schema avoids (InferredSchema). */
  static final String CONFLUENT_PROTOBUF_CONVERTER =
      "io.confluent.connect.protobuf.ProtobufConverter";

  static final String CONFLUENT_JSON_SCHEMA_CONVERTER =
      "io.confluent.connect.json.JsonSchemaConverter";

  static final List<String> AVRO_CONVERTERS =
      List.of(
          "io.confluent.connect.avro.AvroConverter",
          "io.apicurio.registry.utils.converter.AvroConverter");

  /**
   * The payload format the connector's own value converter writes. StringConverter writes any other
   * value by its toString(): a payload's bytes as "[B@6d06d69c", a JSON object as "{k=v}", which
   * Kafka acknowledges, so the row is recorded published and its payload is gone (a Debezium user's
   * StringConverter with the default payload.format=bytes). ByteArrayConverter refuses anything but
   * bytes and would fail the task at every record. A converter set only on the worker is not in the
   * connector's configuration, and not checked (docs/configuration.md).
   */
  private static void payloadFormatWrittenByValueConverter(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    String format = (String) parsed.apply(PAYLOAD_FORMAT_CONFIG);
    String name = pluginName(raw.get(CONNECT_VALUE_CONVERTER));
    if (format == null || name == null || transformed(raw, RecordSide.VALUE)) {
      return; // a transform may turn the value into what the converter writes (Cast, say)
    }
    String written =
        isPlugin(name, STRING_CONVERTER)
            ? "string"
            : isPlugin(name, BYTE_ARRAY_CONVERTER) ? "bytes" : null;
    if (written != null && !format.equalsIgnoreCase(written)) {
      out.add(
          new Problem(
              PAYLOAD_FORMAT_CONFIG,
              PAYLOAD_FORMAT_CONFIG
                  + " must be "
                  + written
                  + " with "
                  + CONNECT_VALUE_CONVERTER
                  + "="
                  + name
                  + " (it is "
                  + format
                  + "): "
                  + (written.equals("string")
                      ? "StringConverter would send the text of a Java object (\"[B@...\")"
                          + " in place of each payload, and record the row published"
                      : "ByteArrayConverter sends bytes only, and would fail the task at every"
                          + " record")));
    }
  }

  /**
   * Converters that write a value by its Connect schema into a registry: given a schemaless JSON
   * value (payload.json.schema=none) Protobuf's fails every record, and Avro's writes it as its
   * generic "Anything" record, several times the payload's size, past the size the relay checked.
   */
  static final List<String> SCHEMA_CONVERTERS =
      java.util.stream.Stream.concat(
              AVRO_CONVERTERS.stream(),
              java.util.stream.Stream.of(
                  CONFLUENT_PROTOBUF_CONVERTER,
                  CONFLUENT_JSON_SCHEMA_CONVERTER,
                  "io.apicurio.registry.utils.converter.ProtobufConverter",
                  "io.apicurio.registry.utils.converter.ExtJsonConverter"))
          .toList();

  /** A schemaless JSON value for a converter that needs a schema: the schema must be inferred. */
  private static void schemaForSchemaConverter(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    String format = (String) parsed.apply(PAYLOAD_FORMAT_CONFIG);
    String schema = (String) parsed.apply(PAYLOAD_JSON_SCHEMA_CONFIG);
    String name = pluginName(raw.get(CONNECT_VALUE_CONVERTER));
    if (format == null
        || schema == null
        || name == null
        || !format.equalsIgnoreCase("json")
        || schema.equalsIgnoreCase("inferred")
        || SCHEMA_CONVERTERS.stream().noneMatch(c -> isPlugin(name, c))
        || transformed(raw, RecordSide.VALUE)) {
      return; // a transform may give the value a schema
    }
    out.add(
        new Problem(
            PAYLOAD_JSON_SCHEMA_CONFIG,
            PAYLOAD_JSON_SCHEMA_CONFIG
                + " must be inferred with "
                + PAYLOAD_FORMAT_CONFIG
                + "=json and "
                + CONNECT_VALUE_CONVERTER
                + "="
                + name
                + " (it is "
                + schema
                + "): that converter writes a value by its schema, and a schemaless JSON value"
                + " has none (it would fail the task, or be written as a generic record several"
                + " times its size)"));
  }

  /** A plugin setting's class name, given as a class or as text; null when not set. */
  static String pluginName(Object setting) {
    return setting instanceof Class<?> type
        ? type.getName()
        : setting instanceof String text ? text.trim() : null;
  }

  /** Kafka's transforms, whose nested Key and Value classes each change only their side. */
  private static final String KAFKA_TRANSFORMS = "org.apache.kafka.connect.transforms.";

  /** Kafka's transforms that change neither the record's key nor its value. */
  static final List<String> KEY_AND_VALUE_KEPT =
      List.of(
          KAFKA_TRANSFORMS + "RegexRouter",
          KAFKA_TRANSFORMS + "TimestampRouter",
          KAFKA_TRANSFORMS + "InsertHeader",
          KAFKA_TRANSFORMS + "DropHeaders",
          KAFKA_TRANSFORMS + "Filter");

  /** Which part of the record a transform may change. */
  enum RecordSide {
    KEY("$Value"),
    VALUE("$Key");

    /** The suffix of Kafka's nested transform classes that change the other side only. */
    private final String otherSide;

    RecordSide(String otherSide) {
      this.otherSide = otherSide;
    }
  }

  /**
   * Whether a transform the connector lists may change {@code side} of the record, so that what
   * reaches the converter cannot be judged here: any transform but those known to keep it (routers,
   * header transforms, Filter, the other side's nested class of Kafka's own, ValueToKey for the
   * value). A transform of unknown class, or without a type, may change anything. Routing a record
   * (RegexRouter, the most common transform) must not switch off the check that keeps a payload
   * from being sent as "[B@..." and recorded published.
   */
  static boolean transformed(Map<String, ?> raw, RecordSide side) {
    if (!(raw.get("transforms") instanceof String listed)) {
      return false;
    }
    for (String alias : listed.split(",")) {
      if (alias.isBlank()) {
        continue;
      }
      String name = pluginName(raw.get("transforms." + alias.trim() + ".type"));
      if (name == null || !keeps(name, side)) {
        return true;
      }
    }
    return false;
  }

  private static boolean keeps(String transform, RecordSide side) {
    for (String kept : KEY_AND_VALUE_KEPT) {
      if (isPlugin(transform, kept)) {
        return true;
      }
    }
    if (side == RecordSide.VALUE && isPlugin(transform, KAFKA_TRANSFORMS + "ValueToKey")) {
      return true; // reads the value, sets the key
    }
    return transform.startsWith(KAFKA_TRANSFORMS) && transform.endsWith(side.otherSide);
  }

  /**
   * Whether {@code name} names the plugin class {@code className} as Connect resolves it: the full
   * name, the simple one, or the simple one without its kind ("StringConverter", "String").
   */
  static boolean isPlugin(String name, String className) {
    String simple = className.substring(className.lastIndexOf('.') + 1);
    for (String kind : List.of("Converter", "Transformation", "Transform")) {
      if (simple.endsWith(kind)
          && name.equals(simple.substring(0, simple.length() - kind.length()))) {
        return true;
      }
    }
    return name.equals(className) || name.equals(simple);
  }

  /** A lease must be renewed before it expires, or a slow send loses its row to another task. */
  private static void renewalWithinLease(Function<String, Object> parsed, List<Problem> out) {
    Long renewal = (Long) parsed.apply(LEASE_RENEWAL_INTERVAL_MS_CONFIG);
    Long lease = (Long) parsed.apply(LEASE_DURATION_MS_CONFIG);
    if (renewal != null && lease != null && renewal >= lease) {
      out.add(
          new Problem(
              LEASE_RENEWAL_INTERVAL_MS_CONFIG,
              LEASE_RENEWAL_INTERVAL_MS_CONFIG
                  + " must be less than "
                  + LEASE_DURATION_MS_CONFIG
                  + " ("
                  + lease
                  + " ms), so leases are renewed before they expire"));
    }
  }

  /** {@link dev.outboxrelay.retry.BackoffPolicy} needs initial <= max. */
  private static void backoffMaxAtLeastInitial(Function<String, Object> parsed, List<Problem> out) {
    Long initial = (Long) parsed.apply(RETRY_BACKOFF_INITIAL_MS_CONFIG);
    Long max = (Long) parsed.apply(RETRY_BACKOFF_MAX_MS_CONFIG);
    if (initial != null && max != null && max < initial) {
      out.add(
          new Problem(
              RETRY_BACKOFF_MAX_MS_CONFIG,
              RETRY_BACKOFF_MAX_MS_CONFIG
                  + " must be at least "
                  + RETRY_BACKOFF_INITIAL_MS_CONFIG
                  + " ("
                  + initial
                  + " ms)"));
    }
  }

  /**
   * A statement the database is about to cancel must not lose its connection first: the cancel
   * (SQLState 57014) says what happened, a socket timeout only that the connection is gone.
   */
  private static void socketTimeoutAboveStatementTimeout(
      Function<String, Object> parsed, List<Problem> out) {
    Long statement = (Long) parsed.apply(STATEMENT_TIMEOUT_MS_CONFIG);
    Long socket = (Long) parsed.apply(SOCKET_TIMEOUT_MS_CONFIG);
    if (statement != null && socket != null && socket <= statement) {
      out.add(
          new Problem(
              SOCKET_TIMEOUT_MS_CONFIG,
              SOCKET_TIMEOUT_MS_CONFIG
                  + " must be more than "
                  + STATEMENT_TIMEOUT_MS_CONFIG
                  + " ("
                  + statement
                  + " ms), so that the database cancels a slow statement before the connection"
                  + " is given up; leave it unset for "
                  + STATEMENT_TIMEOUT_MS_CONFIG
                  + " plus 30 seconds"));
    }
    String url = (String) parsed.apply(CONNECTION_URL_CONFIG);
    String inUrl =
        url == null ? null : DataSourceFactory.urlParameters(url).getProperty("socketTimeout");
    if (statement != null && inUrl != null && !socketTimeoutAbove(inUrl, statement)) {
      // The URL's socketTimeout (whole seconds, 0: none) takes precedence over socket.timeout.ms.
      out.add(
          new Problem(
              CONNECTION_URL_CONFIG,
              "the socketTimeout in "
                  + CONNECTION_URL_CONFIG
                  + " must be more than "
                  + STATEMENT_TIMEOUT_MS_CONFIG
                  + " ("
                  + statement
                  + " ms), in whole seconds, not 0 and at most "
                  + Integer.MAX_VALUE / 1000
                  + ", so that no read can hang a task; or leave it out and set "
                  + SOCKET_TIMEOUT_MS_CONFIG));
    }
  }

  private static boolean socketTimeoutAbove(String seconds, long statementMs) {
    try {
      long s = Long.parseLong(seconds.strip());
      // The driver takes it as int milliseconds: past that, connecting fails.
      return s > 0 && s <= Integer.MAX_VALUE / 1000 && s * 1000 > statementMs;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  /** Connect's per-connector override of the producer's {@code acks}. */
  static final String PRODUCER_ACKS_CONFIG = "producer.override.acks";

  static final String PRODUCER_ACKS_ERROR =
      PRODUCER_ACKS_CONFIG
          + " must be all (or -1): a row is recorded as published on Kafka's acknowledgement,"
          + " which proves delivery only with acks=all (acks=0 returns no offset at all, acks=1 is"
          + " given before the record is replicated and can be lost); remove the override or set"
          + " it to all";

  static final String PRODUCER_MAX_IN_FLIGHT_CONFIG =
      "producer.override.max.in.flight.requests.per.connection";

  static final String PRODUCER_IDEMPOTENCE_CONFIG = "producer.override.enable.idempotence";

  /** What the connector's producer overrides do to per-aggregate order. */
  enum ProducerOrder {
    /** Kept: ordering off, one request in flight, idempotence on, or exactly once. */
    KEPT,
    /** Lost: more than one request in flight with idempotence switched off. */
    LOST,
    /** More than one in flight, idempotence not given: the worker's settings decide. */
    UNSEEN
  }

  /**
   * With ordering on, more than one request in flight per connection keeps order only with
   * idempotence: a retried request otherwise lands behind a later one, and an aggregate's records
   * reach Kafka out of order though they were claimed and sent in order. Connect's defaults (one in
   * flight, no idempotence) keep order, and exactly once the producer is transactional, so
   * idempotent. Without {@code producer.override.enable.idempotence} the worker decides: its own
   * {@code producer.enable.idempotence}, or a worker with exactly-once source support, which gives
   * every task a transactional producer.
   */
  static ProducerOrder producerOrder(Function<String, Object> parsed, Map<String, ?> raw) {
    if (!Boolean.TRUE.equals(parsed.apply(ORDERING_ENABLED_CONFIG))
        || exactlyOnce(parsed)
        || !inFlightAbove(raw, 1)) { // not a number: the producer refuses it, naming the setting
      return ProducerOrder.KEPT;
    }
    if (!(raw.get(PRODUCER_IDEMPOTENCE_CONFIG) instanceof String idempotence)) {
      return ProducerOrder.UNSEEN;
    }
    return idempotence.trim().equalsIgnoreCase("false")
        ? ProducerOrder.LOST
        : ProducerOrder.KEPT; // true, or a value the producer refuses
  }

  private static void producerKeepsOrder(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    if (producerOrder(parsed, raw) == ProducerOrder.LOST
        && !inFlightAbove(raw, IDEMPOTENT_MAX_IN_FLIGHT)) { // said by the check of that
      out.add(
          new Problem(
              PRODUCER_MAX_IN_FLIGHT_CONFIG,
              PRODUCER_MAX_IN_FLIGHT_CONFIG
                  + " above 1 with "
                  + PRODUCER_IDEMPOTENCE_CONFIG
                  + "=false and "
                  + ORDERING_ENABLED_CONFIG
                  + "=true: a retried request would land behind a later one, and an aggregate's"
                  + " records reach Kafka out of order; set idempotence to true, or leave the"
                  + " in-flight override out (Connect's default is 1)"));
    }
  }

  static final String PRODUCER_PARTITIONER_CONFIG = "producer.override.partitioner.class";

  static final String PRODUCER_IGNORE_KEYS_CONFIG = "producer.override.partitioner.ignore.keys";

  /** Kafka's partitioners that spread one key's records over partitions. */
  static final List<String> KEYLESS_PARTITIONERS =
      List.of(
          "org.apache.kafka.clients.producer.RoundRobinPartitioner",
          "org.apache.kafka.clients.producer.UniformStickyPartitioner");

  /**
   * An aggregate's records keep their order in Kafka only in one partition: the record key (the
   * aggregate id) must choose it. With ordering on a producer that ignores keys sends an
   * aggregate's records to several partitions, and consumers read them in any order, without any
   * warning; with it off there is no order to keep (exactly once too). Another partitioner class is
   * left to its author; one set only on the worker is not seen.
   */
  private static void producerPartitionsByKey(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    if (!Boolean.TRUE.equals(parsed.apply(ORDERING_ENABLED_CONFIG))) {
      return;
    }
    String why = ORDERING_ENABLED_CONFIG + "=true";
    if (raw.get(PRODUCER_IGNORE_KEYS_CONFIG) instanceof String ignore
        && ignore.trim().equalsIgnoreCase("true")) {
      out.add(
          new Problem(
              PRODUCER_IGNORE_KEYS_CONFIG,
              PRODUCER_IGNORE_KEYS_CONFIG
                  + "=true with "
                  + why
                  + ": the producer would spread an aggregate's records over partitions, and"
                  + " consumers read them out of order; leave it out"));
    }
    if (raw.get(PRODUCER_PARTITIONER_CONFIG) instanceof String partitioner
        && KEYLESS_PARTITIONERS.contains(partitioner.trim())) {
      out.add(
          new Problem(
              PRODUCER_PARTITIONER_CONFIG,
              PRODUCER_PARTITIONER_CONFIG
                  + " "
                  + partitioner.trim()
                  + " with "
                  + why
                  + " ignores record keys: it would spread an aggregate's records over"
                  + " partitions, and consumers read them out of order; leave it out (Kafka's"
                  + " default partitions by key)"));
    }
  }

  /** The most requests in flight per connection an idempotent producer takes. */
  static final int IDEMPOTENT_MAX_IN_FLIGHT = 5;

  /**
   * Above 5 requests in flight, ordering on or exactly once cannot work: an idempotent producer
   * (exactly once, whose producer is transactional, or enable.idempotence=true, which keeps order)
   * refuses to start, and without idempotence (Connect's own default for its producers) a retried
   * request lands behind a later one.
   */
  private static void producerInFlightWithinIdempotence(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    boolean ordered = Boolean.TRUE.equals(parsed.apply(ORDERING_ENABLED_CONFIG));
    if (!(ordered || exactlyOnce(parsed)) || !inFlightAbove(raw, IDEMPOTENT_MAX_IN_FLIGHT)) {
      return;
    }
    out.add(
        new Problem(
            PRODUCER_MAX_IN_FLIGHT_CONFIG,
            PRODUCER_MAX_IN_FLIGHT_CONFIG
                + " above "
                + IDEMPOTENT_MAX_IN_FLIGHT
                + " with "
                + (exactlyOnce(parsed)
                    ? DELIVERY_GUARANTEE_CONFIG + "=" + EXACTLY_ONCE
                    : ORDERING_ENABLED_CONFIG + "=true")
                + " cannot work: an idempotent or transactional producer refuses to start with"
                + " it, and without idempotence a retried request lands behind a later one (an"
                + " aggregate's records out of order); set at most "
                + IDEMPOTENT_MAX_IN_FLIGHT
                + " (with "
                + PRODUCER_IDEMPOTENCE_CONFIG
                + "=true when above 1), or leave it out (Connect's default is 1)"));
  }

  /** Whether the in-flight override is a number above {@code limit} (else the producer judges). */
  private static boolean inFlightAbove(Map<String, ?> raw, int limit) {
    Long inFlight = wholeNumber(raw.get(PRODUCER_MAX_IN_FLIGHT_CONFIG));
    return inFlight != null && inFlight > limit;
  }

  /** Connect's per-connector error tolerance of converters and transforms. */
  static final String ERRORS_TOLERANCE_CONFIG = "errors.tolerance";

  static final String ERRORS_TOLERANCE_ERROR =
      ERRORS_TOLERANCE_CONFIG
          + " must be none with "
          + OutboxSourceConfig.DELIVERY_GUARANTEE_CONFIG
          + "="
          + OutboxSourceConfig.EXACTLY_ONCE
          + ": all drops a record that a converter or transform fails on, a later record's"
          + " committed offset then covers its row, and a recovery would record that row PUBLISHED"
          + " although it never reached Kafka; remove the setting (none is Connect's default)";

  /** Connect's per-connector switch that puts each failed record whole in its error log. */
  static final String ERRORS_LOG_INCLUDE_MESSAGES_CONFIG = "errors.log.include.messages";

  static final String ERRORS_LOG_INCLUDE_MESSAGES_ERROR =
      ERRORS_LOG_INCLUDE_MESSAGES_CONFIG
          + " must be false: with errors.log.enable, Connect would write each record a converter"
          + " or transform fails on into the worker's log whole (payload, header values, key and"
          + " source offset); remove the setting (false is Connect's default) and read a row with"
          + " outbox-relay-cli inspect --payload";

  /**
   * Not {@code errors.log.include.messages=true}: no payload in a log (the relay's own lines name a
   * record by its message id). Judged whatever {@code errors.log.enable} says, so that turning the
   * log on later cannot start writing payloads.
   */
  private static void errorLogWithoutRecords(Map<String, ?> raw, List<Problem> out) {
    if (raw.get(ERRORS_LOG_INCLUDE_MESSAGES_CONFIG) instanceof String include
        && include.trim().equalsIgnoreCase("true")) {
      out.add(new Problem(ERRORS_LOG_INCLUDE_MESSAGES_CONFIG, ERRORS_LOG_INCLUDE_MESSAGES_ERROR));
    }
  }

  /** Kafka's transform that drops the records its predicate matches. */
  static final String FILTER_TRANSFORM = "org.apache.kafka.connect.transforms.Filter";

  /**
   * The transforms known to drop records: Kafka's Filter, Confluent's and Debezium's, and
   * Confluent's TombstoneHandler (which drops tombstones, a row without payload's record, unless
   * its behavior is fail).
   */
  static final List<String> FILTER_TRANSFORMS =
      List.of(
          FILTER_TRANSFORM,
          "io.confluent.connect.transforms.Filter$Key",
          "io.confluent.connect.transforms.Filter$Value",
          "io.debezium.transforms.Filter",
          "io.confluent.connect.transforms.TombstoneHandler");

  /** The producer's size limits that the connector reads to park records over them. */
  static final List<String> PRODUCER_SIZE_CONFIGS =
      List.of("producer.override.max.request.size", "producer.override.buffer.memory");

  /**
   * Not 0: Kafka takes it, and its producer then refuses every record (RecordTooLargeException,
   * which fails the task at every row), where a row over a positive limit is parked.
   */
  private static void producerSizesPositive(Map<String, ?> raw, List<Problem> out) {
    for (String key : PRODUCER_SIZE_CONFIGS) {
      if (raw.get(key) != null && isZero(raw.get(key).toString().trim())) {
        out.add(
            new Problem(
                key,
                key
                    + " is 0: the producer would refuse every record and fail the task at every"
                    + " row; remove the override or give a size in bytes"));
      }
    }
  }

  /** Zero as Kafka parses a size ({@code 0}, {@code +0}, {@code -0}, {@code 000}). */
  private static boolean isZero(String size) {
    try {
      return Long.parseLong(size) == 0;
    } catch (NumberFormatException e) {
      return false; // Kafka's to refuse, naming the key
    }
  }

  /**
   * {@code producer.override.acks} all or -1, or not set. Connect's own setting, judged here and at
   * every start (not only when Connect validates a changed configuration): a connector saved before
   * this rule, or whose value a config provider changed, must not run with it.
   */
  private static void producerAcksAll(Map<String, ?> raw, List<Problem> out) {
    if (raw.get(PRODUCER_ACKS_CONFIG) instanceof String acks
        && !acks.trim().equalsIgnoreCase("all")
        && !acks.trim().equals("-1")) {
      out.add(new Problem(PRODUCER_ACKS_CONFIG, PRODUCER_ACKS_ERROR));
    }
  }

  /**
   * Not {@code errors.tolerance=all} in exactly-once mode: at least once, a dropped record's row is
   * only never acknowledged and goes back; exactly once, its position is covered by the next
   * record's offset (docs/design.md, Exactly-once, what it does not cover).
   */
  private static void exactlyOnceErrorTolerance(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    if (exactlyOnce(parsed)
        && raw.get(ERRORS_TOLERANCE_CONFIG) instanceof String tolerance
        && tolerance.trim().equalsIgnoreCase("all")) {
      out.add(new Problem(ERRORS_TOLERANCE_CONFIG, ERRORS_TOLERANCE_ERROR));
    }
  }

  /**
   * No {@code transforms.<alias>.type} that drops records ({@link #FILTER_TRANSFORMS}) in
   * exactly-once mode, for the reason {@code errors.tolerance=all} is refused: the dropped record's
   * position is covered by the next record's committed offset, and a recovery after a crash would
   * record its row PUBLISHED. A transform of another class that drops records cannot be told from
   * its class name, and is documented instead.
   */
  private static void exactlyOnceWithoutFilters(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    if (!exactlyOnce(parsed)) {
      return;
    }
    for (String key : filterTypeKeys(raw)) {
      out.add(
          new Problem(
              key,
              key
                  + " must not be a transform that drops records (a Filter, a TombstoneHandler)"
                  + " with "
                  + DELIVERY_GUARANTEE_CONFIG
                  + "="
                  + EXACTLY_ONCE
                  + ": a later record's committed offset covers a dropped record's row, and a"
                  + " recovery would record that row PUBLISHED although it never reached Kafka;"
                  + " leave such rows out of the outbox instead"));
    }
  }

  /**
   * At least once, a transform that drops records ({@link #FILTER_TRANSFORMS}) only with {@code
   * null.metadata.policy=fail}: Connect acknowledges a dropped record without metadata, and with
   * {@code retry} (the default) its row was retried with backoff until its attempts ran out (ten
   * drops over about eight minutes, then parked EXHAUSTED), every later row of its aggregate held
   * back meanwhile. With {@code fail} the row is parked FAILED at once. Not under {@code
   * errors.tolerance=all}, where an acknowledgement without metadata may also be a failed send,
   * which {@code retry} sends again: there the choice stays the user's. Exactly once, a Filter is
   * refused whatever the policy ({@link #exactlyOnceWithoutFilters}).
   */
  private static void filtersParkWhatTheyDrop(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    if (exactlyOnce(parsed)
        || raw.get(ERRORS_TOLERANCE_CONFIG) instanceof String tolerance
            && tolerance.trim().equalsIgnoreCase("all")
        || !(parsed.apply(NULL_METADATA_POLICY_CONFIG) instanceof String policy)
        || !policy.trim().equalsIgnoreCase("retry")) {
      return;
    }
    List<String> filters = filterTypeKeys(raw);
    if (!filters.isEmpty()) {
      out.add(
          new Problem(
              NULL_METADATA_POLICY_CONFIG,
              NULL_METADATA_POLICY_CONFIG
                  + " must be fail with a transform that drops records, a Filter or a"
                  + " TombstoneHandler ("
                  + filters.get(0)
                  + "): with retry, each row it drops is retried until its attempts run out"
                  + " (about eight minutes), holding back the later rows of its aggregate; with"
                  + " fail it is parked FAILED at once (DROPPED_OR_UNDELIVERED), and with"
                  + " errors.tolerance=none nothing else is acknowledged without metadata."
                  + " Better: leave such rows out of the outbox"));
    }
  }

  /**
   * The {@code transforms.<alias>.type} keys, of the aliases {@code transforms} lists, whose type
   * is a Filter ({@link #FILTER_TRANSFORMS}), by class name or Connect's alias.
   */
  private static List<String> filterTypeKeys(Map<String, ?> raw) {
    return transformTypeKeys(raw, FILTER_TRANSFORMS);
  }

  /**
   * The transforms that rename a record's topic (Kafka's and Debezium's routers), by class name or
   * Connect's alias: {@code topic.allowed.regex} judges the topic the relay routes a row to, before
   * Connect's transforms, so a router after it can send a row where the regex would not let it.
   */
  static final List<String> TOPIC_ROUTERS =
      List.of(
          "org.apache.kafka.connect.transforms.RegexRouter",
          "org.apache.kafka.connect.transforms.TimestampRouter",
          "io.debezium.transforms.ByLogicalTableRouter",
          // These take the topic from the record's content: whoever writes rows picks it.
          "io.debezium.transforms.ContentBasedRouter",
          "io.confluent.connect.transforms.ExtractTopic$Value",
          "io.confluent.connect.transforms.ExtractTopic$Key");

  /** The {@code transforms.<alias>.type} keys of listed transforms that rename topics. */
  static List<String> topicRouterTypeKeys(Map<String, ?> raw) {
    return transformTypeKeys(raw, TOPIC_ROUTERS);
  }

  /**
   * The {@code transforms.<alias>.type} keys, of the aliases listed, whose type is of {@code
   * types}.
   */
  private static List<String> transformTypeKeys(Map<String, ?> raw, List<String> types) {
    if (!(raw.get("transforms") instanceof String listed)) {
      return List.of();
    }
    List<String> keys = new ArrayList<>();
    for (String alias : listed.split(",")) {
      String key = "transforms." + alias.trim() + ".type";
      String name = pluginName(raw.get(key));
      if (!alias.isBlank() && name != null && types.stream().anyMatch(t -> isPlugin(name, t))) {
        keys.add(key);
      }
    }
    return keys;
  }

  /** Connect's settings that give a connector offsets of its own, beside the worker's. */
  static final List<String> SEPARATE_OFFSETS_SETTINGS =
      List.of("offsets.storage.topic", "producer.override.bootstrap.servers");

  /**
   * Exactly once, neither an offsets topic of the connector's own nor a producer on another Kafka
   * cluster (which gets one by default). With either, Connect keeps the offsets in two stores: the
   * connector's, written in the records' transaction, and a copy in the worker's topic, written
   * outside it as soon as the first write is acknowledged, before the commit; a read falls back to
   * the copy for a partition the connector's store has no offset of. A first transaction of a
   * bucket that aborted would leave its offset in the copy, and a recovery would record that
   * batch's rows PUBLISHED although they never reached Kafka.
   */
  private static void exactlyOnceOffsetsInOneStore(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    if (!exactlyOnce(parsed)) {
      return;
    }
    for (String key : SEPARATE_OFFSETS_SETTINGS) {
      if (raw.get(key) instanceof String value && !value.isBlank()) {
        out.add(
            new Problem(
                key,
                key
                    + " must not be set with "
                    + DELIVERY_GUARANTEE_CONFIG
                    + "="
                    + EXACTLY_ONCE
                    + ", whatever its value (a connector cannot see the worker's settings): unless"
                    + " it names the worker's own offsets topic and cluster, Connect keeps the"
                    + " connector's offsets in a store of its own and copies them to the worker's"
                    + " offsets topic outside the records' transaction, where an aborted"
                    + " transaction's offset stays and a recovery would read it; remove the"
                    + " setting (the worker's offsets topic, on the worker's cluster)"));
      }
    }
  }

  /** Connect's setting of who ends each transaction, exactly once. */
  static final String CONNECT_TRANSACTION_BOUNDARY = "transaction.boundary";

  /**
   * Not {@code transaction.boundary=connector}: the relay defines no boundaries, so no transaction
   * would ever commit. Connect's distributed herder refuses it when the configuration is submitted;
   * checked again at every start, as a configuration saved earlier, or one whose value a config
   * provider resolves differently since, may carry it.
   */
  private static void exactlyOnceBoundaryOfConnect(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    if (exactlyOnce(parsed)
        && raw.get(CONNECT_TRANSACTION_BOUNDARY) instanceof String boundary
        && boundary.trim().equalsIgnoreCase("connector")) {
      out.add(
          new Problem(
              CONNECT_TRANSACTION_BOUNDARY,
              CONNECT_TRANSACTION_BOUNDARY
                  + "=connector is not supported: outbox-relay defines no transaction boundaries"
                  + " of its own, so no transaction would commit; use poll (the default) or"
                  + " interval"));
    }
  }

  /** Connect's interval of {@code transaction.boundary=interval}. */
  static final String CONNECT_TRANSACTION_BOUNDARY_INTERVAL = "transaction.boundary.interval.ms";

  /** The connector's override of its producer's transaction timeout. */
  static final String PRODUCER_TRANSACTION_TIMEOUT_CONFIG =
      "producer.override.transaction.timeout.ms";

  /**
   * With {@code transaction.boundary=interval}, an interval at or past the producer's transaction
   * timeout: under steady traffic every transaction is still open when the broker aborts it and
   * fences the producer, and the task fails again at every restart (nothing lost, nothing moving).
   * Judged when both are in the connector's configuration; the worker's own producer settings and
   * its offset.flush.interval.ms (the interval's default) are not seen here (docs/deployment.md).
   */
  private static void exactlyOnceIntervalWithinTransactionTimeout(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    if (!exactlyOnce(parsed)
        || !(raw.get(CONNECT_TRANSACTION_BOUNDARY) instanceof String boundary)
        || !boundary.trim().equalsIgnoreCase("interval")) {
      return;
    }
    Long interval = wholeNumber(raw.get(CONNECT_TRANSACTION_BOUNDARY_INTERVAL));
    Long timeout = wholeNumber(raw.get(PRODUCER_TRANSACTION_TIMEOUT_CONFIG));
    if (interval != null && timeout != null && interval >= timeout) {
      out.add(
          new Problem(
              CONNECT_TRANSACTION_BOUNDARY_INTERVAL,
              CONNECT_TRANSACTION_BOUNDARY_INTERVAL
                  + " ("
                  + interval
                  + " ms) must be below "
                  + PRODUCER_TRANSACTION_TIMEOUT_CONFIG
                  + " ("
                  + timeout
                  + " ms) with transaction.boundary=interval: every transaction would still be"
                  + " open when the broker aborts it, and the task fail at every restart"));
    }
  }

  /** Kafka's defaults of the two, where the connector's configuration does not say. */
  static final long DEFAULT_TRANSACTION_MS = 60_000L;

  /**
   * With {@code transaction.boundary=interval} and one or both of the interval and the producer's
   * transaction timeout left to the worker: the interval and the timeout taken as Kafka's defaults
   * where not set ({@code [interval, timeout]}), when the interval is not below the timeout so
   * taken; else null. Refused where both are set ({@link
   * #exactlyOnceIntervalWithinTransactionTimeout}); warned about here, as the worker may set them.
   */
  static long[] exactlyOnceIntervalMayOutlastTransaction(
      Function<String, Object> parsed, Map<String, ?> raw) {
    if (!exactlyOnce(parsed)
        || !(raw.get(CONNECT_TRANSACTION_BOUNDARY) instanceof String boundary)
        || !boundary.trim().equalsIgnoreCase("interval")) {
      return null;
    }
    Long interval = wholeNumber(raw.get(CONNECT_TRANSACTION_BOUNDARY_INTERVAL));
    Long timeout = wholeNumber(raw.get(PRODUCER_TRANSACTION_TIMEOUT_CONFIG));
    if (interval != null && timeout != null) {
      return null;
    }
    long i = interval == null ? DEFAULT_TRANSACTION_MS : interval;
    long t = timeout == null ? DEFAULT_TRANSACTION_MS : timeout;
    return i >= t ? new long[] {i, t} : null;
  }

  /** A configuration value's whole number, or null for none or another text. */
  private static Long wholeNumber(Object value) {
    if (!(value instanceof String text)) {
      return null;
    }
    try {
      return Long.parseLong(text.trim());
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /** Connect's per-connector key converter. */
  static final String CONNECT_KEY_CONVERTER = "key.converter";

  /** Kafka's converters of one number or boolean type: each writes its own type only. */
  static final List<String> ONE_TYPE_CONVERTERS =
      List.of(
          "org.apache.kafka.connect.converters.LongConverter",
          "org.apache.kafka.connect.converters.IntegerConverter",
          "org.apache.kafka.connect.converters.ShortConverter",
          "org.apache.kafka.connect.converters.DoubleConverter",
          "org.apache.kafka.connect.converters.FloatConverter",
          "org.apache.kafka.connect.converters.BooleanConverter");

  /** Kafka's converters that cannot write a string key (each writes its own type only). */
  static final List<String> NON_TEXT_KEY_CONVERTERS =
      java.util.stream.Stream.concat(
              java.util.stream.Stream.of(BYTE_ARRAY_CONVERTER), ONE_TYPE_CONVERTERS.stream())
          .toList();

  /**
   * The value is the payload as bytes, a string or a struct (payload.format): a converter of one
   * number or boolean type fails every record in Connect's conversion, after the claim (with
   * errors.tolerance=all every row would be retried until EXHAUSTED). Not judged with a transform
   * listed that may change the value (a Cast); one set only on the worker is not seen here.
   */
  private static void valueConverterWritesTheValue(Map<String, ?> raw, List<Problem> out) {
    String name = pluginName(raw.get(CONNECT_VALUE_CONVERTER));
    if (name == null || transformed(raw, RecordSide.VALUE)) {
      return;
    }
    if (ONE_TYPE_CONVERTERS.stream().anyMatch(c -> isPlugin(name, c))) {
      out.add(
          new Problem(
              CONNECT_VALUE_CONVERTER,
              CONNECT_VALUE_CONVERTER
                  + "="
                  + name
                  + " cannot write the record value, the payload (bytes, a string or a"
                  + " struct): every record would fail in Connect's conversion; use the converter"
                  + " payload.format asks for (ByteArrayConverter, StringConverter, JsonConverter"
                  + " or a schema registry's)"));
    }
  }

  /**
   * Every record carries string headers (its message id, under either convention): a header
   * converter that writes bytes or one number type fails every record in Connect's conversion. Not
   * judged with any transform listed (one may drop or replace headers); one set only on the worker
   * is not seen here.
   */
  private static void headerConverterWritesText(Map<String, ?> raw, List<Problem> out) {
    String name = pluginName(raw.get(CONNECT_HEADER_CONVERTER));
    if (name == null || raw.get("transforms") instanceof String listed && !listed.isBlank()) {
      return;
    }
    if (NON_TEXT_KEY_CONVERTERS.stream().anyMatch(c -> isPlugin(name, c))) {
      out.add(
          new Problem(
              CONNECT_HEADER_CONVERTER,
              CONNECT_HEADER_CONVERTER
                  + "="
                  + name
                  + " cannot write the record's headers, strings (the message id, the row's"
                  + " headers): every record would fail in Connect's conversion; use"
                  + " SimpleHeaderConverter (Connect's default) or StringConverter"));
    }
  }

  /**
   * The record key is the aggregate id as a string. A converter that writes another type only would
   * fail every record in Connect's conversion, after the claim (with errors.tolerance=all, every
   * row would be retried until EXHAUSTED). A transform may cast the key (Cast$Key), so with a
   * transform listed that may change the key it is not judged; a converter set only on the worker
   * is not seen here.
   */
  private static void keyConverterWritesText(Map<String, ?> raw, List<Problem> out) {
    String name = pluginName(raw.get(CONNECT_KEY_CONVERTER));
    if (name == null || transformed(raw, RecordSide.KEY)) {
      return;
    }
    for (String converter : NON_TEXT_KEY_CONVERTERS) {
      if (isPlugin(name, converter)) {
        out.add(
            new Problem(
                CONNECT_KEY_CONVERTER,
                CONNECT_KEY_CONVERTER
                    + "="
                    + name
                    + " cannot write the record key, the aggregate id as a string: every record"
                    + " would fail in Connect's conversion; use StringConverter (the aggregate id's"
                    + " text)"));
        return;
      }
    }
  }

  /**
   * StringConverter encodes with its {@code converter.encoding}, and replaces what that charset
   * cannot encode with '?': a payload in another encoding than the relay's UTF-8 reached Kafka with
   * its characters replaced, the row recorded published (and distinct aggregate ids could become
   * one key); UTF-16 doubles a record past the size the relay checked. Refused, naming the setting.
   */
  private static void stringConverterWritesUtf8(
      Map<String, ?> raw, String converterKey, List<Problem> out) {
    String name = pluginName(raw.get(converterKey));
    if (name == null || !isPlugin(name, STRING_CONVERTER)) {
      return;
    }
    // Its serializer reads the side's own setting first ({key|value}.serializer.encoding, a
    // header converter's as a value's), then the converter's.
    String side = converterKey.equals(CONNECT_KEY_CONVERTER) ? "key" : "value";
    for (String setting : List.of(STRING_CONVERTER_ENCODING, side + ".serializer.encoding")) {
      Object encoding = raw.get(converterKey + "." + setting);
      if (encoding != null && !utf8(encoding.toString())) {
        out.add(
            new Problem(
                converterKey,
                converterKey
                    + "."
                    + setting
                    + " must be UTF-8 with StringConverter (it is "
                    + Printable.escape(encoding.toString())
                    + "): the relay's text is UTF-8, and another encoding replaces the characters"
                    + " it cannot encode with '?' (the row recorded published all the same) or"
                    + " changes a record's size past what the relay checked"));
      }
    }
  }

  private static boolean utf8(String charset) {
    try {
      return Charset.forName(charset.trim()).equals(StandardCharsets.UTF_8);
    } catch (IllegalArgumentException unknown) { // IllegalCharsetNameException too
      return false;
    }
  }

  /** StringConverter's charset setting (its default is UTF-8). */
  static final String STRING_CONVERTER_ENCODING = "converter.encoding";

  /** Connect's setting of the connector's own header converter. */
  static final String CONNECT_HEADER_CONVERTER = "header.converter";

  static boolean exactlyOnce(Function<String, Object> parsed) {
    return parsed.apply(DELIVERY_GUARANTEE_CONFIG) instanceof String guarantee
        && guarantee.trim().equalsIgnoreCase(EXACTLY_ONCE);
  }

  /** Connect's own setting: with it, Connect refuses to run the connector without transactions. */
  static final String CONNECT_EXACTLY_ONCE_SUPPORT = "exactly.once.support";

  /**
   * Exactly-once must not quietly run without it: Connect's {@code exactly.once.support=required}
   * makes Connect refuse the connector on workers without exactly-once source support.
   */
  private static void exactlyOnceRequiredOfConnect(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    if (exactlyOnce(parsed)
        && !(raw.get(CONNECT_EXACTLY_ONCE_SUPPORT) instanceof String support
            && support.trim().equalsIgnoreCase("required"))) {
      out.add(
          new Problem(
              DELIVERY_GUARANTEE_CONFIG,
              DELIVERY_GUARANTEE_CONFIG
                  + "=exactly-once needs "
                  + CONNECT_EXACTLY_ONCE_SUPPORT
                  + "=required in the connector configuration, so that Connect runs it only on"
                  + " workers with exactly.once.source.support=enabled"));
    }
  }

  /**
   * A column sent under a header name the relay sets itself would make every row unpublishable
   * (HEADER_NAME_RESERVED): refused here, once, instead.
   */
  private static void headersNotReserved(Function<String, Object> parsed, List<Problem> out) {
    @SuppressWarnings("unchecked")
    List<String> placements = (List<String>) parsed.apply(COLUMN_ADDITIONAL_PLACEMENT_CONFIG);
    String convention = (String) parsed.apply(ROUTING_CONVENTION_CONFIG);
    String eventType = (String) parsed.apply(COLUMN_EVENT_TYPE_CONFIG);
    if (placements == null || convention == null || eventType == null) {
      return;
    }
    RoutingConvention routing =
        convention.equalsIgnoreCase(ROUTING_DEBEZIUM)
            ? RoutingConvention.DEBEZIUM
            : RoutingConvention.OUTBOX_RELAY;
    List<ColumnMapping.HeaderColumn> headers = HeaderPlacements.parse(placements);
    String payload = (String) parsed.apply(COLUMN_PAYLOAD_CONFIG);
    for (int i = 0; i < headers.size(); i++) {
      String notAHeader = HeaderPlacements.notAHeader(headers.get(i).column(), payload);
      if (notAHeader != null) {
        out.add(
            new Problem(
                COLUMN_ADDITIONAL_PLACEMENT_CONFIG,
                COLUMN_ADDITIONAL_PLACEMENT_CONFIG + " entry " + (i + 1) + " " + notAHeader));
      }
      if (HeaderPlacements.isReserved(headers.get(i), routing, eventType)) {
        out.add(
            new Problem(
                COLUMN_ADDITIONAL_PLACEMENT_CONFIG,
                COLUMN_ADDITIONAL_PLACEMENT_CONFIG
                    + " entry "
                    + (i + 1)
                    + " names a header the relay sets itself (names under "
                    + OutboxHeaders.RESERVED_PREFIX
                    + ", and id and eventType under "
                    + ROUTING_CONVENTION_CONFIG
                    + "="
                    + ROUTING_DEBEZIUM
                    + ", where only "
                    + COLUMN_EVENT_TYPE_CONFIG
                    + ":header:eventType is accepted): choose another alias"));
      }
    }
  }

  /** The message id is read from a column no other message field is ({@link ColumnMapping}). */
  private static void messageIdColumnOfItsOwn(Function<String, Object> parsed, List<Problem> out) {
    String messageId = (String) parsed.apply(COLUMN_MESSAGE_ID_CONFIG);
    String aggregateType = (String) parsed.apply(COLUMN_AGGREGATE_TYPE_CONFIG);
    String eventType = (String) parsed.apply(COLUMN_EVENT_TYPE_CONFIG);
    String payload = (String) parsed.apply(COLUMN_PAYLOAD_CONFIG);
    if (messageId == null || aggregateType == null || eventType == null || payload == null) {
      return;
    }
    String shared = ColumnMapping.messageIdSharedWith(messageId, aggregateType, eventType, payload);
    if (shared != null) {
      out.add(new Problem(COLUMN_MESSAGE_ID_CONFIG, COLUMN_MESSAGE_ID_CONFIG + " " + shared));
    }
  }

  /**
   * A column named for the event's time is read only for a record timestamp taken from the row: a
   * setting that would change nothing is refused rather than ignored.
   */
  private static void eventTimestampColumnRead(Function<String, Object> parsed, List<Problem> out) {
    String column = (String) parsed.apply(COLUMN_EVENT_TIMESTAMP_CONFIG);
    String timestamp = (String) parsed.apply(RECORD_TIMESTAMP_CONFIG);
    if (column == null
        || timestamp == null
        || column.equals(ColumnMapping.RELAY.eventTimestamp())
        || !timestamp.toUpperCase(Locale.ROOT).replace('-', '_').equals(SEND_TIME.name())) {
      return;
    }
    out.add(
        new Problem(
            COLUMN_EVENT_TIMESTAMP_CONFIG,
            COLUMN_EVENT_TIMESTAMP_CONFIG
                + " is read only under "
                + RECORD_TIMESTAMP_CONFIG
                + "=created_at, and "
                + RECORD_TIMESTAMP_CONFIG
                + " is send_time: remove one of them"));
  }

  /**
   * The migrations create and upgrade the relay's own table, whose columns have the relay's names:
   * a table read under other names (an adopted Debezium table) is kept up to date by its owner. The
   * event's time may come from a column the application added to the relay's table.
   */
  private static void mappedColumnsNotMigrated(Function<String, Object> parsed, List<Problem> out) {
    if (!Boolean.TRUE.equals(parsed.apply(SCHEMA_MIGRATE_ON_START_CONFIG))) {
      return;
    }
    Map<String, String> relayNames =
        Map.of(
            COLUMN_MESSAGE_ID_CONFIG, ColumnMapping.RELAY.messageId(),
            COLUMN_AGGREGATE_TYPE_CONFIG, ColumnMapping.RELAY.aggregateType(),
            COLUMN_AGGREGATE_ID_CONFIG, ColumnMapping.RELAY.aggregateId(),
            COLUMN_EVENT_TYPE_CONFIG, ColumnMapping.RELAY.eventType(),
            COLUMN_PAYLOAD_CONFIG, ColumnMapping.RELAY.payload());
    relayNames.entrySet().stream()
        .sorted(Map.Entry.comparingByKey())
        .filter(e -> parsed.apply(e.getKey()) != null)
        .filter(e -> !e.getValue().equals(parsed.apply(e.getKey())))
        .forEach(
            e ->
                out.add(
                    new Problem(
                        e.getKey(),
                        e.getKey()
                            + " names a column other than the relay's own ("
                            + e.getValue()
                            + "), which a table created or migrated by "
                            + SCHEMA_MIGRATE_ON_START_CONFIG
                            + "=true does not have: set "
                            + SCHEMA_MIGRATE_ON_START_CONFIG
                            + "=false for a table adopted with outbox-relay-cli"
                            + " adopt-debezium-table")));
  }

  /**
   * The driver takes a user or password in the URL's query string over connection.user and
   * connection.password: with both given, the key would silently not apply (a rotated password
   * would change nothing). Reported on the key, never with a value.
   */
  private static void credentialsInOnePlace(Function<String, Object> parsed, List<Problem> out) {
    String url = (String) parsed.apply(CONNECTION_URL_CONFIG);
    if (url == null) {
      return;
    }
    Properties inUrl = DataSourceFactory.urlParameters(url);
    String user = (String) parsed.apply(CONNECTION_USER_CONFIG);
    if (inUrl.containsKey("user") && user != null && !user.isEmpty()) {
      out.add(
          new Problem(
              CONNECTION_USER_CONFIG,
              CONNECTION_URL_CONFIG
                  + " names a user too, and the driver would take the URL's: give the user in"
                  + " one place, "
                  + CONNECTION_USER_CONFIG));
    }
    Password password = (Password) parsed.apply(CONNECTION_PASSWORD_CONFIG);
    if (inUrl.containsKey("password")
        && password != null
        && password.value() != null
        && !password.value().isEmpty()) {
      out.add(
          new Problem(
              CONNECTION_PASSWORD_CONFIG,
              CONNECTION_URL_CONFIG
                  + " holds a password too, and the driver would take the URL's: give the"
                  + " password in one place, "
                  + CONNECTION_PASSWORD_CONFIG));
    }
  }

  /** ConfigDef trims list entries, which would silently drop a control character at an end. */
  private static void instanceKeysWithoutControlCharacters(
      Function<String, Object> parsed, Map<String, ?> raw, List<Problem> out) {
    if (parsed.apply(INSTANCE_KEYS_CONFIG) != null
        && raw.get(INSTANCE_KEYS_CONFIG) instanceof String text) {
      try {
        Validators.requireNoControlCharacters(INSTANCE_KEYS_CONFIG, text);
      } catch (ConfigException e) {
        out.add(new Problem(INSTANCE_KEYS_CONFIG, e.getMessage()));
      }
    }
  }
}
