package dev.outboxrelay.localstack;

/** The processes of the local stack, in start order; they stop in reverse. */
enum Component {
  POSTGRES("postgres", "PostgreSQL"),
  KAFKA("kafka", "Kafka"),
  CONNECT("connect", "Connect");

  private final String id;
  private final String title;

  Component(String id, String title) {
    this.id = id;
    this.title = title;
  }

  /** File-name friendly: pid and log files are named after it. */
  String id() {
    return id;
  }

  String title() {
    return title;
  }
}
