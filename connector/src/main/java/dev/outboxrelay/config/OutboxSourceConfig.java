package dev.outboxrelay.config;

import dev.outboxrelay.mapping.ConverterKind;
import dev.outboxrelay.mapping.InferredSchema;
import dev.outboxrelay.mapping.MappingSettings;
import dev.outboxrelay.mapping.PayloadFormat;
import dev.outboxrelay.mapping.RecordTimestamp;
import dev.outboxrelay.mapping.RoutingConvention;
import dev.outboxrelay.retry.BackoffPolicy;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.postgres.ColumnMapping;
import dev.outboxrelay.store.postgres.ConnectionSettings;
import dev.outboxrelay.store.postgres.OutboxColumns;
import dev.outboxrelay.store.postgres.OutboxTable;
import dev.outboxrelay.writer.OutboxMessage;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Range;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Validator;
import org.apache.kafka.common.config.ConfigDef.Width;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.types.Password;

/**
 * The connector's settings: every key with its doc, default and validator, and typed accessors so
 * task code never reads raw strings. Constructing one validates single keys (ConfigDef) and the
 * rules spanning several keys ({@link ConfigChecks}); {@link ConfigValidation} adds live checks.
 *
 * <p>Values are never logged: the JDBC URL may carry credentials.
 */
public class OutboxSourceConfig extends AbstractConfig {

  public static final String CONNECTION_GROUP = "Connection";
  public static final String OUTBOX_GROUP = "Outbox";
  public static final String CLAIMING_GROUP = "Claiming";
  public static final String RECORDS_GROUP = "Records";
  public static final String MAINTENANCE_GROUP = "Maintenance";
  public static final String WAKE_UP_GROUP = "Wake-up";
  public static final String COLUMNS_GROUP = "Table columns";

  // Connection
  public static final String CONNECTION_URL_CONFIG = "connection.url";
  private static final String CONNECTION_URL_DOC =
      "JDBC URL of the PostgreSQL database holding the outbox table, for example"
          + " jdbc:postgresql://db:5432/app. Prefer connection.user and connection.password to"
          + " credentials in the URL: the driver takes the URL's over them, so a user or password"
          + " given in both places is refused, and so is a user or password before the host"
          + " (user:password@host, which the driver would take for the host; an '@' elsewhere"
          + " before the query string, as in a database name, is written %40), and a password"
          + " before the query string or inside another parameter's value (/app;password=...,"
          + " ?user=app;password=..., which the driver would take for part of that name or"
          + " value). It must reach a server that takes writes (the primary)."
          + " outbox-relay never logs the URL or repeats it in errors, and validation responses"
          + " hide one that names a password anywhere (or holds any '@').";

  public static final String CONNECTION_USER_CONFIG = "connection.user";
  private static final String CONNECTION_USER_DOC =
      "Database role to connect as. Unset: the user given in the URL, if any.";

  public static final String CONNECTION_PASSWORD_CONFIG = "connection.password";
  private static final String CONNECTION_PASSWORD_DOC =
      "Password of connection.user. Give it through a config provider set up on the worker,"
          + " such as ${file:/opt/kafka/secrets/outbox.properties:password} or ${env:OUTBOX_DB_PASSWORD}:"
          + " Connect keeps connector configs as written, in its config topic and in the answer to"
          + " GET /connectors/<name>/config, and each task's config, in GET"
          + " /connectors/<name>/tasks, so a literal password is stored and shown there in"
          + " clear (a reference stays a reference in both); only validation responses mask it.";

  public static final String CONNECTION_POOL_SIZE_CONFIG = "connection.pool.size";
  public static final int CONNECTION_POOL_SIZE_DEFAULT = 4;
  private static final String CONNECTION_POOL_SIZE_DOC =
      "Database connections in each task's pool. Claims, acknowledgements, lease renewal and"
          + " maintenance share them (task 0's maintenance, the backlog figures and retention,"
          + " runs on a thread of its own beside the claims with 3 or more, 4 or more exactly once,"
          + " inside the task's polls with fewer). A task also holds one more, outside the pool,"
          + " for"
          + " notify.enabled (LISTEN), and a task that migrates the schema three more while it"
          + " does. Each task holds its pool at all times: with notify.enabled=true (a direct"
          + " connection: behind a transaction-mode pooler, which needs it off, the server's"
          + " limits say nothing) validation refuses tasks.max tasks whose pools and listening"
          + " connections, and one more for validating a later update of the config, exceed"
          + " what the database admits for connection.user (max_connections less the reserved"
          + " ones, the role's and the database's connection limits). Where the database admits"
          + " no connection at all for validation (SQLState 53300, full: with the running tasks'"
          + " pools, say), the database checks are skipped with a WARN, not failed, so that an"
          + " update lowering the pools is not refused.";

  public static final String CONNECTION_TIMEOUT_MS_CONFIG = "connection.timeout.ms";
  public static final long CONNECTION_TIMEOUT_MS_DEFAULT = 5_000L;
  private static final String CONNECTION_TIMEOUT_MS_DOC =
      "How long to wait for a database connection before the attempt fails. A task starts even"
          + " while the database is down and keeps trying.";

  public static final String STATEMENT_TIMEOUT_MS_CONFIG = "statement.timeout.ms";
  public static final long STATEMENT_TIMEOUT_MS_DEFAULT = 30_000L;
  private static final String STATEMENT_TIMEOUT_MS_DOC =
      "Longest any statement of a task may run before PostgreSQL cancels it (statement_timeout,"
          + " set on each pooled connection when it opens). A claim or an outcome write stuck"
          + " behind a lock then fails with SQLState 57014 and is retried like any other transient"
          + " database error, instead of holding the task (an outcome write waits 1 s at most"
          + " for a row another session holds locked, half this setting where it is under 2 s,"
          + " and then sets the row aside). Keep it above the slowest statement you"
          + " expect of a task; schema migrations (schema.migrate.on.start) run without a"
          + " statement timeout, whatever the role's or the URL's.";

  public static final String SOCKET_TIMEOUT_MS_CONFIG = "socket.timeout.ms";
  public static final long SOCKET_TIMEOUT_MARGIN_MS = 30_000L;
  private static final String SOCKET_TIMEOUT_MS_DOC =
      "Longest a task waits for the database to answer on an open connection before it gives the"
          + " connection up as broken (the driver's socketTimeout, in whole seconds), so a network"
          + " path that silently drops packets fails the call instead of hanging the task;"
          + " connections also use TCP keepalive. Must be more than statement.timeout.ms, so that"
          + " a slow statement is cancelled by the database first. Unset: statement.timeout.ms"
          + " plus 30 seconds.";

  // Outbox
  public static final String OUTBOX_TABLE_CONFIG = "outbox.table";
  public static final String OUTBOX_TABLE_DEFAULT = OutboxTable.DEFAULT_NAME;
  private static final String OUTBOX_TABLE_DOC =
      "The outbox table, as table or schema.table: lower-case letters, digits and underscores,"
          + " at most 48 characters per part, always quoted in SQL. Without a schema, the"
          + " connection's search_path decides. Names derived from it that would pass PostgreSQL's"
          + " 63-byte identifier limit are shortened deterministically: index, constraint, trigger"
          + " and function names are cut as PostgreSQL cuts them; the notification channel and the"
          + " schema history table keep a prefix and end in _ and 8 hex digits of a SHA-256.";

  public static final String INSTANCE_KEYS_CONFIG = "instance.keys";
  private static final String INSTANCE_KEYS_DOC =
      "Comma-separated instance keys whose rows this connector relays. Rows with other instance"
          + " keys are never claimed or changed, so several connectors can share one table. A key"
          + " has at most 200 characters, no comma, no control, format or invisible character (a"
          + " zero-width space, a direction mark), no space other than U+0020, no white space at"
          + " either end (the writer library holds rows to the same rules). Keys are compared as"
          + " written, not Unicode-normalized.";

  public static final String SCHEMA_MIGRATE_ON_START_CONFIG = "schema.migrate.on.start";
  private static final String SCHEMA_MIGRATE_ON_START_DOC =
      "Create or upgrade the outbox table when the connector starts, with the migrations shipped"
          + " in the plugin; their history is kept in a table named after the outbox table with"
          + " the suffix _schema_history. The connector's first task (task 0) migrates before its"
          + " first claim; its other tasks wait for the schema, checking again after 1 s growing"
          + " to 30 s, and any task waits for a migration another session runs (one at a time"
          + " per table: the CLI, another connector). The role then needs what the migrations do (validation names what"
          + " it lacks): CREATE on the table's schema while one still creates a table or"
          + " function, ownership of the table (and, below schema version 11, of its published"
          + " log), SELECT, INSERT and UPDATE on the schema history. When false, the table must"
          + " already exist at the current version (or a newer one, which a task relays on):"
          + " `outbox-relay-cli migrate` creates or upgrades it, or apply what"
          + " `outbox-relay-cli schema-sql` prints with your own migration tool (docs/schema.sql,"
          + " for a table named outbox).";

