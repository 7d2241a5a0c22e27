package dev.outboxrelay.benchmark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads a run's topic from the beginning on its own thread and keeps what the figures need: which
 * rows arrived (a bit per row), duplicates, per-aggregate order violations and, when asked, the
 * arrival time of each row's first copy.
 */
final class TopicReader implements AutoCloseable {
  private final Consumer<byte[], byte[]> consumer;
  private final List<TopicPartition> assigned = new ArrayList<>();
  private volatile CountDownLatch endAsked;
  private Map<TopicPartition, Long> endOffsets; // the reader thread's own
  private final BitSet seen;
  private final long[] lastSequence;
  private final long[] arrivalNanos;
  private final boolean checkOrder;
  private final int rows;
  private final Thread thread;
  private final AtomicLong distinct = new AtomicLong();
  private final AtomicLong duplicates = new AtomicLong();
  private final AtomicLong orderViolations = new AtomicLong();
  private final AtomicLong foreign = new AtomicLong();
  private volatile long lastArrivalNanos;
  private volatile long firstArrivalNanos;
  private volatile RuntimeException failure;
  private volatile boolean running = true;

  /**
   * @param rows highest row number expected
   * @param recordArrivals keep each row's arrival time (latency runs)
   * @param checkOrder count rows that arrive after a later row of their aggregate
   */
  TopicReader(
      String bootstrap,
      String topic,
      int partitions,
      int rows,
      int aggregates,
      boolean recordArrivals,
      boolean checkOrder) {
    this(bootstrap, topic, partitions, rows, aggregates, recordArrivals, checkOrder, false);
  }

  /**
   * @param readCommitted read with {@code isolation.level=read_committed}, as consumers of an
   *     exactly-once connector must: a record counts when its transaction committed
   */
  TopicReader(
      String bootstrap,
      String topic,
      int partitions,
      int rows,
      int aggregates,
      boolean recordArrivals,
      boolean checkOrder,
      boolean readCommitted) {
    this(
        consumer(bootstrap, readCommitted),
        topic,
        partitions,
        rows,
        aggregates,
        recordArrivals,
        checkOrder);
  }

  TopicReader(
      Consumer<byte[], byte[]> consumer,
      String topic,
      int partitions,
      int rows,
      int aggregates,
      boolean recordArrivals,
      boolean checkOrder) {
    this.consumer = consumer;
    for (int p = 0; p < partitions; p++) {
      assigned.add(new TopicPartition(topic, p));
    }
    consumer.assign(assigned);
    consumer.seekToBeginning(assigned);
    seen = new BitSet(rows + 1);
    lastSequence = new long[aggregates];
    java.util.Arrays.fill(lastSequence, -1);
    arrivalNanos = recordArrivals ? new long[rows + 1] : null;
    this.checkOrder = checkOrder;
    this.rows = rows;
    thread = new Thread(this::run, "benchmark-reader-" + topic);
    thread.setDaemon(true);
    thread.start();
  }

  private static Consumer<byte[], byte[]> consumer(String bootstrap, boolean readCommitted) {
    return new KafkaConsumer<>(
        Map.of(
            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrap,
            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
            "earliest",
            ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
            false,
            ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
            5_000,
            ConsumerConfig.FETCH_MIN_BYTES_CONFIG,
            1,
            ConsumerConfig.ISOLATION_LEVEL_CONFIG,
            readCommitted ? "read_committed" : "read_uncommitted"),
        new ByteArrayDeserializer(),
        new ByteArrayDeserializer());
  }

  private void run() {
    try {
      while (running) {
        CountDownLatch asked = endAsked;
        if (asked != null && endOffsets == null) {
          // The last stable offsets under read_committed: what a consumer can ever read.
          endOffsets = consumer.endOffsets(assigned);
        }
        ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
        long now = System.nanoTime();
        for (ConsumerRecord<byte[], byte[]> r : records) {
          accept(r.value(), now);
        }
        if (asked != null && atEnd()) {
          endOffsets = null;
          endAsked = null;
          asked.countDown();
        }
      }
    } catch (WakeupException e) {
      // close() ends the loop.
    } catch (RuntimeException e) {
      failure = e;
    } finally {
      consumer.close(Duration.ofSeconds(5));
    }
  }

  private void accept(byte[] value, long now) {
    long[] head = PayloadHead.parse(value);
    int n = (int) head[0];
    if (n <= 0 || n > rows) {
      foreign.incrementAndGet();
      return; // not a row of this run
    }
    if (seen.get(n)) {
      duplicates.incrementAndGet();
      return;
    }
    seen.set(n);
    if (firstArrivalNanos == 0) {
      firstArrivalNanos = now;
    }
    if (arrivalNanos != null) {
      arrivalNanos[n] = now;
    }
    if (checkOrder) {
      int aggregate = (int) head[1];
      if (head[2] < lastSequence[aggregate]) {
        orderViolations.incrementAndGet();
      }
      lastSequence[aggregate] = Math.max(lastSequence[aggregate], head[2]);
    }
    // Before the count: whoever reads a count reads this row's arrival time (or a later one's).
    lastArrivalNanos = now;
    distinct.incrementAndGet();
  }

