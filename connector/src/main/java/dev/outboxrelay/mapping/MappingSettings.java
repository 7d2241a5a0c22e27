package dev.outboxrelay.mapping;

import dev.outboxrelay.writer.TopicNames;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * How claimed rows become records. Validated on construction, so a mapper never starts with a
 * setting it cannot honour.
 *
 * @param topicTemplate topic for rows without an explicit topic; variables {@code
 *     ${aggregate_type}}, {@code ${event_type}}, {@code ${instance_key}} (see {@link TopicRouter})
 * @param convention header names (and, through the config, the default template)
 * @param payloadFormat how the payload becomes the record value
 * @param payloadMaxBytes the largest payload that is published, at least 1; larger rows are
 *     unpublishable ({@link UnpublishableReasons#PAYLOAD_TOO_LARGE})
 * @param deadLetterTopic where {@link RecordMapper#deadLetter} sends unpublishable rows, or null
 *     for none (never the empty string)
 * @param recordMaxBytes the producer's {@code max.request.size}: a record estimated larger is
 *     unpublishable ({@link UnpublishableReasons#RECORD_TOO_LARGE})
 * @param allowedTopics the topics a row may be routed to, matched whole; null for any routable
 *     topic. Others are unpublishable ({@link UnpublishableReasons#TOPIC_NOT_ALLOWED})
 * @param inferredSchema format JSON: the payload sent as a struct with a schema inferred from it;
 *     null for a schemaless value
 * @param valueConverter the connector's value converter, as far as the record's size depends on it
 * @param keyConverter the connector's key converter, likewise
 * @param headerConverter the connector's header converter, likewise
 * @param recordTimestamp what a record's (and a dead letter's) timestamp is
 */
public record MappingSettings(
    String topicTemplate,
    RoutingConvention convention,
    PayloadFormat payloadFormat,
    int payloadMaxBytes,
    String deadLetterTopic,
    int recordMaxBytes,
    Pattern allowedTopics,
    InferredSchema inferredSchema,
    ConverterKind valueConverter,
    ConverterKind keyConverter,
    ConverterKind headerConverter,
    RecordTimestamp recordTimestamp) {

  /** Kafka's default {@code max.request.size}. */
  public static final int DEFAULT_RECORD_MAX_BYTES = 1_048_576;

  /**
   * With the producer's default request size, any routable topic allowed, schemaless JSON, no
   * converter known and the rows' creation times as timestamps; the {@code with…} methods set the
   * rest.
   */
  public MappingSettings(
      String topicTemplate,
      RoutingConvention convention,
      PayloadFormat payloadFormat,
      int payloadMaxBytes,
      String deadLetterTopic) {
    this(
        topicTemplate,
        convention,
        payloadFormat,
        payloadMaxBytes,
        deadLetterTopic,
        DEFAULT_RECORD_MAX_BYTES,
        null,
        null,
        ConverterKind.OTHER,
        ConverterKind.OTHER,
        ConverterKind.OTHER,
        RecordTimestamp.CREATED_AT);
  }

  public MappingSettings {
    TopicRouter.requireValidTemplate(topicTemplate);
    Objects.requireNonNull(convention, "convention");
    Objects.requireNonNull(payloadFormat, "payloadFormat");
    Objects.requireNonNull(valueConverter, "valueConverter");
    Objects.requireNonNull(keyConverter, "keyConverter");
    Objects.requireNonNull(headerConverter, "headerConverter");
    Objects.requireNonNull(recordTimestamp, "recordTimestamp");
    if (payloadMaxBytes < 1) {
      throw new IllegalArgumentException("payload max bytes must be at least 1");
    }
    if (recordMaxBytes < 1) {
      throw new IllegalArgumentException("record max bytes must be at least 1");
    }
    if (inferredSchema != null && payloadFormat != PayloadFormat.JSON) {
      throw new IllegalArgumentException("a schema is inferred for format JSON only");
    }
    if (deadLetterTopic != null
        && (!TopicNames.isLegal(deadLetterTopic) || TopicNames.isInternal(deadLetterTopic))) {
      throw new IllegalArgumentException(
          "dead-letter topic must be a topic name ("
              + TopicNames.RULE
              + ", not one of Kafka's internal topics) or absent");
    }
  }

  /** These settings with the producer's {@code max.request.size}. */
  public MappingSettings withRecordMaxBytes(int recordMaxBytes) {
    return with(copy -> copy.recordMaxBytes = recordMaxBytes);
  }

  /** These settings with the topics a row may be routed to (null: any routable topic). */
  public MappingSettings withAllowedTopics(Pattern allowedTopics) {
    return with(copy -> copy.allowedTopics = allowedTopics);
  }

  /** These settings with a schema inferred for JSON payloads (null: schemaless values). */
  public MappingSettings withInferredSchema(InferredSchema inferredSchema) {
    return with(copy -> copy.inferredSchema = inferredSchema);
  }

  /** These settings with the connector's value converter. */
  public MappingSettings withValueConverter(ConverterKind valueConverter) {
    return with(copy -> copy.valueConverter = valueConverter);
  }

  /** These settings with the connector's key converter. */
  public MappingSettings withKeyConverter(ConverterKind keyConverter) {
    return with(copy -> copy.keyConverter = keyConverter);
  }

  /** These settings with the connector's header converter. */
  public MappingSettings withHeaderConverter(ConverterKind headerConverter) {
    return with(copy -> copy.headerConverter = headerConverter);
  }

  /** These settings with what a record's timestamp is. */
  public MappingSettings withRecordTimestamp(RecordTimestamp recordTimestamp) {
    return with(copy -> copy.recordTimestamp = recordTimestamp);
  }

  /** These settings with what {@code change} sets on a mutable copy of them. */
  private MappingSettings with(Consumer<Copy> change) {
    Copy copy = new Copy(this);
    change.accept(copy);
    return copy.settings();
  }

  /** A mutable copy for the {@code with…} methods, so that each names only what it changes. */
  private static final class Copy {
    private final String topicTemplate;
    private final RoutingConvention convention;
    private final PayloadFormat payloadFormat;
    private final int payloadMaxBytes;
    private final String deadLetterTopic;
    private int recordMaxBytes;
    private Pattern allowedTopics;
    private InferredSchema inferredSchema;
    private ConverterKind valueConverter;
    private ConverterKind keyConverter;
    private ConverterKind headerConverter;
    private RecordTimestamp recordTimestamp;

    Copy(MappingSettings settings) {
      topicTemplate = settings.topicTemplate;
      convention = settings.convention;
      payloadFormat = settings.payloadFormat;
      payloadMaxBytes = settings.payloadMaxBytes;
      deadLetterTopic = settings.deadLetterTopic;
      recordMaxBytes = settings.recordMaxBytes;
      allowedTopics = settings.allowedTopics;
      inferredSchema = settings.inferredSchema;
      valueConverter = settings.valueConverter;
      keyConverter = settings.keyConverter;
      headerConverter = settings.headerConverter;
      recordTimestamp = settings.recordTimestamp;
    }

    MappingSettings settings() {
      return new MappingSettings(
          topicTemplate,
          convention,
          payloadFormat,
          payloadMaxBytes,
          deadLetterTopic,
          recordMaxBytes,
          allowedTopics,
          inferredSchema,
          valueConverter,
          keyConverter,
          headerConverter,
          recordTimestamp);
    }
  }

  /**
   * Whether a row may be routed to {@code topic} (a routable one): never to the dead-letter topic,
   * where a row's record would pass for a dead letter.
   */
  public boolean allows(String topic) {
    // Not the dead-letter topic, nor one that collides with it ('.' and '_' alike in Kafka).
    return !TopicNames.collide(topic, deadLetterTopic)
        && (allowedTopics == null || allowedTopics.matcher(topic).matches());
  }

  public boolean hasDeadLetterTopic() {
    return deadLetterTopic != null;
  }
}