  public static final String SCHEMA_MIGRATE_LOCK_TIMEOUT_MS_CONFIG =
      "schema.migrate.lock.timeout.ms";
  public static final long SCHEMA_MIGRATE_LOCK_TIMEOUT_MS_DEFAULT = 5_000L;
  private static final String SCHEMA_MIGRATE_LOCK_TIMEOUT_MS_DOC =
      "Longest a migration waits for a lock (PostgreSQL's lock_timeout, set for each migration);"
          + " 0 leaves the server's own setting (by default, no limit). While a migration waits for"
          + " the outbox table's lock, the application's inserts queue behind it: a long"
          + " transaction on the table would stall them all. On a timeout that migration is rolled"
          + " back (reason DB_LOCK_NOT_AVAILABLE) and the task tries again after a growing delay,"
          + " from twice the timeout (10 s at least; up to a fifth less, at random), doubling up to"
          + " 5 minutes (with a timeout over 2.5 minutes: twice the timeout each time); only the"
          + " connector's first task migrates, so the delays are the connector's. It bounds the"
          + " wait, not the time a migration holds a lock it got.";

  // Claiming
  public static final String CLAIM_BATCH_SIZE_CONFIG = "claim.batch.size";
  public static final int CLAIM_BATCH_SIZE_DEFAULT = 500;
  private static final String CLAIM_BATCH_SIZE_DOC =
      "Most rows one claim takes, and so most records one poll returns. A task stops claiming"
          + " once it holds 4 claims' worth unacknowledged (so at most 5 × claim.batch.size − 1"
          + " records), and at most half the producer's buffer.memory"
          + " (producer.override.buffer.memory, else 32 MiB) of records, and one row more: with"
          + " large payloads a claim takes fewer rows.";

  public static final String POLL_INTERVAL_MS_CONFIG = "poll.interval.ms";
  public static final long POLL_INTERVAL_MS_DEFAULT = 1_000L;
  private static final String POLL_INTERVAL_MS_DOC =
      "Longest a task waits after a claim found nothing before it claims again. Right after a"
          + " claim that found rows the wait is 10 ms, doubling with each empty claim up to this"
          + " value, so a steady stream is picked up within milliseconds even without"
          + " notifications while an idle task claims once per interval. With notify.enabled, a"
          + " notification ends the wait early (while the task has room under its in-flight"
          + " limit; a task at its limit ignores notifications, and room freed wakes it).";

  public static final String LEASE_DURATION_MS_CONFIG = "lease.duration.ms";
  public static final long LEASE_DURATION_MS_DEFAULT = 60_000L;
  private static final String LEASE_DURATION_MS_DOC =
      "How long a claimed row stays reserved for the task that claimed it. Once the lease"
          + " expires (a crashed or cut-off worker), any task may claim the row again, and the"
          + " former holder's late acknowledgement is rejected. Keep it above"
          + " lease.renewal.interval.ms plus connection.timeout.ms plus statement.timeout.ms: a"
          + " task renews its leases on the thread that writes its outcomes, so an outcome write"
          + " that waits for a connection and then runs long (a slow or overloaded database; a row"
          + " lock it waits for 1 s at most) delays the renewal by up to both, and a lease that"
          + " runs out meanwhile is"
          + " reclaimed by another task (a duplicate). The connector logs a warning otherwise."
          + " A lease runs from when the claim writes its row, so a slow claim does not shorten"
          + " it.";

  public static final String LEASE_RENEWAL_INTERVAL_MS_CONFIG = "lease.renewal.interval.ms";
  public static final long LEASE_RENEWAL_INTERVAL_MS_DEFAULT = 20_000L;
  private static final String LEASE_RENEWAL_INTERVAL_MS_DOC =
      "How often a task extends the leases of rows it has sent but not yet seen acknowledged, so"
          + " a slow or blocked producer does not lose them. Must be less than lease.duration.ms;"
          + " a third of it tolerates two missed renewals.";

  public static final String MAX_ATTEMPTS_CONFIG = "max.attempts";
  public static final int MAX_ATTEMPTS_DEFAULT = 10;
  private static final String MAX_ATTEMPTS_DOC =
      "Delivery attempts per row before it is parked as EXHAUSTED. 0 means unlimited.";

  public static final String RETRY_BACKOFF_INITIAL_MS_CONFIG = "retry.backoff.initial.ms";
  public static final long RETRY_BACKOFF_INITIAL_MS_DEFAULT = 1_000L;
  private static final String RETRY_BACKOFF_INITIAL_MS_DOC =
      "Delay before a row whose delivery failed, or whose outcome is unknown, is tried again. At"
          + " most 100 years (36500 days), as retry.backoff.max.ms. Each later delay is the one"
          + " before times retry.backoff.multiplier, so 0 tries every row again at once each time"
          + " (its attempts, max.attempts, then run out as fast as it fails), whatever"
          + " retry.backoff.max.ms says.";

  /**
   * The longest retry delay, 100 years (far past any delay anyone means, so that no configuration
   * that worked is refused): the database computes each row's next attempt from it, and a delay
   * near Long.MAX_VALUE ms (about 266,000 years and more) overflows its interval and timestamp
   * types (SQLState 22008), which failed the task at the row's first retry, and again after every
   * restart.
   */
  static final long RETRY_BACKOFF_LIMIT_MS = 36_500L * 24 * 60 * 60 * 1000;

  public static final String RETRY_BACKOFF_MAX_MS_CONFIG = "retry.backoff.max.ms";
  public static final long RETRY_BACKOFF_MAX_MS_DEFAULT = 300_000L;
  private static final String RETRY_BACKOFF_MAX_MS_DOC =
      "Upper bound of the retry delay, at most 100 years (36500 days). Must be at least"
          + " retry.backoff.initial.ms.";

  public static final String RETRY_BACKOFF_MULTIPLIER_CONFIG = "retry.backoff.multiplier";
  public static final double RETRY_BACKOFF_MULTIPLIER_DEFAULT = 2.0;
  private static final String RETRY_BACKOFF_MULTIPLIER_DOC =
      "Factor by which the retry delay grows with each failed attempt.";

  public static final String RETRY_BACKOFF_JITTER_CONFIG = "retry.backoff.jitter";
  public static final double RETRY_BACKOFF_JITTER_DEFAULT = 0.2;
  private static final String RETRY_BACKOFF_JITTER_DOC =
      "Fraction of each retry delay that is randomized, so rows that failed together do not"
          + " retry together. 0 turns jitter off.";

  public static final String ORDERING_ENABLED_CONFIG = "ordering.enabled";
  private static final String ORDERING_ENABLED_DOC =
      "Deliver the rows of one aggregate (instance key and aggregate id) in insertion order: a"
          + " row is not claimed while an earlier row of its aggregate awaits delivery. A row"
          + " parked FAILED or EXHAUSTED no longer holds back the rows after it, and a record whose"
          + " send fails after later ones of its aggregate went out is sent again after them"
          + " (docs/design.md, Per-aggregate order). Turn off for more parallelism when consumers"
          + " do not rely on order.";

  // Records
  public static final String ROUTING_CONVENTION_CONFIG = "routing.convention";
  public static final String ROUTING_OUTBOX_RELAY = "outbox-relay";
  public static final String ROUTING_DEBEZIUM = "debezium";
  private static final String ROUTING_CONVENTION_DOC =
      "Naming of topics and headers. outbox-relay: topic outbox.${aggregate_type}, headers"
          + " outbox.*. debezium: that of Debezium's outbox event router (topic"
          + " outbox.event.${aggregate_type}, key = aggregate id, header id = message id), so"
          + " consumers moving from Debezium keep working unchanged.";

  public static final String TOPIC_TEMPLATE_CONFIG = "topic.template";
  private static final String TOPIC_TEMPLATE_DOC =
      "Topic of each record, built from its row with the variables ${aggregate_type},"
          + " ${event_type} and ${instance_key}; the rest must be legal in a topic name. Unset or"
          + " empty: the routing convention's default, outbox.${aggregate_type} or"
          + " outbox.event.${aggregate_type}. A topic set on the row itself takes precedence."
          + " Values are inserted as they are: Kafka takes '.' and '_' for the same character in"
          + " topic names, so aggregate types order_item and order.item give colliding topics,"
          + " the second of which cannot be created and fails the task that sends to it (keep"
          + " one of the two characters out, with topic.allowed.regex). A topic that collides"
          + " so with one of Kafka's internal topics or with dead.letter.topic is caught: the row"
          + " is parked (TOPIC_UNROUTABLE, TOPIC_NOT_ALLOWED). A template whose only"
          + " variable is ${instance_key} must give each configured key a topic rows may use;"
          + " one with other variables too must take each key's characters into a topic name"
          + " and, with its fixed text, stay within a topic name's 249 characters.";

