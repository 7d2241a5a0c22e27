package dev.outboxrelay.it;

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
 * A test SMT that makes whole aggregates fail for a while: it drops (returns null) every record of
 * a chosen aggregate while the record's row is on one of its first N claims (the lease token in the
 * source offset counts claims). Connect then acknowledges the record without metadata, which with
 * {@code null.metadata.policy=retry} makes the row AMBIGUOUS and retried after a backoff.
 *
 * <p>Dropping by claim rather than by message keeps to the documented limit of ordering: a record
 * is never dropped while a later record of its aggregate, claimed as often or less, goes through.
 *
 * <p>Config {@code aggregates}: {@code id:N,id:N,...}. What it did is kept in static fields for the
 * test to read (tasks run in the test JVM).
 */
public class DropFirstClaimsTransform implements Transformation<SourceRecord> {
  public static final String AGGREGATES_CONFIG = "aggregates";

  /** Drops per message id. */
  static final Map<String, AtomicInteger> DROPS = new ConcurrentHashMap<>();

  /** Names of the task threads that let records through. */
  static final Set<String> PASSING_THREADS = ConcurrentHashMap.newKeySet();

  private Map<String, Integer> claimsToDrop = Map.of();

  static void reset() {
    DROPS.clear();
    PASSING_THREADS.clear();
  }

  /** How often the record of this message was dropped. */
  static int drops(String messageId) {
    AtomicInteger drops = DROPS.get(messageId);
    return drops == null ? 0 : drops.get();
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
  }

  @Override
  public SourceRecord apply(SourceRecord record) {
    Integer drops = claimsToDrop.get(String.valueOf(record.key()));
    if (drops != null && SourceOffsets.leaseToken(record) <= drops) {
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
            "id:N,... aggregates whose records are dropped on their first N claims");
  }

  @Override
  public void close() {}
}
