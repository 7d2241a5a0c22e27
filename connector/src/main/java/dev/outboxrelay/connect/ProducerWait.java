package dev.outboxrelay.connect;

/**
 * Whether the task thread is blocked inside Kafka's producer, waiting on Kafka: for a topic's
 * metadata (Connect's producer waits for it without end, {@code max.block.ms} being
 * Long.MAX_VALUE), for room in its buffer, or for a transaction to commit. Such a thread is not
 * hung, and a broker outage is no reason to hand its rows to another task, which would wait the
 * same and send them twice once the broker is back. A thread hung in the task's own code (a
 * converter, a transform, a partitioner or interceptor called by the producer) is not waiting on
 * Kafka: its topmost frames are not the client's.
 *
 * <p>Nor is a thread in Connect's topic creation ({@code topic.creation.*}), which asks the admin
 * client about each topic before its first send (every topic again in a new task instance), waiting
 * up to its API timeout and asking again while the broker is away: read as hung, its rows' leases
 * ran out and another task sent them too.
 */
final class ProducerWait {
  private static final String PRODUCER = "org.apache.kafka.clients.producer.KafkaProducer";
  private static final String TOPIC_ADMIN = "org.apache.kafka.connect.util.TopicAdmin";

  private ProducerWait() {}

  /**
   * True if, from the top of {@code thread}'s stack down, only JDK and Kafka client frames come
   * before one of {@code KafkaProducer}'s or Connect's {@code TopicAdmin}'s.
   */
  static boolean isWaitingOnKafka(Thread thread) {
    if (thread == null) {
      return false;
    }
    for (StackTraceElement frame : thread.getStackTrace()) {
      String type = frame.getClassName();
      if (type.startsWith(PRODUCER) || type.startsWith(TOPIC_ADMIN)) {
        return true;
      }
      if (!isJdk(type) && !isKafkaClient(type)) {
        return false;
      }
    }
    return false;
  }

  /** A frame of the JDK's own (a wait, a lock, a reflective call). */
  static boolean isJdk(String type) {
    return type.startsWith("java.") || type.startsWith("jdk.") || type.startsWith("sun.");
  }

  private static boolean isKafkaClient(String type) {
    return type.startsWith("org.apache.kafka.clients.")
        || type.startsWith("org.apache.kafka.common.");
  }
}