  public static final String TOPIC_ALLOWED_REGEX_CONFIG = "topic.allowed.regex";
  private static final String TOPIC_ALLOWED_REGEX_DOC =
      "The topics rows may be published to: a Java regular expression that the whole topic name"
          + " must match, whether it is the row's own or the filled template. A row routed"
          + " elsewhere is never published (reason TOPIC_NOT_ALLOWED; dead-lettered if"
          + " dead.letter.topic is set), nor is one routed to dead.letter.topic itself. Validation"
          + " refuses a pattern that matches no topic a configured topic.template gives (judged by"
          + " its fixed beginning where it takes a row's values)."
          + " Empty: any legal topic but Kafka's internal ones. A row"
          + " can name any topic, so whoever may insert outbox rows could otherwise write to every"
          + " topic the task's producer may, Connect's own (configs, offsets, status) included:"
          + " set it (e.g. outbox\\..*) where the outbox's writers are not trusted like the"
          + " connector's operators. It judges the topic the relay routes a row to, before"
          + " Connect's transforms: a router among them (RegexRouter, TimestampRouter) can send the"
          + " record elsewhere, which the connector says at its start (reason"
          + " TOPIC_RENAMED_AFTER_ALLOWED_CHECK); route with topic.template instead, and keep the"
          + " producer's ACLs as the boundary.";

  public static final String PAYLOAD_FORMAT_CONFIG = "payload.format";
  private static final String PAYLOAD_FORMAT_DOC =
      "How a row's payload becomes the record value. bytes: the bytes as they are, whatever"
          + " their serialization. json: parsed as JSON and emitted as a structured value, for"
          + " JsonConverter and friends (what Debezium's outbox event router sends with"
          + " table.expand.json.payload=true). string: the payload as text (UTF-8), a Connect"
          + " string, which is what Debezium's outbox event router sends by default for a jsonb,"
          + " json, text or varchar payload column. A value.converter in the connector's"
          + " configuration must write it: StringConverter needs string (it would write any other"
          + " value as the text of a Java object, and the row would be recorded published),"
          + " ByteArrayConverter needs bytes; validation refuses other pairs, unless the connector"
          + " lists a transform that may change the value (any but Kafka's RegexRouter,"
          + " TimestampRouter, InsertHeader, DropHeaders, Filter, ValueToKey and $Key"
          + " transforms), which may turn it into what the converter writes. A converter set only"
          + " on the worker is not checked.";

  public static final String RECORD_TIMESTAMP_CONFIG = "record.timestamp";
  private static final String RECORD_TIMESTAMP_DOC =
      "What each record's timestamp is (dead letters' too). created_at: the row's created_at,"
          + " when the application wrote the event, or the column column.event.timestamp names"
          + " (none, so that the producer stamps it, when that is null, before 1970 or more than"
          + " 10 minutes ahead of the worker's clock: Kafka would refuse it). send_time: none, so the producer stamps each record when it sends it,"
          + " as Debezium's outbox event router stamps a record when it processes the change."
          + " Kafka's time-based retention and a topic's message.timestamp.before.max.ms judge a"
          + " record by its timestamp: with created_at, a backlog older than a topic's"
          + " retention.ms (after an outage) or a row requeued days later can be deleted from a"
          + " quiet topic within minutes of its append, or refused by a broker that bounds"
          + " timestamps in the past (which fails the task at every claim of that row); send_time,"
          + " or topics with message.timestamp.type=LogAppendTime, avoid both. The row's"
          + " created_at is not sent elsewhere: consumers that need it take it from the payload.";

  public static final String PAYLOAD_JSON_SCHEMA_CONFIG = "payload.json.schema";
  private static final String PAYLOAD_JSON_SCHEMA_DOC =
      "With payload.format=json: whether the value carries a Connect schema. none: a schemaless"
          + " value (maps and lists), for JsonConverter with schemas.enable=false. inferred: a"
          + " struct whose schema is inferred from each payload by the rules of Debezium's outbox"
          + " event router with table.expand.json.payload=true (the struct named after the payload"
          + " column, nested structs by their path, integers int32 or int64, other numbers"
          + " float64, every field optional), so that schema-based converters (Avro, Protobuf,"
          + " JSON Schema with a schema registry) can write it, and a registry sees the schemas"
          + " Debezium registered; none with the connector's own value.converter set to one of"
          + " them (Confluent's or Apicurio's Avro, Protobuf or JSON Schema converter) is refused,"
          + " unless a value transform is configured. A payload no schema holds (not a JSON object, an array mixing"
          + " kinds of values) is never published (reason PAYLOAD_SCHEMA_UNINFERABLE), nor is one"
          + " whose string or member name holds a surrogate without its pair (a \\ud83d escape"
          + " alone), which Avro and Protobuf would write as '?' (reason PAYLOAD_INVALID_JSON). What the"
          + " converter itself refuses (a schema the registry refuses) fails the task, as with"
          + " Debezium, unless errors.tolerance=all (then see null.metadata.policy). A member name"
          + " that is not an Avro name (a letter or '_', then letters, digits or '_', as Avro's Java"
          + " library checks them) is parked"
          + " (PAYLOAD_SCHEMA_UNINFERABLE) where the connector's own value.converter is an Avro"
          + " converter (Confluent's without value.converter.scrub.invalid.names=true, or"
          + " Apicurio's), which would refuse it, even where a transform would rename the member;"
          + " one set only on the worker is not seen, and fails the task on such a name. With any"
          + " Avro value.converter in the connector's configuration, scrubbing names or not, so is"
          + " a payload with two different structs of one name (objects in an array of arrays are"
          + " named by their members alone), which Avro cannot define twice, or one named as an"
          + " Avro primitive type (int, string, ...), and one nested deeper than about 225 objects"
          + " (Avro's schema text nests twice as deep as JsonConverter's, past what Jackson"
          + " writes); with Confluent's JSON Schema value.converter, one nested deeper than about"
          + " 150 objects or 298 arrays (its schema text nests deeper still, and it reads it back"
          + " through Jackson). With a converter that scrubs names (Confluent's Avro or Protobuf with"
          + " value.converter.scrub.invalid.names=true), so is a payload with two names that scrub"
          + " to one (a-b and a_b, 1st and x1st) in one object, and with Avro two different structs"
          + " so named."
          + " With Confluent's Protobuf value.converter in the connector's configuration,"
          + " so is a payload it refuses: a member name that is not a Protobuf identifier (ASCII"
          + " letters, digits and '_', not starting with a digit; unless"
          + " value.converter.scrub.invalid.names=true), a null element of an array, an array of"
          + " arrays, an object member whose message type (its last name part, plus 'Message'"
          + " where that is its own name) is named as another member of its object, as another"
          + " such type there (an object 'error' beside a member 'errorMessage') or as its object's"
          + " own type (an object 'data' in an object 'data'). JsonConverter with schemas.enable=true writes the schema"
          + " into every record (a path name per struct: a deep or wide payload's schema can be"
          + " many times its size): with value.converter=JsonConverter in the connector's own"
          + " configuration it is counted against max.request.size (RECORD_TOO_LARGE); set only"
          + " on the worker it is not seen, and a record over max.request.size fails the task."
          + " See docs/switching-from-debezium.md, Schema registry.";

  public static final String PAYLOAD_JSON_NULL_BEHAVIOR_CONFIG = "payload.json.null.behavior";
  private static final String PAYLOAD_JSON_NULL_BEHAVIOR_DOC =
      "With payload.json.schema=inferred: what becomes of a payload member whose value is null,"
          + " as Debezium's table.json.payload.null.behavior. ignore: left out of the schema and"
          + " the value (unless another object of the same array gives the member a type: then"
          + " it is null there). optional_bytes: an optional bytes field, null; an array of nulls"
          + " is an array of optional bytes.";

  public static final String PAYLOAD_MAX_BYTES_CONFIG = "payload.max.bytes";
  public static final int PAYLOAD_MAX_BYTES_DEFAULT = 1_000_000;
  private static final String PAYLOAD_MAX_BYTES_DOC =
      "Largest payload, in bytes, that is published. A row with a larger payload is never"
          + " published (reason PAYLOAD_TOO_LARGE), and a claim does not read its payload: only"
          + " its size leaves the database (a jsonb or text payload's as UTF-8 text), so oversized"
          + " rows cannot fill a worker's heap; nor are a row's headers read (its own and those of"
          + " column.additional.placement) when one of them, as text, is over the producer's"
          + " record limit below: the row is parked RECORD_TOO_LARGE, its dead-letter record"
          + " marked outbox.headers_omitted. The default leaves room for the key, headers"
          + " and batch overhead under the producer's default max.request.size (1048576), but not"
          + " for JsonConverter's base64 (a third more): with it keep this under three quarters of"
          + " max.request.size. Besides, a row whose whole record would exceed the producer's"
          + " max.request.size or its buffer.memory, which it refuses alike (read from"
          + " producer.override.max.request.size and producer.override.buffer.memory, else Kafka's"
          + " defaults), is never published (reason RECORD_TOO_LARGE), so a row near the limit is"
          + " parked instead of failing the task; the payload is counted as the connector's own"
          + " value.converter writes it where that is JsonConverter (bytes as base64, a string"
          + " with its escapes, with schemas in an envelope; one set only on the worker is not"
          + " seen), and so are the key and the headers, by the connector's own key.converter and"
          + " header.converter (JsonConverter with schemas wraps each header in some fifty bytes"
          + " of envelope). Keep it within the"
          + " topic's max.message.bytes too. A claim stops at the in-flight byte budget the task has"
          + " left (half the producer's buffer.memory), counting its rows' payloads and headers in"
          + " seq order (its first row whatever its size): the rows past it (a burst of rows near"
          + " this limit after small ones) stay for a later claim, so a task reads at most that"
          + " budget and one row into the worker's heap at once.";

