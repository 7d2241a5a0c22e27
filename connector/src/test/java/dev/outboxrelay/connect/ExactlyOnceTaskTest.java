package dev.outboxrelay.connect;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.SourceOffsets;
import dev.outboxrelay.mapping.UnpublishableReasons;
import dev.outboxrelay.store.BucketShare;
import dev.outboxrelay.store.ClaimRequest;
import dev.outboxrelay.store.ClaimedMessage;
import dev.outboxrelay.store.ManualClock;
import dev.outboxrelay.store.MessageStatus;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.ReasonCodes;
import dev.outboxrelay.store.memory.InMemoryOutboxStore;
import dev.outboxrelay.writer.OutboxMessage;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The exactly-once task against the in-memory store and a stand-in for Connect's offset reader:
 * recovery before the first claim, records at their bucket's partition and position, and a batch
 * held until its unpublishable rows are parked. The Connect-cluster tests run the same end to end.
 */
class ExactlyOnceTaskTest {
  private static final int BUCKETS = 4;
  private static final BucketShare ALL = new BucketShare(BUCKETS, 0, 1);

  private final ManualClock clock = new ManualClock(Instant.parse("2026-12-01T12:00:00Z"));
  private final Map<Map<String, Object>, Map<String, Object>> committedOffsets = new HashMap<>();
  private InMemoryOutboxStore store;
  private volatile boolean parksFail;
  private OutboxSourceTask task;

  @BeforeEach
  void setUp() {
    store = new InMemoryOutboxStore(clock);
  }

  @AfterEach
  void tearDown() {
    if (task != null) {
      task.stop();
    }
  }

