package dev.outboxrelay.reliability;

import dev.outboxrelay.testing.OutboxDb;

/**
 * Holds back the acknowledgement writes of one instance key while switched on: a trigger refuses
 * every PUBLISHED write that carries Kafka coordinates with a retriable error (serialization
 * failure, 40001), so the relay keeps retrying and records reach Kafka and commit while their rows
 * stay IN_FLIGHT. Exactly-once recovery's write (no coordinates) passes.
 */
final class OutcomeHold {
  private final OutboxDb db;

  private OutcomeHold(OutboxDb db) {
    this.db = db;
  }

  static OutcomeHold install(OutboxDb db, String instanceKey) {
    db.update("CREATE TABLE outcome_hold (held BOOLEAN NOT NULL)");
    db.update("INSERT INTO outcome_hold VALUES (FALSE)");
    db.update(
        "CREATE FUNCTION hold_outcomes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            + " IF NEW.kafka_topic IS NOT NULL AND (SELECT held FROM outcome_hold) THEN"
            + " RAISE EXCEPTION 'acknowledgements held by the test' USING ERRCODE = '40001';"
            + " END IF; RETURN NEW; END $$");
    db.update(
        // Publishing inserts into the published log (schema version 9); failing that insert
        // fails the whole statement, the outbox row's DELETE included.
        "CREATE TRIGGER hold_outcomes BEFORE INSERT ON outbox_published FOR EACH ROW"
            + " WHEN (NEW.instance_key = '"
            + instanceKey
            + "') EXECUTE FUNCTION hold_outcomes()");
    return new OutcomeHold(db);
  }

  void hold() {
    db.update("UPDATE outcome_hold SET held = TRUE");
  }

  void resume() {
    db.update("UPDATE outcome_hold SET held = FALSE");
  }
}