  /** The producer setting the record-size check follows, as a connector override. */
  static final String PRODUCER_MAX_REQUEST_SIZE = "producer.override.max.request.size";

  static final String PRODUCER_BUFFER_MEMORY = "producer.override.buffer.memory";

  /** Kafka's default {@code buffer.memory}: 32 MiB. */
  static final long DEFAULT_PRODUCER_BUFFER_MEMORY = 32L * 1024 * 1024;

  public static final String DEAD_LETTER_TOPIC_CONFIG = "dead.letter.topic";
  private static final String DEAD_LETTER_TOPIC_DOC =
      "Topic for rows that can never be published as they are (every reason code of an"
          + " unpublishable row in the README: payload too large, not valid JSON or text, a number"
          + " or schema the format cannot carry, a record too large for the producer, malformed or"
          + " reserved headers, no legal or allowed topic, deadline passed), with"
          + " the reason in a header and the payload's bytes as the value (read them with"
          + " ByteArrayConverter; with payload.format=string the payload's text, as StringConverter"
          + " writes it, and a payload that is not UTF-8 is left out); a payload over payload.max.bytes, or a record too large for the"
          + " producer, is sent without its payload and the row's own headers (and, still too"
          + " large, with the message id as its only relay header). No row may name it as its own"
          + " topic. Keep it uncompacted: a dead letter of a row without payload has a null"
          + " value, which compaction takes for a tombstone. At least once, a dead letter Kafka"
          + " refuses (an ACL, the topic's max.message.bytes) fails the task, and its row,"
          + " reclaimed alone until its attempts are spent, ends EXHAUSTED as"
          + " ABANDONED_IN_ISOLATION, its own reason in the task's log only. Empty: none; such"
          + " rows are only parked in the outbox table.";

  // Delivery guarantee
  public static final String DELIVERY_GUARANTEE_CONFIG = "delivery.guarantee";
  public static final String AT_LEAST_ONCE = "at-least-once";
  public static final String EXACTLY_ONCE = "exactly-once";
  private static final String DELIVERY_GUARANTEE_DOC =
      "at-least-once: every row reaches Kafka, and a lost or expired lease can send it twice"
          + " (visible as claim-lost-total or abandoned-reclaimed-total). exactly-once: no row reaches a read_committed consumer twice, with"
          + " any tasks.max; needs workers with exactly.once.source.support=enabled and this"
          + " connector's exactly.once.support=required (docs/design.md, Exactly-once).";

  public static final String EXACTLY_ONCE_BUCKETS_CONFIG = "exactly.once.buckets";
  public static final int EXACTLY_ONCE_BUCKETS_DEFAULT = 16;
  private static final String EXACTLY_ONCE_BUCKETS_DOC =
      "With delivery.guarantee=exactly-once: how many fixed buckets (source partitions) each"
          + " instance key's aggregates are split into, by hash of the aggregate id. Tasks own"
          + " buckets, so at most this many tasks run. Change it only with the connector drained:"
          + " rows in flight at a change are sent again once.";

  public static final String NULL_METADATA_POLICY_CONFIG = "null.metadata.policy";
  private static final String NULL_METADATA_POLICY_DOC =
      "What an acknowledgement without metadata does to its row. Connect sends one both for a"
          + " record dropped by a transform or predicate and for a failed send under"
          + " errors.tolerance=all, and does not say which. retry: the row is retried with"
          + " backoff and charged an attempt. fail: the row is parked as FAILED (reason"
          + " DROPPED_OR_UNDELIVERED), for pipelines that filter on purpose: with a Filter"
          + " transform (Kafka's, Confluent's or Debezium's) or Confluent's TombstoneHandler"
          + " retry is refused unless"
          + " errors.tolerance=all, as each dropped row would be retried until its attempts ran out"
          + " (ten drops over about eight minutes), holding back the later rows of its aggregate."
          + " Neither marks it"
          + " published. With delivery.guarantee=exactly-once the task also fails at its next poll"
          + " (reason DROPPED_UNDER_EXACTLY_ONCE): a later record's committed offset would cover"
          + " the dropped record's row.";

  // Maintenance
  public static final String RETENTION_PUBLISHED_MS_CONFIG = "retention.published.ms";
  public static final long RETENTION_PUBLISHED_MS_DEFAULT = 604_800_000L;
  public static final long RETENTION_FOREVER = -1L;
  private static final String RETENTION_PUBLISHED_MS_DOC =
      "How long published rows are kept (in the published log, with their Kafka topic, partition"
          + " and offset) before cleanup deletes them. -1 keeps them forever. 0 keeps none: the"
          + " acknowledgement's fenced write only deletes the row and writes no log entry: about a"
          + " quarter less WAL for relaying a row, and less database CPU (docs/benchmarks.md)."
          + " It gives up what the log serves:"
          + " outbox-relay-cli inspect and status see no published row, the writer library's"
          + " duplicate check no longer covers published message ids, and a publish whose"
          + " database reply was lost (a failover) cannot be read back, so its row is counted as a"
          + " lost claim though Kafka has it once. A retention shorter than a database outage"
          + " may do the same to a publish whose reply was lost in it: the entry that would be"
          + " read back can be deleted first (keep it hours, not minutes). At most 5000 years"
          + " (1825000 days).";

  /**
   * The longest retention, 5,000 years: retention's cut-off is the database's clock less it, and
   * one before 4713 BC (about 6,700 years back) is out of the timestamp type's range (SQLState
   * 22008), which failed task 0's every run, and its restarts. Well past any "forever" spelled as a
   * large number (9999999999999 ms is about 317 years), which therefore still works.
   */
  static final long RETENTION_LIMIT_MS = 1_825_000L * 24 * 60 * 60 * 1000;

  public static final String CLEANUP_INTERVAL_MS_CONFIG = "cleanup.interval.ms";
  public static final long CLEANUP_INTERVAL_MS_DEFAULT = 60_000L;
  private static final String CLEANUP_INTERVAL_MS_DOC =
      "How often retention cleanup runs, on task 0; the first run comes within a minute of task"
          + " 0's start, so that restarts more frequent than the interval do not hold it off. A"
          + " run deletes up to 10 statements of"
          + " cleanup.batch.size rows; a run that finds more to delete is followed by the next one"
          + " a second after its start instead (after a pause as long as it took, if that is over"
          + " half a second), until retention has caught up (so it keeps up with up to about 10 x"
          + " cleanup.batch.size rows published per second while a batch takes under 50 ms;"
          + " retention-behind-ms and a WARN, reason RETENTION_BEHIND, say when it does not).";

  public static final String CLEANUP_BATCH_SIZE_CONFIG = "cleanup.batch.size";
  public static final int CLEANUP_BATCH_SIZE_DEFAULT = 1_000;
  private static final String CLEANUP_BATCH_SIZE_DOC =
      "Most rows one cleanup statement deletes, so cleanup never holds locks for long.";

  public static final String METRICS_BACKLOG_INTERVAL_MS_CONFIG = "metrics.backlog.interval.ms";
  public static final long METRICS_BACKLOG_INTERVAL_MS_DEFAULT = 30_000L;
  private static final String METRICS_BACKLOG_INTERVAL_MS_DOC =
      "How often task 0 reads the backlog metrics (rows per status, age of the oldest pending row)"
          + " from the database. The read counts every row awaiting delivery or parked: one that"
          + " took longer than a tenth of this interval (a backlog of millions) waits ten times as"
          + " long as it took before the next (at most ten intervals), and one that fails (the"
          + " statement timeout) is logged, not retried at once, so that task 0 keeps claiming;"
          + " the age of the oldest pending row and the parked rows (by their index) are then"
          + " read alone, and the next count is spaced by all three reads alike. Between counts"
          + " so spaced, the age of the oldest pending row is read alone every interval.";