  @Test
  void recoversBeforeTheFirstClaimFromTheCommittedOffsets() {
    add("a", "agg-1", 10);
    add("b", "agg-1", 10);
    // A previous instance claimed both; Kafka committed a's record only.
    long old = store.newEpoch();
    List<ClaimedMessage> claimed = store.claim(previousClaim().exactlyOnce(old, 1, ALL)).claimed();
    ClaimedMessage a = claimed.get(0);
    commit(a, old, 1);

    List<SourceRecord> records = start().poll();

    assertEquals(List.of("b"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals(MessageStatus.PUBLISHED, store.find("a").orElseThrow().status());
    assertEquals(
        ReasonCodes.RECOVERED_FROM_OFFSETS, store.find("a").orElseThrow().lastFailureCode());
    assertEquals(1, task.metrics().recoveredPublished.get());
    assertEquals(1, task.metrics().recoveredReleased.get());
  }

  @Test
  void recordsCarryTheirBucketPartitionAndAPositionThatGrowsWithEachClaim() {
    add("a", "agg-1", 10);
    add("b", "agg-1", 10);
    List<SourceRecord> first = start(Map.of("claim.batch.size", "1")).poll();
    List<SourceRecord> second = task.poll();

    SourceRecord r1 = first.get(0);
    SourceRecord r2 = second.get(0);
    int bucket = (Integer) r1.sourcePartition().get(SourceOffsets.BUCKET);
    assertEquals(
        SourceOffsets.bucketPartition("eu", bucket, BUCKETS), r1.sourcePartition(), "partition");
    assertEquals(r1.sourcePartition(), r2.sourcePartition(), "one aggregate, one bucket");
    assertEquals(r1.sourceOffset().get(SourceOffsets.EPOCH), r2.sourceOffset().get("epoch"));
    assertTrue(
        (Long) r2.sourceOffset().get(SourceOffsets.BATCH)
            > (Long) r1.sourceOffset().get(SourceOffsets.BATCH));
  }

  @Test
  void anUnpublishableRowIsParkedBeforeItsBatchLeavesAndAFailedParkHoldsTheBatch() {
    add("good-1", "agg-1", 10);
    add("too-large", "agg-2", 100);
    add("good-2", "agg-3", 10);
    parksFail = true;
    start(Map.of("payload.max.bytes", "50"));

    assertThrows(RetriableException.class, task::poll, "the park failed: nothing leaves");
    add("later", "agg-4", 10);
    assertThrows(RetriableException.class, task::poll, "still held: nothing new is claimed");
    assertEquals(MessageStatus.PENDING, store.find("later").orElseThrow().status());
    assertEquals(MessageStatus.IN_FLIGHT, store.find("too-large").orElseThrow().status());

    parksFail = false;
    List<SourceRecord> records = task.poll();

    assertEquals(
        List.of("good-1", "good-2"), records.stream().map(SourceOffsets::messageId).toList());
    assertEquals(MessageStatus.FAILED, store.find("too-large").orElseThrow().status());
    assertEquals(
        UnpublishableReasons.PAYLOAD_TOO_LARGE,
        store.find("too-large").orElseThrow().lastFailureCode());
    assertEquals(List.of("later"), task.poll().stream().map(SourceOffsets::messageId).toList());
  }

  @Test
  void theNextBatchIsClaimedWhileConnectCommitsTheCurrentOne() {
    add("a", "agg-1", 10);
    add("b", "agg-2", 10);
    List<SourceRecord> first = start(Map.of("claim.batch.size", "1")).poll();
    assertEquals(List.of("a"), first.stream().map(SourceOffsets::messageId).toList());
    // No second poll yet: the prefetch claims b meanwhile, under the next claim number.
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> store.find("b").orElseThrow().status() == MessageStatus.IN_FLIGHT);
    List<SourceRecord> second = task.poll();
    assertEquals(List.of("b"), second.stream().map(SourceOffsets::messageId).toList());
    assertEquals(
        (Long) first.get(0).sourceOffset().get(SourceOffsets.BATCH) + 1,
        second.get(0).sourceOffset().get(SourceOffsets.BATCH));
  }

  private static ClaimRequest previousClaim() {
    return new ClaimRequest("previous", Set.of("eu"), 10, Duration.ofSeconds(30), 5, true);
  }

  private void commit(ClaimedMessage row, long epoch, long batch) {
    int bucket = ALL.bucketOf(row.aggregateHash());
    committedOffsets.put(
        SourceOffsets.bucketPartition(row.instanceKey(), bucket, BUCKETS),
        Map.of(
            SourceOffsets.EPOCH, epoch, SourceOffsets.BATCH, batch, SourceOffsets.SEQ, row.seq()));
  }

  private void add(String id, String aggregate, int payloadBytes) {
    store.enqueue(
        "eu",
        OutboxMessage.builder()
            .messageId(id)
            .aggregateType("order")
            .aggregateId(aggregate)
            .eventType("OrderPlaced")
            .payload(new byte[payloadBytes])
            .build());
  }

  private OutboxSourceTask start() {
    return start(Map.of());
  }

  private OutboxSourceTask start(Map<String, String> overrides) {
    Map<String, String> props = new HashMap<>();
    props.put("connection.url", "jdbc:postgresql://localhost:1/unused");
    props.put("instance.keys", "eu");
    props.put("poll.interval.ms", "10");
    props.put("claim.batch.size", "10");
    props.put("notify.enabled", "false");
    props.put("delivery.guarantee", "exactly-once");
    props.put("exactly.once.support", "required");
    props.put("exactly.once.buckets", Integer.toString(BUCKETS));
    props.putAll(overrides);
    OutboxStore parksMayFail = parksMayFail(store);
    task = new OutboxSourceTask(new FixedStoreProvider(parksMayFail, () -> clock), Time.SYSTEM);
    task.initialize(new Context());
    task.start(props);
    return task;
  }

  /** The store, but {@code markFailed} fails as in an outage while {@link #parksFail}. */
  private OutboxStore parksMayFail(OutboxStore delegate) {
    return (OutboxStore)
        Proxy.newProxyInstance(
            OutboxStore.class.getClassLoader(),
            new Class<?>[] {OutboxStore.class},
            (proxy, method, args) -> {
              if (parksFail && method.getName().equals("markFailed")) {
                throw new OutboxStoreException(
                    OutboxStoreException.Kind.TRANSIENT, "DB_UNAVAILABLE", "08006", "park");
              }
              try {
                return method.invoke(delegate, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  private final class Context implements SourceTaskContext {
    @Override
    public Map<String, String> configs() {
      return Map.of();
    }

    @Override
    public OffsetStorageReader offsetStorageReader() {
      return new OffsetStorageReader() {
        @Override
        public <T> Map<String, Object> offset(Map<String, T> partition) {
          return committedOffsets.get(partition);
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T> Map<Map<String, T>, Map<String, Object>> offsets(
            Collection<Map<String, T>> partitions) {
          Map<Map<String, T>, Map<String, Object>> found = new HashMap<>();
          for (Map<String, T> p : partitions) {
            Map<String, Object> offset = committedOffsets.get((Map<String, Object>) (Map<?, ?>) p);
            if (offset != null) {
              found.put(p, offset);
            }
          }
          return found;
        }
      };
    }

    @Override
    public PluginMetrics pluginMetrics() {
      return null;
    }
  }
}
