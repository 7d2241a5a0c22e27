package dev.outboxrelay.testing;

import dev.outboxrelay.testing.DebeziumOutboxTable.DebeziumRow;
import io.debezium.data.Envelope;
import io.debezium.data.Json;
import io.debezium.data.Uuid;
import io.debezium.transforms.outbox.EventRouter;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;

/**
 * What a consumer received from Debezium for an outbox row: the change event Debezium's PostgreSQL
 * connector makes of the row's insert ({@code op=c}, the row in {@code after}, the columns typed as
 * that connector types them: uuid as {@code io.debezium.data.Uuid}, jsonb as {@code
 * io.debezium.data.Json}), put through Debezium's own {@link EventRouter}, then serialized by the
 * converters a Connect worker would use (headers by Connect's default {@link
 * SimpleHeaderConverter}).
 */
public final class EventRouterReference implements AutoCloseable {
  private static final Schema AFTER =
      SchemaBuilder.struct()
          .name("dbserver1.public.outbox.Value")
          .field("id", Uuid.builder().build())
          .field("aggregatetype", Schema.STRING_SCHEMA)
          .field("aggregateid", Schema.STRING_SCHEMA)
          .field("type", Schema.STRING_SCHEMA)
          .field("payload", Json.builder().optional().build())
          .build();

  private static final Schema SOURCE =
      SchemaBuilder.struct()
          .name("io.debezium.connector.postgresql.Source")
          .field("connector", Schema.STRING_SCHEMA)
          .field("ts_ms", Schema.INT64_SCHEMA)
          .build();

  private static final Envelope ENVELOPE =
      Envelope.defineSchema()
          .withName("dbserver1.public.outbox.Envelope")
          .withRecord(AFTER)
          .withSource(SOURCE)
          .build();

  private final EventRouter<SourceRecord> router = new EventRouter<>();
  private final Converter keyConverter;
  private final Converter valueConverter;
  private final SimpleHeaderConverter headerConverter = new SimpleHeaderConverter();

  /**
   * @param routerConfig the EventRouter's settings, as the Debezium connector had them
   */
  public EventRouterReference(
      Map<String, String> routerConfig, Converter keyConverter, Converter valueConverter) {
    router.configure(routerConfig);
    this.keyConverter = keyConverter;
    this.valueConverter = valueConverter;
    headerConverter.configure(Map.of());
  }

  /** The record as a consumer sees it: topic, key, headers and value, each as text. */
  public record ConsumerView(String topic, String key, Map<String, String> headers, String value) {}

  public ConsumerView route(DebeziumRow row) {
    Struct after =
        new Struct(AFTER)
            .put("id", row.id())
            .put("aggregatetype", row.aggregateType())
            .put("aggregateid", row.aggregateId())
            .put("type", row.type())
            .put("payload", row.payload());
    Struct source = new Struct(SOURCE).put("connector", "postgresql").put("ts_ms", 0L);
    Struct change = ENVELOPE.create(after, source, Instant.now());
    SourceRecord captured =
        new SourceRecord(
            Map.of("server", "dbserver1"),
            Map.of("lsn", 1L),
            "dbserver1.public.outbox",
            null,
            null,
            null,
            ENVELOPE.schema(),
            change);
    SourceRecord routed = router.apply(captured);
    Map<String, String> headers = new LinkedHashMap<>();
    for (Header h : routed.headers()) {
      byte[] bytes =
          headerConverter.fromConnectHeader(routed.topic(), h.key(), h.schema(), h.value());
      headers.put(h.key(), bytes == null ? null : new String(bytes, StandardCharsets.UTF_8));
    }
    return new ConsumerView(
        routed.topic(),
        text(keyConverter.fromConnectData(routed.topic(), routed.keySchema(), routed.key())),
        headers,
        text(valueConverter.fromConnectData(routed.topic(), routed.valueSchema(), routed.value())));
  }

  /** The same view of a record the relay put on Kafka. */
  public static ConsumerView of(KafkaRecords.Delivered delivered) {
    return new ConsumerView(
        delivered.topic(), delivered.key(), delivered.headers(), text(delivered.value()));
  }

  private static String text(byte[] bytes) {
    return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    router.close();
  }
}