  // Wake-up
  public static final String NOTIFY_ENABLED_CONFIG = "notify.enabled";
  private static final String NOTIFY_ENABLED_DOC =
      "LISTEN for the notifications the outbox table's insert trigger sends (schema version 3,"
          + " channel [<schema>_]<table>_relay by the table's name as spelled when it was"
          + " migrated, which the task reads from the trigger; payload = instance key) and"
          + " claim as soon as rows of this connector's instance keys commit, instead of waiting"
          + " for poll.interval.ms (a task at its in-flight limit claims when room is freed"
          + " instead). Polling"
          + " goes on regardless, so a missed notification only delays delivery. Notifying"
          + " serializes the inserting transactions' commits in PostgreSQL; where that matters more"
          + " than latency, set outbox_relay.notify = 'off' for the database (schema version 5)."
          + " LISTEN needs a session of its own: behind a pooler in transaction mode (PgBouncer)"
          + " notifications are lost, so point connection.url at the server or turn this"
          + " off: the listener finds such a pooler at a check (every 15 s) that another server"
          + " session answers (a pool of one may never), says so at WARN (NOTIFY_UNAVAILABLE) and"
          + " ends, the task polling. Tables whose channels are spelled alike (one unqualified"
          + " name in several schemas, each connector's search_path picking its own) announce"
          + " on one channel, and a task then also wakes for rows of its keys inserted into the"
          + " other tables, to run a claim that finds nothing: name such tables"
          + " schema.table in outbox.table before their first migration, which fixes the"
          + " channel, to give each its own.";

  // Table columns
  public static final String COLUMN_MESSAGE_ID_CONFIG = "column.message.id";
  private static final String COLUMN_MESSAGE_ID_DOC =
      "Column holding the message id, sent as the id header (debezium) or outbox.message_id"
          + " (outbox-relay); Debezium's table.field.event.id (id). Read as text, so a uuid"
          + " column works. The settings of this group let the relay read a table the"
          + " application writes under other names, such as a Debezium outbox table adopted with"
          + " outbox-relay-cli adopt-debezium-table (docs/switching-from-debezium.md).";

  public static final String COLUMN_AGGREGATE_TYPE_CONFIG = "column.aggregate.type";
  private static final String COLUMN_AGGREGATE_TYPE_DOC =
      "Column holding the aggregate type, the topic template's ${aggregate_type}; Debezium's"
          + " route.by.field (aggregatetype).";

  public static final String COLUMN_AGGREGATE_ID_CONFIG = "column.aggregate.id";
  private static final String COLUMN_AGGREGATE_ID_DOC =
      "Column holding the aggregate id: the record key, and the aggregate whose rows are"
          + " delivered in order; Debezium's table.field.event.key (aggregateid).";

  public static final String COLUMN_EVENT_TYPE_CONFIG = "column.event.type";
  private static final String COLUMN_EVENT_TYPE_DOC =
      "Column holding the event type, sent as the eventType header (debezium) or"
          + " outbox.event_type (outbox-relay), the topic template's ${event_type}; Debezium's"
          + " table.field.event.type (type).";

  public static final String COLUMN_PAYLOAD_CONFIG = "column.payload";
  private static final String COLUMN_PAYLOAD_DOC =
      "Column holding the payload: bytea is read as bytes, jsonb, json, text and varchar as"
          + " their UTF-8 text (see payload.format). Debezium's table.field.event.payload"
          + " (payload).";

  public static final String COLUMN_EVENT_TIMESTAMP_CONFIG = "column.event.timestamp";
  private static final String COLUMN_EVENT_TIMESTAMP_DOC =
      "Column holding the event's time, each record's timestamp under"
          + " record.timestamp=created_at: a timestamptz, or a timestamp read as UTC (as Debezium"
          + " reads one); a row whose value is null gets no timestamp, so the producer stamps its"
          + " record (Debezium stamps it with the time it processed the change). Debezium's"
          + " table.field.event.timestamp. The lag metrics, the published log and"
          + " outbox-relay-cli keep the relay's created_at.";

  public static final String COLUMN_ADDITIONAL_PLACEMENT_CONFIG = "column.additional.placement";
  private static final String COLUMN_ADDITIONAL_PLACEMENT_DOC =
      "Further columns sent as record headers, in Debezium's table.fields.additional.placement"
          + " syntax: a comma-separated list of column:header or column:header:alias (the header's"
          + " name; the column's name when absent). Values are sent as their PostgreSQL text,"
          + " null as a null header. Only the header placement is supported (not envelope or"
          + " partition). Header names under outbox. are the relay's, and so are id and"
          + " eventType in the debezium convention: there, <event type column>:header:eventType"
          + " is accepted and sent once. A row whose own headers hold a header of a placed name"
          + " is parked: HEADERS_MALFORMED (a name given twice), or HEADER_NAME_RESERVED for one"
          + " of the relay's names (eventType in the debezium convention). Values, as the row's"
          + " own headers, are not read when one is larger than the producer's record limit: the"
          + " row is parked RECORD_TOO_LARGE.";

  public OutboxSourceConfig(Map<?, ?> props) {
    this(configDef(), props);
  }

  /** For a task config that extends {@link #configDef()} with task-only keys. */
  protected OutboxSourceConfig(ConfigDef definition, Map<?, ?> props) {
    super(definition, props, false); // Never log values: the URL may carry a password.
    ConfigChecks.requireValid(this::get, originals());
  }

