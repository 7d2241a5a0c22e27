package dev.outboxrelay.testing;

import dev.outboxrelay.mapping.SourceOffsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;

/**
 * A test SMT that drops records (returns null), so Connect acknowledges them without metadata: the
 * relay must then retry the row ({@code null.metadata.policy=retry}) and, once its attempts are
 * spent, park it EXHAUSTED, never mark it published. It drops:
 *
 * <ul>
 *   <li>with {@code aggregates} ({@code id:N,id:N,...}), every record of these aggregates while the
 *       record's row is on one of its first N claims (the lease token in the source offset counts
 *       claims). Dropping by claim rather than by message keeps to the documented limit of
 *       ordering: a record is never dropped while a later record of its aggregate, claimed as often
 *       or less, goes through;
 *   <li>with {@code header}, every record that carries this header (a row header of the outbox
 *       row).
 * </ul>
 *
 * <p>What it did is kept in static fields for the test to read (tasks run in the test JVM).
 */
public class DropTransform implements Transformation<SourceRecord> {
  public static final String AGGREGATES_CONFIG = "aggregates";
  public static final String HEADER_CONFIG = "header";

  /** Drops per message id. */
  private static final Map<String, AtomicInteger> DROPS = new ConcurrentHashMap<>();

  /** Names of the task threads that let records through. */
  private static final Set<String> PASSING_THREADS = ConcurrentHashMap.newKeySet();

  private Map<String, Integer> claimsToDrop = Map.of();
  private String header = "";

  public static void reset() {
    DROPS.clear();
    PASSING_THREADS.clear();
  }

  /** How often the record of this message was dropped. */
  public static int drops(String messageId) {
    AtomicInteger drops = DROPS.get(messageId);
    return drops == null ? 0 : drops.get();
  }

  /** Names of the task threads that let records through, since the last {@link #reset}. */
  public static Set<String> passingThreads() {
    return Set.copyOf(PASSING_THREADS);
  }

  @Override
  public void configure(Map<String, ?> configs) {
    Map<String, Integer> parsed = new HashMap<>();
    Object value = configs.get(AGGREGATES_CONFIG);
    if (value != null && !value.toString().isBlank()) {
      for (String entry : value.toString().split(",")) {
        String[] parts = entry.trim().split(":");
        parsed.put(parts[0], Integer.parseInt(parts[1]));
      }
    }
    claimsToDrop = Map.copyOf(parsed);
    Object headerValue = configs.get(HEADER_CONFIG);
    header = headerValue == null ? "" : headerValue.toString();
  }

  @Override
  public SourceRecord apply(SourceRecord record) {
    Integer drops = claimsToDrop.get(String.valueOf(record.key()));
    boolean byClaim = drops != null && SourceOffsets.leaseToken(record) <= drops;
    boolean byHeader = !header.isEmpty() && record.headers().lastWithName(header) != null;
    if (byClaim || byHeader) {
      DROPS
          .computeIfAbsent(SourceOffsets.messageId(record), k -> new AtomicInteger())
          .incrementAndGet();
      return null;
    }
    PASSING_THREADS.add(Thread.currentThread().getName());
    return record;
  }

  @Override
  public ConfigDef config() {
    return new ConfigDef()
        .define(
            AGGREGATES_CONFIG,
            ConfigDef.Type.STRING,
            "",
            ConfigDef.Importance.HIGH,
            "id:N,... aggregates whose records are dropped on their first N claims")
        .define(
            HEADER_CONFIG,
            ConfigDef.Type.STRING,
            "",
            ConfigDef.Importance.HIGH,
            "records carrying this header are dropped");
  }

  @Override
  public void close() {}
}
