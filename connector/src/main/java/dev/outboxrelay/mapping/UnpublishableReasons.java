package dev.outboxrelay.mapping;

import java.util.Set;

/**
 * Why a row can never be published as it is. Each is a reason code ({@code [A-Z0-9_]}) fit for the
 * row's {@code last_failure_code}; none depends on time passing or on Kafka, so retrying a row that
 * has one is pointless (it is poison, or too late).
 */
public final class UnpublishableReasons {
  /** {@code deliver_before} is set and not after now: a late delivery is worse than none. */
  public static final String DEADLINE_EXPIRED = "DEADLINE_EXPIRED";

  /** The payload is longer than the configured maximum. */
  public static final String PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE";

  /**
   * Format JSON, and the payload is not exactly one JSON value (empty, malformed, invalid UTF-8
   * such as an overlong form or an encoded surrogate, trailing content, or an object with a
   * duplicate member name, which consumers would read differently); or, with an inferred schema, a
   * string or member name holds a surrogate without its pair (an escape such as {@code \\ud83d}
   * alone), which Avro's and Protobuf's encoders would write as '?'.
   */
  public static final String PAYLOAD_INVALID_JSON = "PAYLOAD_INVALID_JSON";

  /**
   * Format JSON, and the payload holds a number that a schemaless Connect value cannot carry
   * without changing it: an integer beyond 64 bits, or a decimal that a double does not represent
   * exactly (see {@link RecordMapper}).
   */
  public static final String PAYLOAD_NUMBER_UNREPRESENTABLE = "PAYLOAD_NUMBER_UNREPRESENTABLE";

  /**
   * Format JSON with an inferred schema, and no Connect schema holds the payload unchanged: it is
   * neither a JSON object nor {@code null}; one place holds values of different kinds (an array's
   * elements, or one member of an array's objects: a number and a string, an empty array and a
   * number, an integer beyond a double's exact range and a decimal); a member name is empty; or
   * objects nest deeper than a converter writes their schema (about 450 levels).
   */
  public static final String PAYLOAD_SCHEMA_UNINFERABLE = "PAYLOAD_SCHEMA_UNINFERABLE";

  /** Format string, and the payload is not valid UTF-8 text. */
  public static final String PAYLOAD_INVALID_TEXT = "PAYLOAD_INVALID_TEXT";

  /**
   * The headers are not a JSON object whose values are all strings, numbers, booleans or null, or
   * name a header a column mapping also sends ({@code column.additional.placement}): the {@code
   * jsonb} column itself keeps one value of a name.
   */
  public static final String HEADERS_MALFORMED = "HEADERS_MALFORMED";

  /**
   * A header of the row uses a name the relay sets itself: anything under {@code outbox.}, and
   * {@code id} and {@code eventType} in the Debezium convention. Publishing it would let a row
   * spoof, say, the message id consumers deduplicate by.
   */
  public static final String HEADER_NAME_RESERVED = "HEADER_NAME_RESERVED";

  /**
   * The record, with its key and headers, would exceed the producer's {@code max.request.size}: the
   * producer would refuse it and fail the task.
   */
  public static final String RECORD_TOO_LARGE = "RECORD_TOO_LARGE";

  /** Neither the explicit topic nor the filled template is a legal topic name. */
  public static final String TOPIC_UNROUTABLE = "TOPIC_UNROUTABLE";

  /**
   * The row's topic (its own, or the filled template) is routable but not among the topics the
   * connector may write to ({@code topic.allowed.regex}).
   */
  public static final String TOPIC_NOT_ALLOWED = "TOPIC_NOT_ALLOWED";

  public static final Set<String> ALL =
      Set.of(
          DEADLINE_EXPIRED,
          PAYLOAD_TOO_LARGE,
          RECORD_TOO_LARGE,
          PAYLOAD_INVALID_JSON,
          PAYLOAD_NUMBER_UNREPRESENTABLE,
          PAYLOAD_SCHEMA_UNINFERABLE,
          PAYLOAD_INVALID_TEXT,
          HEADERS_MALFORMED,
          HEADER_NAME_RESERVED,
          TOPIC_UNROUTABLE,
          TOPIC_NOT_ALLOWED);

  private UnpublishableReasons() {}
}