  /** A new definition of every key; callers may extend it. */
  public static ConfigDef configDef() {
    ConfigDef def = new ConfigDef();
    new Group(def, CONNECTION_GROUP)
        .add(
            CONNECTION_URL_CONFIG,
            Type.STRING,
            ConfigDef.NO_DEFAULT_VALUE,
            Validators.jdbcUrl(),
            Importance.HIGH,
            CONNECTION_URL_DOC,
            "JDBC URL")
        .add(
            CONNECTION_USER_CONFIG,
            Type.STRING,
            null,
            null,
            Importance.HIGH,
            CONNECTION_USER_DOC,
            "User")
        .add(
            CONNECTION_PASSWORD_CONFIG,
            Type.PASSWORD,
            null,
            null,
            Importance.HIGH,
            CONNECTION_PASSWORD_DOC,
            "Password")
        .add(
            CONNECTION_POOL_SIZE_CONFIG,
            Type.INT,
            CONNECTION_POOL_SIZE_DEFAULT,
            Range.between(2, 64),
            Importance.LOW,
            CONNECTION_POOL_SIZE_DOC,
            "Pool size")
        .add(
            CONNECTION_TIMEOUT_MS_CONFIG,
            Type.LONG,
            CONNECTION_TIMEOUT_MS_DEFAULT,
            Range.between(250L, 300_000L),
            Importance.LOW,
            CONNECTION_TIMEOUT_MS_DOC,
            "Connection timeout (ms)")
        .add(
            STATEMENT_TIMEOUT_MS_CONFIG,
            Type.LONG,
            STATEMENT_TIMEOUT_MS_DEFAULT,
            Range.between(100L, 86_400_000L),
            Importance.LOW,
            STATEMENT_TIMEOUT_MS_DOC,
            "Statement timeout (ms)")
        .add(
            SOCKET_TIMEOUT_MS_CONFIG,
            Type.LONG,
            null,
            Validators.optionalBetween(1_000L, 86_400_000L),
            Importance.LOW,
            SOCKET_TIMEOUT_MS_DOC,
            "Socket timeout (ms)");
    new Group(def, OUTBOX_GROUP)
        .add(
            OUTBOX_TABLE_CONFIG,
            Type.STRING,
            OUTBOX_TABLE_DEFAULT,
            Validators.outboxTable(),
            Importance.HIGH,
            OUTBOX_TABLE_DOC,
            "Outbox table")
        .add(
            INSTANCE_KEYS_CONFIG,
            Type.LIST,
            ConfigDef.NO_DEFAULT_VALUE,
            Validators.instanceKeys(),
            Importance.HIGH,
            INSTANCE_KEYS_DOC,
            "Instance keys")
        .add(
            SCHEMA_MIGRATE_ON_START_CONFIG,
            Type.BOOLEAN,
            false,
            null,
            Importance.MEDIUM,
            SCHEMA_MIGRATE_ON_START_DOC,
            "Migrate schema on start")
        .add(
            SCHEMA_MIGRATE_LOCK_TIMEOUT_MS_CONFIG,
            Type.LONG,
            SCHEMA_MIGRATE_LOCK_TIMEOUT_MS_DEFAULT,
            Range.between(0L, 3_600_000L),
            Importance.LOW,
            SCHEMA_MIGRATE_LOCK_TIMEOUT_MS_DOC,
            "Migration lock timeout (ms)");
    new Group(def, CLAIMING_GROUP)
        .add(
            CLAIM_BATCH_SIZE_CONFIG,
            Type.INT,
            CLAIM_BATCH_SIZE_DEFAULT,
            Range.between(1, 10_000),
            Importance.MEDIUM,
            CLAIM_BATCH_SIZE_DOC,
            "Claim batch size")
        .add(
            POLL_INTERVAL_MS_CONFIG,
            Type.LONG,
            POLL_INTERVAL_MS_DEFAULT,
            Range.between(10L, 600_000L),
            Importance.MEDIUM,
            POLL_INTERVAL_MS_DOC,
            "Poll interval (ms)")
        .add(
            LEASE_DURATION_MS_CONFIG,
            Type.LONG,
            LEASE_DURATION_MS_DEFAULT,
            Range.between(1_000L, 86_400_000L),
            Importance.MEDIUM,
            LEASE_DURATION_MS_DOC,
            "Lease duration (ms)")
        .add(
            LEASE_RENEWAL_INTERVAL_MS_CONFIG,
            Type.LONG,
            LEASE_RENEWAL_INTERVAL_MS_DEFAULT,
            Range.between(100L, 86_400_000L),
            Importance.LOW,
            LEASE_RENEWAL_INTERVAL_MS_DOC,
            "Lease renewal interval (ms)")
        .add(
            MAX_ATTEMPTS_CONFIG,
            Type.INT,
            MAX_ATTEMPTS_DEFAULT,
            Range.between(0, 1_000_000),
            Importance.MEDIUM,
            MAX_ATTEMPTS_DOC,
            "Max attempts")
        .add(
            RETRY_BACKOFF_INITIAL_MS_CONFIG,
            Type.LONG,
            RETRY_BACKOFF_INITIAL_MS_DEFAULT,
            Range.between(0L, RETRY_BACKOFF_LIMIT_MS),
            Importance.LOW,
            RETRY_BACKOFF_INITIAL_MS_DOC,
            "Initial retry backoff (ms)")
        .add(
            RETRY_BACKOFF_MAX_MS_CONFIG,
            Type.LONG,
            RETRY_BACKOFF_MAX_MS_DEFAULT,
            Range.between(0L, RETRY_BACKOFF_LIMIT_MS),
            Importance.LOW,
            RETRY_BACKOFF_MAX_MS_DOC,
            "Max retry backoff (ms)")
        .add(
            RETRY_BACKOFF_MULTIPLIER_CONFIG,
            Type.DOUBLE,
            RETRY_BACKOFF_MULTIPLIER_DEFAULT,
            Validators.finiteBetween(1.0, 100.0),
            Importance.LOW,
            RETRY_BACKOFF_MULTIPLIER_DOC,
            "Retry backoff multiplier")
        .add(
            RETRY_BACKOFF_JITTER_CONFIG,
            Type.DOUBLE,
            RETRY_BACKOFF_JITTER_DEFAULT,
            Validators.finiteBetween(0.0, 1.0),
            Importance.LOW,
            RETRY_BACKOFF_JITTER_DOC,
            "Retry backoff jitter")
        .add(
            ORDERING_ENABLED_CONFIG,
            Type.BOOLEAN,
            true,
            null,
            Importance.MEDIUM,
            ORDERING_ENABLED_DOC,
            "Per-aggregate ordering")
        .choice(
            DELIVERY_GUARANTEE_CONFIG,
            AT_LEAST_ONCE,
            Importance.HIGH,
            DELIVERY_GUARANTEE_DOC,
            "Delivery guarantee",
            AT_LEAST_ONCE,
            EXACTLY_ONCE)
        .add(
            EXACTLY_ONCE_BUCKETS_CONFIG,
            Type.INT,
            EXACTLY_ONCE_BUCKETS_DEFAULT,
            Range.between(1, 1024),
            Importance.LOW,
            EXACTLY_ONCE_BUCKETS_DOC,
            "Exactly-once buckets");
    new Group(def, RECORDS_GROUP)
        .choice(
            ROUTING_CONVENTION_CONFIG,
            ROUTING_OUTBOX_RELAY,
            Importance.MEDIUM,
            ROUTING_CONVENTION_DOC,
            "Routing convention",
            ROUTING_OUTBOX_RELAY,
            ROUTING_DEBEZIUM)
        .add(
            TOPIC_TEMPLATE_CONFIG,
            Type.STRING,
            null,
            Validators.topicTemplate(),
            Importance.MEDIUM,
            TOPIC_TEMPLATE_DOC,
            "Topic template")
        .add(
            TOPIC_ALLOWED_REGEX_CONFIG,
            Type.STRING,
            "",
            Validators.optionalRegex(),
            Importance.MEDIUM,
            TOPIC_ALLOWED_REGEX_DOC,
            "Allowed topics")
        .choice(
            PAYLOAD_FORMAT_CONFIG,
            "bytes",
            Importance.MEDIUM,
            PAYLOAD_FORMAT_DOC,
            "Payload format",
            "bytes",
            "json",
            "string")
        .choice(
            RECORD_TIMESTAMP_CONFIG,
            "created_at",
            Importance.LOW,
            RECORD_TIMESTAMP_DOC,
            "Record timestamp",
            "created_at",
            "send_time")
        .choice(
            PAYLOAD_JSON_SCHEMA_CONFIG,
            "none",
            Importance.LOW,
            PAYLOAD_JSON_SCHEMA_DOC,
            "JSON payload schema",
            "none",
            "inferred")
        .choice(
            PAYLOAD_JSON_NULL_BEHAVIOR_CONFIG,
            "ignore",
            Importance.LOW,
            PAYLOAD_JSON_NULL_BEHAVIOR_DOC,
            "JSON payload null members",
            "ignore",
            "optional_bytes")
        .add(
            PAYLOAD_MAX_BYTES_CONFIG,
            Type.INT,
            PAYLOAD_MAX_BYTES_DEFAULT,
            Range.between(1, OutboxMessage.MAX_PAYLOAD_BYTES),
            Importance.LOW,
            PAYLOAD_MAX_BYTES_DOC,
            "Max payload bytes")
        .add(
            DEAD_LETTER_TOPIC_CONFIG,
            Type.STRING,
            "",
            Validators.optionalTopicName(),
            Importance.MEDIUM,
            DEAD_LETTER_TOPIC_DOC,
            "Dead-letter topic")
        .choice(
            NULL_METADATA_POLICY_CONFIG,
            "retry",
            Importance.LOW,
            NULL_METADATA_POLICY_DOC,
            "Null-metadata policy",
            "retry",
            "fail");
    new Group(def, MAINTENANCE_GROUP)
        .add(
            RETENTION_PUBLISHED_MS_CONFIG,
            Type.LONG,
            RETENTION_PUBLISHED_MS_DEFAULT,
            Validators.minusOneOrBetweenZeroAnd(RETENTION_LIMIT_MS),
            Importance.MEDIUM,
            RETENTION_PUBLISHED_MS_DOC,
            "Retention of published rows (ms)")
        .add(
            CLEANUP_INTERVAL_MS_CONFIG,
            Type.LONG,
            CLEANUP_INTERVAL_MS_DEFAULT,
            Range.between(1_000L, 86_400_000L),
            Importance.LOW,
            CLEANUP_INTERVAL_MS_DOC,
            "Cleanup interval (ms)")
        .add(
            CLEANUP_BATCH_SIZE_CONFIG,
            Type.INT,
            CLEANUP_BATCH_SIZE_DEFAULT,
            Range.between(1, 100_000),
            Importance.LOW,
            CLEANUP_BATCH_SIZE_DOC,
            "Cleanup batch size")
        .add(
            METRICS_BACKLOG_INTERVAL_MS_CONFIG,
            Type.LONG,
            METRICS_BACKLOG_INTERVAL_MS_DEFAULT,
            Range.between(1_000L, 3_600_000L),
            Importance.LOW,
            METRICS_BACKLOG_INTERVAL_MS_DOC,
            "Backlog metrics interval (ms)");
    new Group(def, WAKE_UP_GROUP)
        .add(
            NOTIFY_ENABLED_CONFIG,
            Type.BOOLEAN,
            true,
            null,
            Importance.LOW,
            NOTIFY_ENABLED_DOC,
            "Wake up on NOTIFY");
    new Group(def, COLUMNS_GROUP)
        .column(COLUMN_MESSAGE_ID_CONFIG, OutboxColumns.Row.MESSAGE_ID, COLUMN_MESSAGE_ID_DOC)
        .column(
            COLUMN_AGGREGATE_TYPE_CONFIG,
            OutboxColumns.Row.AGGREGATE_TYPE,
            COLUMN_AGGREGATE_TYPE_DOC)
        .column(COLUMN_AGGREGATE_ID_CONFIG, OutboxColumns.Row.AGGREGATE_ID, COLUMN_AGGREGATE_ID_DOC)
        .column(COLUMN_EVENT_TYPE_CONFIG, OutboxColumns.Row.EVENT_TYPE, COLUMN_EVENT_TYPE_DOC)
        .column(COLUMN_PAYLOAD_CONFIG, OutboxColumns.Row.PAYLOAD, COLUMN_PAYLOAD_DOC)
        .column(
            COLUMN_EVENT_TIMESTAMP_CONFIG, OutboxColumns.Row.CREATED_AT, COLUMN_EVENT_TIMESTAMP_DOC)
        .add(
            COLUMN_ADDITIONAL_PLACEMENT_CONFIG,
            Type.LIST,
            "",
            Validators.additionalPlacement(),
            Importance.LOW,
            COLUMN_ADDITIONAL_PLACEMENT_DOC,
            "Columns as headers");
    return def;
  }

