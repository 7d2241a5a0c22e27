package dev.outboxrelay.connect;

/**
 * Whether the task thread is blocked inside Kafka's producer, waiting on Kafka: for a topic's
 * metadata (Connect's producer waits for it without end, {@code max.block.ms} being
 * Long.MAX_VALUE), for room in its buffer, or for a transaction to commit. Such a thread is not
 * hung, and a broker outage is no reason to hand its rows to another task, which would wait the
 * same and send them twice once the broker is back. A thread hung in the task's own code (a
 * converter, a transform, a partitioner or interceptor called by the producer) is not waiting on
 * Kafka: its topmost frames are not the client's.
 */
final class ProducerWait {
  private static final String PRODUCER = "org.apache.kafka.clients.producer.KafkaProducer";

  private ProducerWait() {}

  /**
   * True if, from the top of {@code thread}'s stack down, only JDK and Kafka client frames come
   * before one of {@code KafkaProducer}'s.
   */
  static boolean isWaitingOnKafka(Thread thread) {
    if (thread == null) {
      return false;
    }
    for (StackTraceElement frame : thread.getStackTrace()) {
      String type = frame.getClassName();
      if (type.startsWith(PRODUCER)) {
        return true;
      }
      if (!isJdk(type) && !isKafkaClient(type)) {
        return false;
      }
    }
    return false;
  }

  private static boolean isJdk(String type) {
    return type.startsWith("java.") || type.startsWith("jdk.") || type.startsWith("sun.");
  }

  private static boolean isKafkaClient(String type) {
    return type.startsWith("org.apache.kafka.clients.")
        || type.startsWith("org.apache.kafka.common.");
  }
}
