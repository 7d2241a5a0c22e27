package dev.outboxrelay.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.ConverterKind;
import dev.outboxrelay.mapping.InferredSchema;
import dev.outboxrelay.mapping.PayloadFormat;
import dev.outboxrelay.mapping.RecordTimestamp;
import dev.outboxrelay.mapping.RoutingConvention;
import dev.outboxrelay.retry.BackoffPolicy;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.postgres.OutboxTable;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Parsing, defaults and typed accessors; every bad value is rejected naming its key. */
class OutboxSourceConfigTest {
  static final String URL = "jdbc:postgresql://db.example:5432/app";

  static Map<String, String> minimal() {
    Map<String, String> props = new HashMap<>();
    props.put("connection.url", URL);
    props.put("instance.keys", "orders");
    return props;
  }

  static Map<String, String> with(String key, String value) {
    Map<String, String> props = minimal();
    props.put(key, value);
    return props;
  }

  static Map<String, String> without(String key) {
    Map<String, String> props = minimal();
    props.remove(key);
    return props;
  }

  @Test
  void defaults() {
    OutboxSourceConfig config = new OutboxSourceConfig(minimal());

    assertEquals(URL, config.jdbcUrl());
    assertNull(config.user());
    assertNull(config.password());
    assertEquals(4, config.poolSize());
    assertEquals(Duration.ofSeconds(5), config.connectionTimeout());
    assertEquals(Duration.ofSeconds(30), config.statementTimeout());
    assertEquals(Duration.ofSeconds(60), config.socketTimeout());
    assertEquals(OutboxTable.parse("outbox"), config.table());
    assertEquals(List.of("orders"), List.copyOf(config.instanceKeys()));
    assertFalse(config.migrateOnStart());
    assertEquals(500, config.batchSize());
    assertEquals(Duration.ofSeconds(1), config.pollInterval());
    assertEquals(Duration.ofMinutes(1), config.leaseDuration());
    assertEquals(Duration.ofSeconds(20), config.leaseRenewalInterval());
    assertEquals(10, config.maxAttempts());
    assertEquals(
        new BackoffPolicy(Duration.ofSeconds(1), Duration.ofMinutes(5), 2.0, 0.2),
        config.backoff());
    assertTrue(config.orderingEnabled());
    assertEquals(RoutingConvention.OUTBOX_RELAY, config.routingConvention());
    assertEquals("outbox.${aggregate_type}", config.topicTemplate());
    assertEquals(PayloadFormat.BYTES, config.payloadFormat());
    assertEquals(1_000_000, config.payloadMaxBytes());
    assertEquals(Optional.empty(), config.deadLetterTopic());
    assertEquals(NullMetadataPolicy.RETRY, config.nullMetadataPolicy());
    assertEquals(Optional.of(Duration.ofDays(7)), config.retention());
    assertEquals(Duration.ofMinutes(1), config.cleanupInterval());
    assertEquals(1000, config.cleanupBatchSize());
    assertEquals(Duration.ofSeconds(30), config.backlogMetricsInterval());
    assertTrue(config.notifyEnabled());
  }

  /**
   * The producer refuses a record over max.request.size and one over buffer.memory alike (failing
   * the task): the record limit that parks a row instead (RECORD_TOO_LARGE) is the smaller.
   */
  @Test
  void theRecordLimitIsTheSmallerOfMaxRequestSizeAndBufferMemory() {
    assertEquals(1_048_576, new OutboxSourceConfig(minimal()).producerRecordLimit());
    Map<String, String> large = with("producer.override.max.request.size", "67108864");
    assertEquals(33_554_432, new OutboxSourceConfig(large).producerRecordLimit(), "32 MiB buffer");
    large.put("producer.override.buffer.memory", "134217728");
    assertEquals(67_108_864, new OutboxSourceConfig(large).producerRecordLimit());
  }