  /** Defines the keys of one group, numbering them in order. */
  private static final class Group {
    private final ConfigDef def;
    private final String name;
    private int order;

    Group(ConfigDef def, String name) {
      this.def = def;
      this.name = name;
    }

    Group add(
        String key,
        Type type,
        Object defaultValue,
        Validator validator,
        Importance importance,
        String doc,
        String displayName) {
      Width width = type == Type.STRING || type == Type.LIST ? Width.LONG : Width.SHORT;
      def.define(
          key, type, defaultValue, validator, importance, doc, name, ++order, width, displayName);
      return this;
    }

    Group column(String key, OutboxColumns.Row field, String doc) {
      return add(
          key,
          Type.STRING,
          ColumnMapping.RELAY.column(field),
          Validators.columnName(field),
          Importance.LOW,
          doc,
          "Column: " + key.substring("column.".length()));
    }

    Group choice(
        String key,
        String defaultValue,
        Importance importance,
        String doc,
        String displayName,
        String... choices) {
      def.define(
          key,
          Type.STRING,
          defaultValue,
          Validators.oneOf(choices),
          importance,
          doc,
          name,
          ++order,
          Width.SHORT,
          displayName,
          Validators.choices(choices));
      return this;
    }
  }

  // Connection

  public String jdbcUrl() {
    return getString(CONNECTION_URL_CONFIG);
  }

  /** The role to connect as, or null to leave it to the URL. */
  public String user() {
    String user = getString(CONNECTION_USER_CONFIG);
    return user == null || user.isEmpty() ? null : user;
  }

  /** The password, or null; {@link Password#toString()} never reveals it. */
  public Password password() {
    return getPassword(CONNECTION_PASSWORD_CONFIG);
  }

  public int poolSize() {
    return getInt(CONNECTION_POOL_SIZE_CONFIG);
  }

  public Duration connectionTimeout() {
    return millis(CONNECTION_TIMEOUT_MS_CONFIG);
  }

  /** How long the database lets one statement run before it cancels it. */
  public Duration statementTimeout() {
    return millis(STATEMENT_TIMEOUT_MS_CONFIG);
  }

  /** How long a read on an open connection may wait; unset, the statement timeout plus 30 s. */
  public Duration socketTimeout() {
    Long configured = getLong(SOCKET_TIMEOUT_MS_CONFIG);
    return configured != null
        ? Duration.ofMillis(configured)
        : statementTimeout().plusMillis(SOCKET_TIMEOUT_MARGIN_MS);
  }

  // Outbox

  public OutboxTable table() {
    return OutboxTable.parse(getString(OUTBOX_TABLE_CONFIG));
  }

  /** The configured instance keys, in the order given. */
  public Set<String> instanceKeys() {
    return Collections.unmodifiableSet(new LinkedHashSet<>(getList(INSTANCE_KEYS_CONFIG)));
  }

  public boolean migrateOnStart() {
    return getBoolean(SCHEMA_MIGRATE_ON_START_CONFIG);
  }

  /** How long a migration waits for a lock; zero leaves the server's own lock_timeout. */
  public Duration schemaMigrateLockTimeout() {
    return millis(SCHEMA_MIGRATE_LOCK_TIMEOUT_MS_CONFIG);
  }

  // Claiming

  public int batchSize() {
    return getInt(CLAIM_BATCH_SIZE_CONFIG);
  }

  public Duration pollInterval() {
    return millis(POLL_INTERVAL_MS_CONFIG);
  }

  public Duration leaseDuration() {
    return millis(LEASE_DURATION_MS_CONFIG);
  }

  /**
   * The {@code transforms.<alias>.type} keys of routers that may rename a topic after {@code
   * topic.allowed.regex} judged it; empty without the regex.
   */
  public List<String> topicRenamedAfterTheAllowedCheck() {
    String allowed = getString(TOPIC_ALLOWED_REGEX_CONFIG);
    return allowed == null || allowed.isEmpty()
        ? List.of()
        : ConfigChecks.topicRouterTypeKeys(originals());
  }

  /**
   * More than one request in flight while ordering, with idempotence left to the worker: order
   * holds only if the worker's producer settings (or its exactly-once source support) make the
   * producer idempotent, which the connector cannot see.
   */
  public boolean producerOrderLeftToTheWorker() {
    return ConfigChecks.producerOrder(this::get, originals()) == ConfigChecks.ProducerOrder.UNSEEN;
  }

  /**
   * Exactly once with {@code transaction.boundary=interval} where the interval or the producer's
   * transaction timeout is left to the worker and, taken as Kafka's default (60 s each), the
   * interval is not below the timeout: {@code [interval, timeout]} in ms as assumed; else empty.
   */
  public java.util.Optional<long[]> exactlyOnceIntervalMayOutlastTransaction() {
    return java.util.Optional.ofNullable(
        ConfigChecks.exactlyOnceIntervalMayOutlastTransaction(this::get, originals()));
  }

  /**
   * How many tasks Connect starts for {@code maxTasks}: exactly once no more than buckets, each of
   * which one task owns (a task beyond them would own none).
   */
  public static int tasksStarted(int maxTasks, boolean exactlyOnce, int buckets) {
    return exactlyOnce ? Math.min(maxTasks, buckets) : maxTasks;
  }

  /**
   * Whether a renewal delayed by an outcome write that waited a whole connection timeout for its
   * connection and then a whole statement timeout could come after the lease ran out: see {@code
   * lease.duration.ms}.
   */
  public boolean leaseMayRunOutBehindAStuckWrite() {
    return leaseRenewalInterval()
            .plus(connectionTimeout())
            .plus(statementTimeout())
            .compareTo(leaseDuration())
        >= 0;
  }

  public Duration leaseRenewalInterval() {
    return millis(LEASE_RENEWAL_INTERVAL_MS_CONFIG);
  }

  /** The attempt budget per row; {@link ClaimRequest#UNLIMITED_ATTEMPTS} when configured as 0. */
  public int maxAttempts() {
    int attempts = getInt(MAX_ATTEMPTS_CONFIG);
    return attempts == 0 ? ClaimRequest.UNLIMITED_ATTEMPTS : attempts;
  }

  public BackoffPolicy backoff() {
    return new BackoffPolicy(
        millis(RETRY_BACKOFF_INITIAL_MS_CONFIG),
        millis(RETRY_BACKOFF_MAX_MS_CONFIG),
        getDouble(RETRY_BACKOFF_MULTIPLIER_CONFIG),
        getDouble(RETRY_BACKOFF_JITTER_CONFIG));
  }

  public boolean orderingEnabled() {
    return getBoolean(ORDERING_ENABLED_CONFIG);
  }

  // Records

  public RoutingConvention routingConvention() {
    return choice(ROUTING_CONVENTION_CONFIG, RoutingConvention.class);
  }

  /** The configured template, or the routing convention's default when unset or empty. */
  public String topicTemplate() {
    String template = getString(TOPIC_TEMPLATE_CONFIG);
    return template == null || template.isEmpty()
        ? routingConvention().defaultTopicTemplate()
        : template;
  }

  public PayloadFormat payloadFormat() {
    return choice(PAYLOAD_FORMAT_CONFIG, PayloadFormat.class);
  }

  public RecordTimestamp recordTimestamp() {
    return choice(RECORD_TIMESTAMP_CONFIG, RecordTimestamp.class);
  }

  /** Whether a JSON payload goes with a schema inferred from it; validated against the format. */
  private enum JsonPayloadSchema {
    NONE,
    INFERRED
  }

  /**
   * The schema to infer for JSON payloads, named after the payload column; empty for schemaless
   * values (and for the other formats, which {@link ConfigChecks} makes sure of).
   */
  public Optional<InferredSchema> inferredSchema() {
    if (choice(PAYLOAD_JSON_SCHEMA_CONFIG, JsonPayloadSchema.class) != JsonPayloadSchema.INFERRED
        || payloadFormat() != PayloadFormat.JSON) {
      return Optional.empty();
    }
    InferredSchema.NullMembers nulls =
        choice(PAYLOAD_JSON_NULL_BEHAVIOR_CONFIG, InferredSchema.NullMembers.class);
    if (valueConverterIs(ConfigChecks.CONFLUENT_PROTOBUF_CONVERTER)) {
      return Optional.of(
          InferredSchema.forProtobuf(columnMapping().payload(), nulls, scrubsNames()));
    }
    if (valueConverterIs(ConfigChecks.CONFLUENT_JSON_SCHEMA_CONVERTER)) {
      return Optional.of(InferredSchema.forJsonSchema(columnMapping().payload(), nulls));
    }
    return Optional.of(
        new InferredSchema(
            columnMapping().payload(),
            nulls,
            avroValueConverter() && !scrubsNames(),
            avroValueConverter()));
  }