  long distinct() {
    check();
    return distinct.get();
  }

  /** Records whose row number is not one of this run's (a peer's warm-up row, numbered 0). */
  long foreign() {
    check();
    return foreign.get();
  }

  /**
   * Returns once the reader has read every record the topic held when asked: the run's last row
   * arriving is not the topic's end (a second copy may follow on another partition), and duplicates
   * and order violations read before it could miss copies. Call outside the timed window, before
   * {@link #duplicates} and {@link #orderViolations}.
   */
  void readToEnd(Duration timeout) throws InterruptedException {
    CountDownLatch asked = new CountDownLatch(1);
    endAsked = asked;
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!asked.await(100, TimeUnit.MILLISECONDS)) {
      check();
      if (!thread.isAlive() || System.nanoTime() > deadline) {
        throw new IllegalStateException("the topic reader did not reach the topic's end in time");
      }
    }
  }

  /** Whether a {@link #readToEnd} waits now (a test's hook). */
  boolean endAsked() {
    return endAsked != null;
  }

  private boolean atEnd() {
    for (TopicPartition tp : assigned) {
      if (consumer.position(tp) < endOffsets.get(tp)) {
        return false;
      }
    }
    return true;
  }

  long duplicates() {
    return duplicates.get();
  }

  long orderViolations() {
    return orderViolations.get();
  }

  /** When the first row of this run arrived (0 before). */
  long firstArrivalNanos() {
    return firstArrivalNanos;
  }

  /**
   * When the latest row of this run counted in {@link #distinct} arrived (0 before): read after
   * {@link #distinct} returned the number of rows expected, the arrival of the last of them.
   * Duplicates and foreign records do not move it.
   */
  long lastArrivalNanos() {
    return lastArrivalNanos;
  }

  /**
   * Rows per second between the first row's arrival and the last's ({@code rows - 1} intervals):
   * the rate once records flow, without what came before the first (a peer's task restart and
   * stream opening, the relay's first claim). NaN for fewer than two rows or one instant. Read
   * after {@link #distinct} returned {@code rows}.
   */
  double firstToLastRowsPerSecond(long rows) {
    long nanos = lastArrivalNanos - firstArrivalNanos;
    return rows < 2 || nanos <= 0 ? Double.NaN : (rows - 1) / (nanos / 1e9);
  }

  /** Arrival time of row {@code n}'s first copy, 0 if it never came. Read after {@link #close}. */
  long arrivalNanos(int n) {
    return arrivalNanos[n];
  }

  private void check() {
    if (failure != null) {
      throw new IllegalStateException("topic reader failed", failure);
    }
  }

  @Override
  public void close() throws InterruptedException {
    if (!thread.isAlive()) {
      return;
    }
    running = false;
    consumer.wakeup();
    thread.join();
  }

  /**
   * The numbers of a benchmark payload: {@code {"n":N,"a":A,"s":S,...}} as written, or the same
   * keys in another order and spacing (PostgreSQL's jsonb text and Debezium's expanded JSON: {@code
   * {"a": A, "n": N, "p": "…", "s": S}}).
   */
  static final class PayloadHead {
    private PayloadHead() {}

    static long[] parse(byte[] value) {
      if (value.length > 5
          && value[0] == '{'
          && value[1] == '"'
          && value[2] == 'n'
          && value[3] == '"'
          && value[4] == ':') {
        return inOrder(value);
      }
      return byKey(value);
    }

    private static long[] inOrder(byte[] value) {
      long[] numbers = new long[3];
      int found = 0;
      long current = -1;
      for (int i = 0; i < value.length && found < 3; i++) {
        byte b = value[i];
        if (b >= '0' && b <= '9') {
          current = (current < 0 ? 0 : current * 10) + (b - '0');
        } else if (current >= 0) {
          numbers[found++] = current;
          current = -1;
        }
      }
      return numbers;
    }

    /** Finds {@code "n"}, {@code "a"} and {@code "s"} as keys; the padding ("p") is all x. */
    private static long[] byKey(byte[] value) {
      long[] numbers = new long[3];
      int found = 0;
      for (int i = 0; i + 2 < value.length && found < 3; i++) {
        if (value[i] != '"' || value[i + 2] != '"') {
          continue;
        }
        int slot =
            switch (value[i + 1]) {
              case 'n' -> 0;
              case 'a' -> 1;
              case 's' -> 2;
              default -> -1;
            };
        if (slot < 0) {
          continue;
        }
        int j = i + 3;
        while (j < value.length && value[j] == ' ') {
          j++;
        }
        if (j >= value.length || value[j] != ':') {
          continue;
        }
        j++;
        while (j < value.length && value[j] == ' ') {
          j++;
        }
        long v = 0;
        int digits = 0;
        while (j < value.length && value[j] >= '0' && value[j] <= '9') {
          v = v * 10 + (value[j++] - '0');
          digits++;
        }
        if (digits > 0) {
          numbers[slot] = v;
          found++;
        }
        i = j - 1;
      }
      return numbers;
    }
  }
}