  @Test
  void exactlyOnceNeedsConnectToRequireIt() {
    Map<String, String> props = with("delivery.guarantee", "exactly-once");
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(e.getMessage().contains("delivery.guarantee"), e.getMessage());
    assertTrue(e.getMessage().contains("exactly.once.support=required"), e.getMessage());

    props.put("exactly.once.support", "requested");
    assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));

    props.put("exactly.once.support", "required");
    OutboxSourceConfig config = new OutboxSourceConfig(props);
    assertTrue(config.exactlyOnce());
    assertEquals(16, config.exactlyOnceBuckets());
    assertFalse(new OutboxSourceConfig(minimal()).exactlyOnce(), "at-least-once by default");
  }

  @Test
  void everyKeyHasDocGroupAndDisplayName() {
    var keys = OutboxSourceConfig.configDef().configKeys().values();
    assertEquals(45, keys.size());
    for (var key : keys) {
      assertFalse(key.documentation == null || key.documentation.isBlank(), key.name);
      assertFalse(key.group == null || key.group.isBlank(), key.name);
      assertFalse(key.displayName == null || key.displayName.isBlank(), key.name);
      assertTrue(key.orderInGroup > 0, key.name);
    }
  }

  @Test
  void unsetSocketTimeoutFollowsTheStatementTimeout() {
    OutboxSourceConfig derived = new OutboxSourceConfig(with("statement.timeout.ms", "120000"));
    Map<String, String> props = with("statement.timeout.ms", "120000");
    props.put("socket.timeout.ms", "121000");
    OutboxSourceConfig explicit = new OutboxSourceConfig(props);

    assertEquals(Duration.ofSeconds(150), derived.socketTimeout());
    assertEquals(Duration.ofSeconds(121), explicit.socketTimeout());
  }

  @Test
  void socketTimeoutNotAboveStatementTimeoutIsRejected() {
    Map<String, String> props = with("statement.timeout.ms", "120000");
    props.put("socket.timeout.ms", "60000");

    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(
        e.getMessage().startsWith("socket.timeout.ms must be more than statement.timeout.ms"),
        e.getMessage());
  }

  @Test
  void debeziumConventionDefaultsToItsTopicNames() {
    OutboxSourceConfig config = new OutboxSourceConfig(with("routing.convention", "debezium"));

    assertEquals(RoutingConvention.DEBEZIUM, config.routingConvention());
    assertEquals("outbox.event.${aggregate_type}", config.topicTemplate());
  }

  @Test
  void choicesIgnoreCase() {
    Map<String, String> props = minimal();
    props.put("routing.convention", "Outbox-Relay");
    props.put("payload.format", "JSON");
    props.put("null.metadata.policy", "Fail");
    props.put("record.timestamp", "Send_Time");
    OutboxSourceConfig config = new OutboxSourceConfig(props);

    assertEquals(RoutingConvention.OUTBOX_RELAY, config.routingConvention());
    assertEquals(PayloadFormat.JSON, config.payloadFormat());
    assertEquals(NullMetadataPolicy.FAIL, config.nullMetadataPolicy());
    assertEquals(RecordTimestamp.SEND_TIME, config.recordTimestamp());
  }

  @Test
  void aJsonPayloadsSchemaIsInferredOnlyWhenAskedAndNamedAfterThePayloadColumn() {
    Map<String, String> props = with("payload.format", "json");
    assertEquals(Optional.empty(), new OutboxSourceConfig(props).inferredSchema());

    props.put("payload.json.schema", "Inferred");
    assertEquals(
        Optional.of(new InferredSchema("payload", InferredSchema.NullMembers.IGNORE)),
        new OutboxSourceConfig(props).inferredSchema());

    props.put("column.payload", "body");
    props.put("payload.json.null.behavior", "optional_bytes");
    assertEquals(
        Optional.of(new InferredSchema("body", InferredSchema.NullMembers.OPTIONAL_BYTES)),
        new OutboxSourceConfig(props).inferredSchema());

    props.put("payload.format", "string");
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertEquals(
        "payload.json.schema=inferred needs payload.format=json (it is string)", e.getMessage());
  }

  /** The record-size estimate follows the connector's own value converter; schemas by default. */
  @Test
  void theValueConverterIsReadFromTheConnectorsOwnSetting() {
    assertEquals(ConverterKind.OTHER, new OutboxSourceConfig(minimal()).valueConverter());
    Map<String, String> props = with("value.converter", JSON_CONVERTER);
    assertEquals(ConverterKind.JSON_WITH_SCHEMAS, new OutboxSourceConfig(props).valueConverter());
    props.put("value.converter.schemas.enable", " FALSE ");
    assertEquals(ConverterKind.JSON, new OutboxSourceConfig(props).valueConverter());
    props.put("value.converter", " Json");
    assertEquals(ConverterKind.JSON, new OutboxSourceConfig(props).valueConverter());
    props.put("value.converter.schemas.enable", "true");
    assertEquals(ConverterKind.JSON_WITH_SCHEMAS, new OutboxSourceConfig(props).valueConverter());
    props.put("value.converter", "org.apache.kafka.connect.converters.ByteArrayConverter");
    assertEquals(ConverterKind.OTHER, new OutboxSourceConfig(props).valueConverter());
  }

  private static final String JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter";

  /**
   * A message field may be read from its own column or one the relay does not have, never from
   * another of the relay's columns: the message id read from instance_key made a discard of one
   * message id a discard of every parked row of the key.
   */
  @Test
  void aMessageFieldIsNeverReadFromAnotherOfTheRelaysColumns() {
    for (String[] misuse :
        new String[][] {
          {"column.message.id", "instance_key"},
          {"column.message.id", "aggregate_id"},
          {"column.aggregate.id", "lease_owner"},
          {"column.payload", "headers"},
          {"column.event.timestamp", "next_attempt_at"}
        }) {
      ConfigException e =
          assertThrows(
              ConfigException.class,
              () -> new OutboxSourceConfig(with(misuse[0], misuse[1])),
              misuse[0]);
      assertTrue(
          e.getMessage().startsWith(misuse[0] + " names the relay's own column " + misuse[1]),
          e.getMessage());
    }
    new OutboxSourceConfig(with("column.message.id", "message_id")); // its own
    new OutboxSourceConfig(with("column.message.id", "id")); // Debezium's, not the relay's
  }

  /**
   * The message id is never read from the column of another field that many rows share (on an
   * adopted table, the message id read from aggregatetype made a discard of one message id a
   * discard of every parked row of that aggregate type); the aggregate id may share it, as
   * Debezium's table.field.event.key=id does.
   */
  @Test
  void theMessageIdIsNotReadFromAColumnManyRowsShare() {
    Map<String, String> props = with("column.message.id", "kind");
    props.put("column.aggregate.type", "kind");
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(
        e.getMessage().contains("column.message.id is the aggregate type column too (kind)"),
        e.getMessage());

    Map<String, String> keyedById = with("column.message.id", "id");
    keyedById.put("column.aggregate.id", "id");
    new OutboxSourceConfig(keyedById);
  }

  /**
   * More than one request in flight reorders an aggregate's records on a retry, unless idempotent:
   * refused with idempotence switched off; left to the worker (its settings, or exactly-once
   * support, may make the producer idempotent) when not given.
   */
  @Test
  void moreThanOneRequestInFlightWithoutIdempotenceIsRefusedWhileOrdering() {
    Map<String, String> props =
        with("producer.override.max.in.flight.requests.per.connection", " 5 ");
    props.put("producer.override.enable.idempotence", " false ");
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(
        e.getMessage()
            .startsWith(
                "producer.override.max.in.flight.requests.per.connection above 1 with"
                    + " producer.override.enable.idempotence=false"),
        e.getMessage());

    props.put("producer.override.enable.idempotence", "TRUE");
    assertFalse(new OutboxSourceConfig(props).producerOrderLeftToTheWorker());
    props.remove("producer.override.enable.idempotence");
    assertTrue(new OutboxSourceConfig(props).producerOrderLeftToTheWorker(), "the worker's");
    props.put("ordering.enabled", "false");
    assertFalse(new OutboxSourceConfig(props).producerOrderLeftToTheWorker());
    props.put("ordering.enabled", "true");
    props.put("producer.override.max.in.flight.requests.per.connection", "1");
    props.put("producer.override.enable.idempotence", "false");
    assertFalse(new OutboxSourceConfig(props).producerOrderLeftToTheWorker());
  }

  /**
   * Two instance keys that differ only by '.' against '_' in a template that takes them fill it
   * with topic names Kafka takes for one: it cannot create the second, and one key's rows were
   * never published.
   */
  @Test
  void instanceKeysWhoseTopicsCollideAreRefused() {
    for (String template :
        List.of("outbox.${instance_key}", "o.${instance_key}.${aggregate_type}")) {
      Map<String, String> props = with("instance.keys", "orders.eu,orders_eu");
      props.put("topic.template", template);
      ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
      assertTrue(
          e.getMessage()
              .startsWith(
                  "topic.template filled with instance keys 'orders.eu' and 'orders_eu' names"
                      + " topics Kafka takes for one"),
          e.getMessage());
      props.put("instance.keys", "orders.eu,orders_us");
      new OutboxSourceConfig(props);
    }
    Map<String, String> oneTopic = with("instance.keys", "orders.eu,orders_eu");
    oneTopic.put("topic.template", "outbox.events");
    new OutboxSourceConfig(oneTopic);
  }

  /**
   * A topic.allowed.regex that no topic of the template's fixed beginning can match (kept from
   * another relay's naming) parked every row without a topic of its own: refused; one that may
   * match some is left to the rows. The routing convention's default template is not judged: where
   * every row names its own topic, a regex bounding those alone is right.
   */
  @Test
  void anAllowedRegexThatNoRoutedTopicCanMatchIsRefused() {
    Map<String, String> routed = with("topic.template", "outbox.event.${aggregate_type}");
    for (String regex : List.of("outbox\\.[a-z]+", "events\\..*")) {
      routed.put("topic.allowed.regex", regex);
      ConfigException e =
          assertThrows(ConfigException.class, () -> new OutboxSourceConfig(routed), regex);
      assertTrue(
          e.getMessage()
              .startsWith(
                  "topic.allowed.regex matches no topic topic.template gives, which begin"
                      + " 'outbox.event.'"),
          e.getMessage());
      Map<String, String> byDefault = with("routing.convention", "debezium");
      byDefault.put("topic.allowed.regex", regex);
      new OutboxSourceConfig(byDefault);
    }
    for (String regex : List.of("outbox\\.event\\.[a-z]+", ".*", "outbox\\.(event\\.)?.*")) {
      routed.put("topic.allowed.regex", regex);
      new OutboxSourceConfig(routed);
    }
    Map<String, String> perKey = with("topic.template", "${instance_key}.${aggregate_type}");
    perKey.put("topic.allowed.regex", "us\\..*");
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(perKey));
    assertTrue(
        e.getMessage().contains("gives for instance key 'orders', which begin 'orders.'"),
        e.getMessage());
    perKey.put("topic.template", "${aggregate_type}.events");
    new OutboxSourceConfig(perKey);
  }

  /**
   * A producer that ignores record keys spreads an aggregate's records over partitions, where
   * consumers read them in any order: refused while ordering (exactly once too); not otherwise, nor
   * for a partitioner of another author.
   */
  @Test
  void aPartitionerThatIgnoresKeysIsRefusedWhileOrdering() {
    for (String[] setting :
        new String[][] {
          {"producer.override.partitioner.ignore.keys", " TRUE "},
          {
            "producer.override.partitioner.class",
            "org.apache.kafka.clients.producer.RoundRobinPartitioner"
          },
        }) {
      Map<String, String> props = with(setting[0], setting[1]);
      ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
      assertTrue(e.getMessage().startsWith(setting[0]), e.getMessage());
      assertTrue(e.getMessage().contains("ordering.enabled=true"), e.getMessage());
      props.put("ordering.enabled", "false");
      new OutboxSourceConfig(props);
      props.put("delivery.guarantee", "exactly-once"); // no order to keep there either
      props.put("exactly.once.support", "required");
      new OutboxSourceConfig(props);
    }
    new OutboxSourceConfig(with("producer.override.partitioner.ignore.keys", "false"));
    new OutboxSourceConfig(with("producer.override.partitioner.class", "com.example.ByKey"));
  }

  /**
   * Connect's own settings that would lose rows are refused at every start too, not only when
   * Connect validates a changed configuration: a connector saved before these rules, or whose value
   * a config provider changed behind it, is started without validation.
   */
  @Test
  void connectSettingsThatWouldLoseRowsAreRefusedAtStartToo() {
    Map<String, String> acks = with("producer.override.acks", "1");
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(acks));
    assertTrue(e.getMessage().startsWith("producer.override.acks must be all"), e.getMessage());
    acks.put("producer.override.acks", " all ");
    new OutboxSourceConfig(acks);

    Map<String, String> exactlyOnce = with("delivery.guarantee", "exactly-once");
    exactlyOnce.put("exactly.once.support", "required");
    exactlyOnce.put("errors.tolerance", "all");
    e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(exactlyOnce));
    assertTrue(e.getMessage().startsWith("errors.tolerance must be none"), e.getMessage());
    exactlyOnce.put("errors.tolerance", "none");
    exactlyOnce.put("transforms", "drop");
    exactlyOnce.put("transforms.drop.type", "Filter");
    e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(exactlyOnce));
    assertTrue(
        e.getMessage()
            .startsWith("transforms.drop.type must not be a transform that drops records"),
        e.getMessage());
    for (String filter :
        List.of(
            "io.confluent.connect.transforms.Filter$Value",
            "io.confluent.connect.transforms.Filter$Key",
            "io.debezium.transforms.Filter")) {
      exactlyOnce.put("transforms.drop.type", filter);
      assertThrows(ConfigException.class, () -> new OutboxSourceConfig(exactlyOnce), filter);
    }
    exactlyOnce.put("transforms.drop.type", "org.apache.kafka.connect.transforms.RegexRouter");
    new OutboxSourceConfig(exactlyOnce);

    exactlyOnce.remove("transforms");
    exactlyOnce.remove("transforms.drop.type");
    // Connect refuses it only in a distributed herder's validation; no transaction would commit.
    exactlyOnce.put("transaction.boundary", " Connector ");
    e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(exactlyOnce));
    assertTrue(
        e.getMessage().startsWith("transaction.boundary=connector is not supported"),
        e.getMessage());
    exactlyOnce.put("transaction.boundary", "interval");
    new OutboxSourceConfig(exactlyOnce);

    exactlyOnce.put("transaction.boundary", "connector");
    exactlyOnce.remove("delivery.guarantee"); // at least once, a dropped record's row goes back
    exactlyOnce.put("errors.tolerance", "all");
    new OutboxSourceConfig(exactlyOnce);
  }

  /**
   * At least once, a Filter only with null.metadata.policy=fail, at start too: with retry (the
   * default) each row it dropped was retried until its attempts ran out, for minutes. Not under
   * errors.tolerance=all.
   */
  @Test
  void aFilterWithTheRetryPolicyIsRefusedAtStart() {
    Map<String, String> props = with("transforms", "drop");
    props.put("transforms.drop.type", "io.debezium.transforms.Filter");
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(
        e.getMessage()
            .startsWith("null.metadata.policy must be fail with a transform that drops records"),
        e.getMessage());
    props.put("null.metadata.policy", " RETRY ");
    assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    props.put("null.metadata.policy", "fail");
    new OutboxSourceConfig(props);
    // Where a failed send comes without metadata too, retry sends it again: the user's choice.
    props.put("null.metadata.policy", "retry");
    props.put("errors.tolerance", "all");
    new OutboxSourceConfig(props);
  }

  /** No payload in a log: Connect's error log of whole records is refused, whatever its switch. */
  @Test
  void connectsErrorLogOfWholeRecordsIsRefused() {
    Map<String, String> props = with("errors.log.include.messages", " TRUE ");
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(
        e.getMessage().startsWith("errors.log.include.messages must be false"), e.getMessage());
    props.put("errors.log.enable", "true");
    assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    props.put("errors.log.include.messages", "false");
    new OutboxSourceConfig(props);
  }

  /**
   * A transform that cannot change the value leaves the converter's check on: a StringConverter
   * beside a RegexRouter sent each payload as "[B@..." and recorded the row published. One that may
   * change it (a custom class, a type not given) still turns the check off.
   */
  @Test
  void onlyATransformThatMayChangeTheValueTurnsTheConvertersCheckOff() {
    Map<String, String> props = with("value.converter", "StringConverter");
    props.put("transforms", "route, header,key ,drop,copy");
    props.put("transforms.route.type", "org.apache.kafka.connect.transforms.RegexRouter");
    props.put("transforms.header.type", "InsertHeader"); // Connect's alias
    props.put("transforms.key.type", "org.apache.kafka.connect.transforms.Cast$Key");
    props.put("transforms.drop.type", "org.apache.kafka.connect.transforms.Filter");
    props.put("null.metadata.policy", "fail"); // what a Filter needs
    props.put("transforms.copy.type", "org.apache.kafka.connect.transforms.ValueToKey");
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(e.getMessage().startsWith("payload.format must be string with"), e.getMessage());

    for (String mayChange :
        List.of(
            "org.apache.kafka.connect.transforms.Cast$Value",
            "org.apache.kafka.connect.transforms.HoistField$Value",
            "com.example.MyTransform")) {
      props.put("transforms.copy.type", mayChange);
      assertEquals(PayloadFormat.BYTES, new OutboxSourceConfig(props).payloadFormat(), mayChange);
    }
    props.remove("transforms.copy.type"); // Connect refuses it; nothing to judge here
    assertEquals(PayloadFormat.BYTES, new OutboxSourceConfig(props).payloadFormat());

    // The key's check the other way round: a $Value transform cannot change the key.
    Map<String, String> keyed = with("key.converter", ConfigChecks.BYTE_ARRAY_CONVERTER);
    keyed.put("transforms", "cast");
    keyed.put("transforms.cast.type", "org.apache.kafka.connect.transforms.Cast$Value");
    e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(keyed));
    assertTrue(e.getMessage().startsWith("key.converter="), e.getMessage());
    keyed.put("transforms.cast.type", "org.apache.kafka.connect.transforms.ValueToKey");
    new OutboxSourceConfig(keyed); // sets the key from the value: not judged
  }

  /**
   * StringConverter encodes with its converter.encoding and writes '?' for what that charset cannot
   * encode: a payload or an aggregate id in another encoding than UTF-8 reached Kafka altered, its
   * row recorded published. Refused on the converter, naming the setting; UTF-8 by any of its names
   * passes.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"value.converter", "key.converter", "header.converter"})
  void aStringConverterWritesUtf8(String converter) {
    Map<String, String> props = with("payload.format", "string");
    props.put(converter, ConfigChecks.STRING_CONVERTER);
    // Its serializer's own setting comes first: the side's, a header converter's as a value's.
    String serializer = (converter.startsWith("key") ? "key" : "value") + ".serializer.encoding";
    for (String setting : List.of("converter.encoding", serializer)) {
      for (String encoding : List.of("ISO-8859-1", "UTF-16", "not-a-charset")) {
        props.put(converter + "." + setting, encoding);
        ConfigException e =
            assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
        assertTrue(
            e.getMessage()
                .startsWith(
                    converter
                        + "."
                        + setting
                        + " must be UTF-8 with StringConverter (it is "
                        + encoding
                        + ")"),
            e.getMessage());
      }
      for (String encoding : List.of("UTF-8", "utf8", " UTF-8 ")) {
        props.put(converter + "." + setting, encoding);
        new OutboxSourceConfig(props);
      }
    }
  }

  /**
   * The connector's own value converter must write the payload format: StringConverter sent a byte
   * array as "[B@..." and the row was recorded published (a Debezium user's converter with the
   * default payload.format=bytes); ByteArrayConverter failed the task at every record.
   */
  @Test
  void thePayloadFormatIsOneTheConnectorsValueConverterWrites() {
    Map<String, String> props = with("value.converter", ConfigChecks.STRING_CONVERTER);
    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(
        e.getMessage()
            .startsWith(
                "payload.format must be string with value.converter="
                    + ConfigChecks.STRING_CONVERTER
                    + " (it is bytes)"),
        e.getMessage());
    props.put("payload.format", "json");
    assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    props.put("payload.format", "String");
    assertEquals(PayloadFormat.STRING, new OutboxSourceConfig(props).payloadFormat());

    props.put("value.converter", " " + ConfigChecks.BYTE_ARRAY_CONVERTER + " ");
    e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(e.getMessage().startsWith("payload.format must be bytes with"), e.getMessage());
    for (String alias : List.of("ByteArrayConverter", "ByteArray")) { // Connect's plugin aliases
      props.put("value.converter", alias);
      assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props), alias);
    }
    // A transform may turn the value into what the converter writes (Cast to a string, say).
    props.put("transforms", "cast");
    props.put("transforms.cast.type", "org.apache.kafka.connect.transforms.Cast$Value");
    assertEquals(PayloadFormat.STRING, new OutboxSourceConfig(props).payloadFormat());
    props.remove("transforms");
    props.remove("transforms.cast.type");
    props.put("value.converter", ConfigChecks.BYTE_ARRAY_CONVERTER);
    props.put("payload.format", "bytes");
    assertEquals(PayloadFormat.BYTES, new OutboxSourceConfig(props).payloadFormat());

    // Any format for any other converter, and for the worker's (not in the connector's settings).
    for (String format : List.of("bytes", "string", "json")) {
      props.put("payload.format", format);
      props.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
      new OutboxSourceConfig(props);
      props.remove("value.converter");
      new OutboxSourceConfig(props);
    }
  }

  @Test
  void explicitTopicTemplateWinsOverTheConvention() {
    Map<String, String> props = with("topic.template", "${instance_key}.${aggregate_type}-events");
    props.put("routing.convention", "debezium");

    assertEquals(
        "${instance_key}.${aggregate_type}-events", new OutboxSourceConfig(props).topicTemplate());
  }

  @Test
  void emptyTopicTemplateMeansTheDefault() {
    assertEquals(
        "outbox.${aggregate_type}",
        new OutboxSourceConfig(with("topic.template", "")).topicTemplate());
  }

  @Test
  void instanceKeysKeepTheirOrder() {
    OutboxSourceConfig config = new OutboxSourceConfig(with("instance.keys", "b, a ,c"));

    assertEquals(List.of("b", "a", "c"), List.copyOf(config.instanceKeys()));
  }

  @Test
  void zeroMaxAttemptsMeansUnlimited() {
    assertEquals(
        ClaimRequest.UNLIMITED_ATTEMPTS,
        new OutboxSourceConfig(with("max.attempts", "0")).maxAttempts());
  }

  /** Member names are held to Avro's rule only for an Avro value converter that keeps them. */
  @Test
  void anAvroValueConverterHoldsInferredMembersToAvroNames() {
    Map<String, String> props = with("payload.format", "json");
    props.put("payload.json.schema", "inferred");
    assertFalse(new OutboxSourceConfig(props).inferredSchema().orElseThrow().avroNames());
    for (String avro :
        List.of(
            "io.confluent.connect.avro.AvroConverter",
            "io.apicurio.registry.utils.converter.AvroConverter")) {
      props.put("value.converter", avro);
      assertTrue(new OutboxSourceConfig(props).inferredSchema().orElseThrow().avroNames(), avro);
    }
    props.put("value.converter", "io.confluent.connect.avro.AvroConverter");
    props.put("value.converter.scrub.invalid.names", "true");
    assertFalse(new OutboxSourceConfig(props).inferredSchema().orElseThrow().avroNames());
    assertTrue(
        new OutboxSourceConfig(props).inferredSchema().orElseThrow().avroConverter(),
        "its schema's depth is still Avro's");
    // Apicurio's has no scrub.invalid.names (one carried over from Confluent's is ignored).
    props.put("value.converter", "io.apicurio.registry.utils.converter.AvroConverter");
    assertTrue(new OutboxSourceConfig(props).inferredSchema().orElseThrow().avroNames());
    props.put("value.converter", "io.confluent.connect.json.JsonSchemaConverter");
    assertFalse(new OutboxSourceConfig(props).inferredSchema().orElseThrow().avroConverter());
    assertFalse(new OutboxSourceConfig(props).inferredSchema().orElseThrow().protobufConverter());
    assertTrue(
        new OutboxSourceConfig(props).inferredSchema().orElseThrow().jsonSchemaConverter(),
        "its schema's depth is its own");
    props.put("value.converter", "io.confluent.connect.avro.AvroConverter");
    assertFalse(new OutboxSourceConfig(props).inferredSchema().orElseThrow().jsonSchemaConverter());
  }

  /** Confluent's Protobuf converter: its refusals, and names held to its rule unless it scrubs. */
  @Test
  void aProtobufValueConverterHoldsInferredSchemasToItsRules() {
    Map<String, String> props = with("payload.format", "json");
    props.put("payload.json.schema", "inferred");
    props.put("value.converter", "io.confluent.connect.protobuf.ProtobufConverter");
    InferredSchema keeping = new OutboxSourceConfig(props).inferredSchema().orElseThrow();
    assertTrue(keeping.protobufConverter());
    assertTrue(keeping.protobufNames());
    assertFalse(keeping.avroConverter());

    props.put("value.converter.scrub.invalid.names", "true");
    InferredSchema scrubbing = new OutboxSourceConfig(props).inferredSchema().orElseThrow();
    assertTrue(scrubbing.protobufConverter(), "arrays are still its rule");
    assertFalse(scrubbing.protobufNames());
  }

  @Test
  void retentionMinusOneKeepsForever() {
    assertEquals(
        Optional.empty(), new OutboxSourceConfig(with("retention.published.ms", "-1")).retention());
    assertEquals(
        Optional.of(Duration.ZERO),
        new OutboxSourceConfig(with("retention.published.ms", "0")).retention());
    assertEquals(
        Optional.of(Duration.ofDays(1_825_000)),
        new OutboxSourceConfig(with("retention.published.ms", "157680000000000")).retention());
    assertEquals(
        Optional.of(Duration.ofMillis(9_999_999_999_999L)), // "forever" as a large number
        new OutboxSourceConfig(with("retention.published.ms", "9999999999999")).retention());
  }

  @Test
  void onlyARetentionOfZeroKeepsNoPublishedLog() {
    assertFalse(new OutboxSourceConfig(with("retention.published.ms", "0")).keepsPublishedLog());
    for (String kept : new String[] {"-1", "1", "604800000"}) {
      assertTrue(
          new OutboxSourceConfig(with("retention.published.ms", kept)).keepsPublishedLog(), kept);
    }
    assertTrue(new OutboxSourceConfig(minimal()).keepsPublishedLog(), "the default");
  }

  @Test
  void credentialsAndTable() {
    Map<String, String> props = minimal();
    props.put("connection.user", "relay");
    props.put("connection.password", "s3cret");
    props.put("outbox.table", "app.outbox_v2");
    OutboxSourceConfig config = new OutboxSourceConfig(props);

    assertEquals("relay", config.user());
    assertEquals("s3cret", config.password().value());
    assertFalse(config.password().toString().contains("s3cret"));
    assertEquals("app", config.table().schema());
    assertEquals("outbox_v2", config.table().name());
  }

  @Test
  void deadLetterTopicWhenSet() {
    assertEquals(
        Optional.of("outbox.dlq"),
        new OutboxSourceConfig(with("dead.letter.topic", "outbox.dlq")).deadLetterTopic());
  }

  @Test
  void allowedTopicsWhenSet() {
    assertEquals(
        Optional.empty(), new OutboxSourceConfig(with("topic.allowed.regex", "")).allowedTopics());
    assertEquals(
        "outbox\\..*",
        new OutboxSourceConfig(with("topic.allowed.regex", "outbox\\..*"))
            .allowedTopics()
            .orElseThrow()
            .pattern());
    ConfigException e =
        assertThrows(
            ConfigException.class,
            () -> new OutboxSourceConfig(with("topic.allowed.regex", "outbox.(secret")));
    assertTrue(e.getMessage().contains("topic.allowed.regex"), e.getMessage());
    assertFalse(e.getMessage().contains("secret"), "the value is not echoed: " + e.getMessage());
  }

  /** A template without variables routes every row to one topic, which must be one rows may use. */
  @Test
  void aFixedTopicTemplateMustBeAnAllowedTopic() {
    Map<String, String> deadLetters = with("topic.template", "outbox.orders");
    deadLetters.put("dead.letter.topic", "outbox.orders");
    ConfigException toDeadLetters =
        assertThrows(ConfigException.class, () -> new OutboxSourceConfig(deadLetters));
    assertTrue(
        toDeadLetters.getMessage().startsWith("topic.template names dead.letter.topic"),
        toDeadLetters.getMessage());
    deadLetters.put("dead.letter.topic", "outbox_orders"); // Kafka takes '.' and '_' alike
    assertThrows(ConfigException.class, () -> new OutboxSourceConfig(deadLetters));

    Map<String, String> outside = with("topic.template", "orders");
    outside.put("topic.allowed.regex", "outbox\\..+");
    ConfigException notAllowed =
        assertThrows(ConfigException.class, () -> new OutboxSourceConfig(outside));
    assertTrue(
        notAllowed.getMessage().startsWith("topic.allowed.regex does not match topic.template"),
        notAllowed.getMessage());

    outside.put("topic.template", "outbox.orders");
    assertEquals("outbox.orders", new OutboxSourceConfig(outside).topicTemplate());
    outside.put("topic.template", "${aggregate_type}"); // rows decide: judged per row
    assertEquals("${aggregate_type}", new OutboxSourceConfig(outside).topicTemplate());
  }

  /**
   * A template whose only variable is the instance key routes each key's rows to one topic: each
   * must be a topic rows may use, as a fixed template's. Keys may hold spaces, which no topic may.
   */
  @Test
  void aTemplateOfTheInstanceKeyOnlyMustGiveEachKeyAnAllowedTopic() {
    Map<String, String> spaced = with("topic.template", "outbox.${instance_key}");
    spaced.put("instance.keys", "orders,orders eu");
    ConfigException unroutable =
        assertThrows(ConfigException.class, () -> new OutboxSourceConfig(spaced));
    assertTrue(
        unroutable
            .getMessage()
            .startsWith("topic.template filled with instance key 'orders eu' is not a topic name"),
        unroutable.getMessage());
    assertFalse(unroutable.getMessage().contains("key 'orders' is"), unroutable.getMessage());

    Map<String, String> deadLetters = with("topic.template", "outbox.${instance_key}");
    deadLetters.put("dead.letter.topic", "outbox.orders");
    ConfigException toDeadLetters =
        assertThrows(ConfigException.class, () -> new OutboxSourceConfig(deadLetters));
    assertTrue(
        toDeadLetters
            .getMessage()
            .startsWith("topic.template filled with instance key 'orders' names dead.letter.topic"),
        toDeadLetters.getMessage());

    Map<String, String> outside = with("topic.template", "${instance_key}");
    outside.put("topic.allowed.regex", "outbox\\..+");
    ConfigException notAllowed =
        assertThrows(ConfigException.class, () -> new OutboxSourceConfig(outside));
    assertTrue(
        notAllowed
            .getMessage()
            .startsWith(
                "topic.allowed.regex does not match topic.template filled with instance key"
                    + " 'orders'"),
        notAllowed.getMessage());

    outside.put("topic.template", "outbox.${instance_key}");
    assertEquals("outbox.${instance_key}", new OutboxSourceConfig(outside).topicTemplate());
    outside.put("topic.template", "${instance_key}.${event_type}"); // rows decide
    outside.put("topic.allowed.regex", "");
    assertEquals("${instance_key}.${event_type}", new OutboxSourceConfig(outside).topicTemplate());

    // Whatever a row's own values, a key with a character no topic name holds routes none of it.
    outside.put("instance.keys", "orders,orders eu,acme/eu");
    ConfigException mixed =
        assertThrows(ConfigException.class, () -> new OutboxSourceConfig(outside));
    assertTrue(
        mixed
            .getMessage()
            .startsWith("topic.template takes instance key 'orders eu' into the topic name"),
        mixed.getMessage());
    assertTrue(mixed.getMessage().contains("instance key 'acme/eu' into"), mixed.getMessage());
    assertFalse(mixed.getMessage().contains("key 'orders' into"), mixed.getMessage());
    outside.put("topic.template", "outbox.${aggregate_type}"); // the keys are not in the names
    assertEquals("outbox.${aggregate_type}", new OutboxSourceConfig(outside).topicTemplate());

    // A row's values only lengthen a name that the key and the fixed text make too long already.
    String longKey = "k".repeat(200);
    outside.put("instance.keys", "orders," + longKey);
    String longest = "com.example.platform.outbox.production.v1.${instance_key}.${event_type}";
    outside.put("topic.template", longest.replace(".v1.", ".events.v1."));
    ConfigException tooLong =
        assertThrows(ConfigException.class, () -> new OutboxSourceConfig(outside));
    assertTrue(
        tooLong
            .getMessage()
            .startsWith(
                "topic.template filled with instance key '"
                    + longKey
                    + "' is at least 250 characters"),
        tooLong.getMessage());
    assertFalse(tooLong.getMessage().contains("key 'orders'"), tooLong.getMessage());
    outside.put("topic.template", longest); // 243 characters and a row's own values
    assertEquals(longest, new OutboxSourceConfig(outside).topicTemplate());
  }

  /**
   * An '@' is user information only before the query string or in a parameter's name: IPv6 hosts,
   * several hosts, and a user alice@server as a parameter's value (as Azure names users) are URLs
   * the driver reads.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "jdbc:postgresql://[::1]:5432/app",
        "jdbc:postgresql://db1:5432,db2:5433/app?targetServerType=primary",
        "jdbc:postgresql://db.example:5432/app?user=alice@server&sslmode=require",
        "jdbc:postgresql://db.example/app?options=-c%20search_path%3Dorders"
      })
  void anAtSignOnlyInAParametersValueIsNoUserInformation(String url) {
    assertEquals(url, new OutboxSourceConfig(with("connection.url", url)).jdbcUrl());
  }

  @Test
  void renewalJustBelowTheLeaseIsAccepted() {
    Map<String, String> props = with("lease.duration.ms", "1000");
    props.put("lease.renewal.interval.ms", "999");

    assertEquals(Duration.ofMillis(999), new OutboxSourceConfig(props).leaseRenewalInterval());
  }

  @ParameterizedTest
  @ValueSource(strings = {"connection.url", "instance.keys"})
  void missingRequiredKey(String key) {
    ConfigException e =
        assertThrows(ConfigException.class, () -> new OutboxSourceConfig(without(key)));
    assertTrue(e.getMessage().contains(key), e.getMessage());
  }

  /** One case per bad value: key, value. */
  static Stream<Arguments> badValues() {
    return BadConfigs.cases();
  }

  @ParameterizedTest(name = "{0}={1}")
  @MethodSource("badValues")
  void badValueIsRejectedNamingTheKey(String key, String value) {
    ConfigException e =
        assertThrows(ConfigException.class, () -> new OutboxSourceConfig(with(key, value)));
    assertTrue(e.getMessage().contains(key), e.getMessage());
    BadConfigs.assertNotEchoed(key, value, e.getMessage());
  }

  @Test
  void renewalNotBelowLeaseIsRejectedOnRenewal() {
    Map<String, String> props = with("lease.duration.ms", "30000");
    props.put("lease.renewal.interval.ms", "30000");

    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(
        e.getMessage().startsWith("lease.renewal.interval.ms must be less than lease.duration.ms"),
        e.getMessage());
  }

  @Test
  void backoffMaxBelowInitialIsRejectedOnMax() {
    Map<String, String> props = with("retry.backoff.initial.ms", "5000");
    props.put("retry.backoff.max.ms", "4999");

    ConfigException e = assertThrows(ConfigException.class, () -> new OutboxSourceConfig(props));
    assertTrue(
        e.getMessage().startsWith("retry.backoff.max.ms must be at least retry.backoff.initial.ms"),
        e.getMessage());
  }

  @Test
  void unknownTemplateVariableIsAnError() {
    ConfigException e =
        assertThrows(
            ConfigException.class,
            () -> new OutboxSourceConfig(with("topic.template", "outbox.${aggregate}")));

    assertEquals(
        "topic.template is invalid: topic template variable must be one of ${aggregate_type},"
            + " ${event_type}, ${instance_key}",
        e.getMessage());
  }

  @Test
  void urlIsNeverEchoed() {
    String sentinel = "SENTINEL-url-7f3a";
    ConfigException e =
        assertThrows(
            ConfigException.class,
            () ->
                new OutboxSourceConfig(with("connection.url", "mysql://u:" + sentinel + "@h/db")));

    assertEquals("connection.url must start with jdbc:postgresql://", e.getMessage());
  }
}