  /** Whether the connector's own value converter is {@code converter} (or its alias). */
  private boolean valueConverterIs(String converter) {
    String name = ConfigChecks.pluginName(originals().get(ConfigChecks.CONNECT_VALUE_CONVERTER));
    return name != null && ConfigChecks.isPlugin(name, converter);
  }

  /**
   * Whether the connector's own value converter is an Avro converter; one set only on the worker is
   * not visible here.
   */
  private boolean avroValueConverter() {
    String name = ConfigChecks.pluginName(originals().get(ConfigChecks.CONNECT_VALUE_CONVERTER));
    return name != null
        && ConfigChecks.AVRO_CONVERTERS.stream().anyMatch(c -> ConfigChecks.isPlugin(name, c));
  }

  /**
   * Whether the Avro or Protobuf converter scrubs names it cannot take (Confluent's, with {@code
   * scrub.invalid.names=true}) instead of refusing them. A transform that renames members is not
   * seen: the row is parked where the converter might have taken it renamed.
   */
  private boolean scrubsNames() {
    // Apicurio's converter has no such setting: carried over from a Confluent set-up, it is
    // ignored there, and names that are not Avro names are still refused.
    String name = ConfigChecks.pluginName(originals().get(ConfigChecks.CONNECT_VALUE_CONVERTER));
    Object scrub = originals().get(ConfigChecks.CONNECT_VALUE_CONVERTER + ".scrub.invalid.names");
    return name != null
        && (ConfigChecks.isPlugin(name, ConfigChecks.AVRO_CONVERTERS.get(0))
            || ConfigChecks.isPlugin(name, ConfigChecks.CONFLUENT_PROTOBUF_CONVERTER))
        && scrub != null
        && "true".equalsIgnoreCase(scrub.toString().trim());
  }

  /**
   * The connector's own value converter, as far as a record's size depends on it; {@link
   * ConverterKind#OTHER} when it is another or set only on the worker (not visible here).
   * JsonConverter's schemas.enable defaults to true; a value it would refuse counts as true.
   */
  public ConverterKind valueConverter() {
    return converter(ConfigChecks.CONNECT_VALUE_CONVERTER);
  }

  /** The connector's own key converter, as {@link #valueConverter()} reads the value's. */
  public ConverterKind keyConverter() {
    return converter(ConfigChecks.CONNECT_KEY_CONVERTER);
  }

  /** The connector's own header converter, likewise. */
  public ConverterKind headerConverter() {
    return converter(ConfigChecks.CONNECT_HEADER_CONVERTER);
  }

  private ConverterKind converter(String key) {
    String name = ConfigChecks.pluginName(originals().get(key));
    if (name == null || !ConfigChecks.isPlugin(name, ConfigChecks.JSON_CONVERTER)) {
      return ConverterKind.OTHER;
    }
    Object schemas = originals().get(key + ".schemas.enable");
    return schemas != null && "false".equalsIgnoreCase(schemas.toString().trim())
        ? ConverterKind.JSON
        : ConverterKind.JSON_WITH_SCHEMAS;
  }

  /** How the relay reaches the database. */
  public ConnectionSettings connectionSettings() {
    return new ConnectionSettings(
        jdbcUrl(),
        user(),
        password(),
        connectionTimeout(),
        statementTimeout(),
        socketTimeout(),
        poolSize());
  }

  public int payloadMaxBytes() {
    return getInt(PAYLOAD_MAX_BYTES_CONFIG);
  }

  /**
   * Whether Connect commits an exactly-once task's transaction at the end of every poll, its
   * default ({@code transaction.boundary=poll}); false with {@code interval}, where a transaction
   * holds what the task returned over the whole interval.
   */
  public boolean transactionPerPoll() {
    Object boundary = originals().get("transaction.boundary");
    return boundary == null || !"interval".equalsIgnoreCase(boundary.toString().trim());
  }

  /**
   * The producer's {@code buffer.memory} as this connector overrides it, else Kafka's default (a
   * worker-wide {@code producer.buffer.memory} is not visible here).
   */
  public long producerBufferMemory() {
    return producerOverride(PRODUCER_BUFFER_MEMORY, DEFAULT_PRODUCER_BUFFER_MEMORY);
  }

  /**
   * The producer's {@code max.request.size} as this connector overrides it, else Kafka's default.
   */
  public int producerMaxRequestSize() {
    return (int)
        Math.min(
            Integer.MAX_VALUE,
            producerOverride(PRODUCER_MAX_REQUEST_SIZE, MappingSettings.DEFAULT_RECORD_MAX_BYTES));
  }

  /**
   * The largest record the producer takes: it refuses one over {@code max.request.size} and one
   * over {@code buffer.memory} alike ({@code RecordTooLargeException}, which fails the task), so a
   * row whose record would exceed either is parked instead (RECORD_TOO_LARGE).
   */
  public int producerRecordLimit() {
    return (int) Math.min(producerMaxRequestSize(), producerBufferMemory());
  }

  /**
   * A positive size the connector's config gives the producer. An unreadable value is the
   * producer's to reject; the default stands meanwhile.
   */
  private long producerOverride(String key, long fallback) {
    Object value = originals().get(key);
    if (value != null) {
      try {
        long size = Long.parseLong(value.toString().trim());
        if (size > 0) {
          return size;
        }
      } catch (NumberFormatException e) {
        // falls through to the default
      }
    }
    return fallback;
  }

  /** topic.allowed.regex, compiled; empty when any routable topic is allowed. */
  public Optional<Pattern> allowedTopics() {
    String regex = getString(TOPIC_ALLOWED_REGEX_CONFIG);
    return regex == null || regex.isEmpty()
        ? Optional.empty()
        : Optional.of(Pattern.compile(regex));
  }

  public Optional<String> deadLetterTopic() {
    String topic = getString(DEAD_LETTER_TOPIC_CONFIG);
    return topic == null || topic.isEmpty() ? Optional.empty() : Optional.of(topic);
  }

  /** delivery.guarantee=exactly-once. */
  public boolean exactlyOnce() {
    return EXACTLY_ONCE.equalsIgnoreCase(getString(DELIVERY_GUARANTEE_CONFIG));
  }

  public int exactlyOnceBuckets() {
    return getInt(EXACTLY_ONCE_BUCKETS_CONFIG);
  }

  public NullMetadataPolicy nullMetadataPolicy() {
    return choice(NULL_METADATA_POLICY_CONFIG, NullMetadataPolicy.class);
  }

  /**
   * The columns holding the message's fields, and those sent as headers; under the debezium
   * convention a placement of the event type column as eventType is left out, as the convention
   * sends that header already ({@link ConfigChecks} rejects any other use of a reserved name).
   */
  public ColumnMapping columnMapping() {
    String eventType = getString(COLUMN_EVENT_TYPE_CONFIG);
    List<ColumnMapping.HeaderColumn> headers =
        HeaderPlacements.parse(getList(COLUMN_ADDITIONAL_PLACEMENT_CONFIG)).stream()
            .filter(h -> !HeaderPlacements.isConventionEventType(h, routingConvention(), eventType))
            .toList();
    return new ColumnMapping(
        getString(COLUMN_MESSAGE_ID_CONFIG),
        getString(COLUMN_AGGREGATE_TYPE_CONFIG),
        getString(COLUMN_AGGREGATE_ID_CONFIG),
        eventType,
        getString(COLUMN_PAYLOAD_CONFIG),
        headers,
        getString(COLUMN_EVENT_TIMESTAMP_CONFIG));
  }

  // Maintenance

  /**
   * Whether a published row leaves an entry in the published log: not with a retention of 0, where
   * the acknowledgement's write only deletes the row.
   */
  public boolean keepsPublishedLog() {
    return getLong(RETENTION_PUBLISHED_MS_CONFIG) != 0;
  }

  /** How long published rows are kept; empty to keep them forever. */
  public Optional<Duration> retention() {
    long ms = getLong(RETENTION_PUBLISHED_MS_CONFIG);
    return ms == RETENTION_FOREVER ? Optional.empty() : Optional.of(Duration.ofMillis(ms));
  }

  public Duration cleanupInterval() {
    return millis(CLEANUP_INTERVAL_MS_CONFIG);
  }

  public int cleanupBatchSize() {
    return getInt(CLEANUP_BATCH_SIZE_CONFIG);
  }

  public Duration backlogMetricsInterval() {
    return millis(METRICS_BACKLOG_INTERVAL_MS_CONFIG);
  }

  // Wake-up

  public boolean notifyEnabled() {
    return getBoolean(NOTIFY_ENABLED_CONFIG);
  }

  private Duration millis(String key) {
    return Duration.ofMillis(getLong(key));
  }

  /** "outbox-relay" → OUTBOX_RELAY; the validator has already checked the word. */
  private <E extends Enum<E>> E choice(String key, Class<E> type) {
    String word = getString(key).toUpperCase(Locale.ROOT).replace('-', '_');
    try {
      return Enum.valueOf(type, word);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(key + " has no matching " + type.getSimpleName());
    }
  }
}
