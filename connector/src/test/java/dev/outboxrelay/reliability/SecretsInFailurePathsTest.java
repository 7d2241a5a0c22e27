package dev.outboxrelay.reliability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.mapping.UnpublishableReasons;
import dev.outboxrelay.reliability.Verdict.Figures;
import dev.outboxrelay.testing.ConnectCluster;
import dev.outboxrelay.testing.ConnectMBeans;
import dev.outboxrelay.testing.DropTransform;
import dev.outboxrelay.testing.LoadWriter;
import dev.outboxrelay.testing.LogCapture;
import dev.outboxrelay.testing.OutboxDb;
import dev.outboxrelay.testing.Sentinels;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.logging.log4j.Level;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Secrets never leak through a failure path. Sentinel strings sit in the connection password, in
 * the JDBC URL (the database's name and a password parameter), in rows' payloads, header names and
 * header values, and in the messages of exceptions the database raises: a trigger installed for the
 * test fails updates of the outbox table, while a mode is set, with {@code RAISE EXCEPTION} whose
 * message, detail and hint carry a sentinel and the row's payload and headers. With them the test
 * drives claim failures (retried), outcome-write failures (retried), the database going away,
 * unpublishable rows (dead-lettered, or parked FAILED), dropped records retried until EXHAUSTED,
 * and task failures (claim, outcome and dead-letter outcome refused for good), restarting the
 * failed tasks each time. No sentinel may appear in any log event of any logger (Log4j2 and
 * java.util.logging, every enabled level, exception chains included), in any MBean name, attribute
 * or value, or in the connectors' status from the REST API (the failed tasks' traces included).
 */
class SecretsInFailurePathsTest {
  /** A row header that makes the transform drop the row's records. */
  private static final String DROP_HEADER = "drop-me";

  @RegisterExtension
  static final ConnectCluster CLUSTER = ConnectCluster.shared(ConnectCluster.TWO_WORKERS);

  private final String run = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  private final String password = "SNTL-password-" + run;
  private final String urlPassword = "SNTL-urlpassword-" + run;
  private final String database = "sntl_database_" + run;
  private final String payload = "SNTL-payload-" + run;
  private final String headerName = "sntl-headername-" + run;
  private final String headerValue = "SNTL-headervalue-" + run;
  private final String driver = "SNTL-driver-" + run;

  private final Map<String, String> parked = new HashMap<>();
  private final List<String> failedStatuses = new ArrayList<>();
  private int phaseRows;

  @Test
  void sentinelsNeverLeakThroughFailurePaths() throws Exception {
    LogCapture logs = LogCapture.get();
    // host, port and database name are not secret to the relay (the pool and the driver may log
    // them at debug level); at INFO and above, they must not show either.
    Sentinels sentinels =
        Sentinels.watch(password, urlPassword, payload, headerName, headerValue, driver)
            .watchFrom(Level.INFO, database);
    long eventsBefore = logs.scannedCount();
    long errorsMark = logs.mark();
    try (AutoCloseable verbose = LogCapture.everyLevelOf("dev.outboxrelay", "com.zaxxer.hikari");
        Scenario s = Scenario.open(CLUSTER, "secrets", database)) {
      installFaultTrigger(s.db);
      String dlq = "rel.secrets.dlq";
      s.kit.createTopic(dlq, 1);
      Map<String, String> main = secretConfig(s, s.mainConfig(2));
      main.put("dead.letter.topic", dlq);
      main.put("max.attempts", "3");
      main.put("transforms", "drop");
      main.put("transforms.drop.type", DropTransform.class.getName());
      main.put("transforms.drop." + DropTransform.HEADER_CONFIG, DROP_HEADER);
      s.deploy(main, secretConfig(s, s.otherConfig(1)));
      s.startLoad(
          new LoadWriter.Spec(Scenario.MAIN_KEY, Scenario.OTHER_KEY, 1000, 100, 50, 5, 400, 32));

      // Rows that can never be published, and rows dropped until their attempts are spent.
      writeSecretRows(s);
      Scenario.awaitTrue(
          "every sentinel row settled",
          Scenario.DRAIN,
          () ->
              s.db.scalar(
                      "SELECT count(*) FROM outbox WHERE message_id LIKE 's-%'"
                          + " AND status IN ('PENDING', 'AMBIGUOUS', 'IN_FLIGHT')")
                  == 0);

      // Claims refused (SQLState 40001): each task retries on its own and stays RUNNING.
      retriablePhase(s, "claim-retriable", "Database unavailable while claiming", 2);
      // Outcome writes refused (40001): retried until they apply.
      retriablePhase(s, "publish-retriable", "outcomes failed (reason=DB_UNAVAILABLE", 1);

      // The database goes away: the driver's messages now name it (a sentinel).
      long mark = logs.mark();
      s.db.goAway();
      try {
        Scenario.awaitTrue(
            "each task meets the vanished database",
            Scenario.DRAIN,
            () -> logs.tasksLogging(s.mainConnector, mark, "DB_UNAVAILABLE") == 2);
      } finally {
        s.db.comeBack();
      }

      // Task failures: claim, outcome and dead-letter outcome refused for good (SQLState P0001).
      fatalPhase(s, "claim-fatal", false);
      fatalPhase(s, "publish-fatal", false);
      fatalPhase(s, "failed-fatal", true);

      Figures f = Verdict.check(s, parked, Set.of());
      assertTrue(f.failed() >= 7, f::toString);

      failedStatuses.add(s.kit.rawAllStatuses());
      for (String status : failedStatuses) {
        sentinels.assertAbsent("REST status", status);
      }
      assertTrue(
          failedStatuses.stream().filter(st -> st.contains("SQLState P0001")).count() >= 3,
          () -> "the failed tasks' traces were seen: " + failedStatuses);
      assertTrue(
          ConnectMBeans.taskMetric(s.mainConnector, 0, "claimed-total").isPresent()
              && ConnectMBeans.taskMetric(s.mainConnector, 1, "database-errors-total").isPresent(),
          "the relay's metrics are registered, so the scan covers them");
      assertEquals(List.of(), sentinels.inMBeans(""), "MBeans leak a sentinel");
      assertTrue(ConnectMBeans.count() > 100, "MBeans scanned: " + ConnectMBeans.count());
      // The capture saw the failure paths: Connect's own ERROR events with the tasks' exceptions.
      assertTrue(logs.scannedCount() - eventsBefore > 500, "log events captured");
      assertTrue(
          logs.errors(errorsMark).stream()
                  .map(LogCapture.Event::fullText)
                  .filter(e -> e.contains(s.mainConnector) && e.contains("SQLState P0001"))
                  .count()
              >= 3,
          "the failed tasks' ERROR events, exceptions included, were captured");
      assertEquals(
          List.of(),
          sentinels.inLogs(LogCapture.TEST_REST_CLIENT, LogCapture.EMBEDDED_POSTGRES),
          "log events leak a sentinel");
    } finally {
      sentinels.close();
    }
  }

  private Map<String, String> secretConfig(Scenario s, Map<String, String> config) {
    // A key password the driver does not use without SSL: a password there would override
    // connection.password, which validation refuses.
    String url = config.get("connection.url"); // the main connector's names its application
    config.put(
        "connection.url", url + (url.contains("?") ? "&" : "?") + "sslpassword=" + urlPassword);
    config.put("connection.password", password);
    config.put("payload.format", "json");
    config.put("payload.max.bytes", "2048");
    config.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
    config.put("value.converter.schemas.enable", "false");
    return config;
  }

  /** Good rows carrying sentinels, and one of each kind of row that cannot be published. */
  private void writeSecretRows(Scenario s) {
    String secret = "{\"secret\":\"" + payload + "\"}";
    String secretHeaders = "{\"" + headerName + "\":\"" + headerValue + "\"}";
    for (int i = 0; i < 5; i++) {
      insert(s, "s-good-" + i, Scenario.MAIN_KEY, secret, secretHeaders, null);
    }
    bad(
        s,
        "s-bad-json",
        "not json " + payload,
        null,
        null,
        UnpublishableReasons.PAYLOAD_INVALID_JSON);
    bad(
        s,
        "s-too-large",
        "{\"x\":\"" + payload + "y".repeat(3000) + "\"}",
        null,
        null,
        UnpublishableReasons.PAYLOAD_TOO_LARGE);
    bad(
        s,
        "s-headers",
        secret,
        "{\"h\": {\"" + headerName + "\": \"" + headerValue + "\"}}",
        null,
        UnpublishableReasons.HEADERS_MALFORMED);
    bad(
        s,
        "s-reserved",
        secret,
        "{\"outbox.message_id\": \"" + headerValue + "\"}",
        null,
        UnpublishableReasons.HEADER_NAME_RESERVED);
    bad(s, "s-topic", secret, null, "bad topic " + payload, UnpublishableReasons.TOPIC_UNROUTABLE);
    insert(
        s,
        "s-dropped",
        Scenario.MAIN_KEY,
        secret,
        "{\"" + DROP_HEADER + "\": \"" + headerValue + "\"}",
        null);
    parked.put("s-dropped", "EXHAUSTED DELIVERY_UNCONFIRMED");
    // The other connector has no dead-letter topic: parked FAILED at once.
    insert(s, "s-other-bad-json", Scenario.OTHER_KEY, "not json " + payload, secretHeaders, null);
    parked.put("s-other-bad-json", "FAILED " + UnpublishableReasons.PAYLOAD_INVALID_JSON);
  }

  private void bad(
      Scenario s, String id, String body, String headers, String topic, String reason) {
    insert(s, id, Scenario.MAIN_KEY, body, headers, topic);
    parked.put(id, "FAILED " + reason);
  }

  private void insert(
      Scenario s, String id, String key, String body, String headers, String topic) {
    s.wroteExtraRow(key, id);
    s.db.update(
        "INSERT INTO outbox (message_id, instance_key, aggregate_type, aggregate_id, event_type,"
            + " topic, payload, headers) VALUES (?, ?, 'order', ?, 'Secret', ?, ?, CAST(? AS jsonb))",
        id,
        key,
        "secret-agg-" + id.hashCode() % 7,
        topic,
        body.getBytes(StandardCharsets.UTF_8),
        headers);
  }

  /** Rows written while a fault mode is set, each with the sentinels in payload and headers. */
  private void writePhaseRows(Scenario s, String mode, int rows) {
    for (int i = 0; i < rows; i++) {
      insert(
          s,
          "s-" + mode + "-" + phaseRows++,
          Scenario.MAIN_KEY,
          "{\"secret\":\"" + payload + "\"}",
          "{\"" + headerName + "\":\"" + headerValue + "\"}",
          null);
    }
  }

  private void retriablePhase(Scenario s, String mode, String logged, int tasks) {
    long mark = LogCapture.get().mark();
    setMode(s, mode);
    try {
      writePhaseRows(s, mode, 10);
      Scenario.awaitTrue(
          mode + " met by " + tasks + " task(s)",
          Scenario.DRAIN,
          () -> LogCapture.get().tasksLogging(s.mainConnector, mark, logged) >= tasks);
      assertTrue(s.kit.allRunning(s.mainConnector), () -> s.kit.rawStatus(s.mainConnector));
    } finally {
      setMode(s, null);
    }
  }

  /**
   * Sets a mode that fails a task for good, waits for a task to fail, keeps its REST status, then
   * clears the mode and restarts the failed tasks through REST.
   */
  private void fatalPhase(Scenario s, String mode, boolean deadLetter) throws InterruptedException {
    setMode(s, mode);
    try {
      if (deadLetter) {
        bad(
            s,
            "s-" + mode,
            "not json " + payload,
            null,
            null,
            UnpublishableReasons.PAYLOAD_INVALID_JSON);
      } else {
        writePhaseRows(s, mode, 10);
      }
      Scenario.awaitTrue(
          mode + ": a task fails",
          Scenario.DRAIN,
          () ->
              s.kit.status(s.mainConnector).tasks().stream()
                  .anyMatch(t -> "FAILED".equals(t.state())));
      failedStatuses.add(s.kit.rawStatus(s.mainConnector));
      failedStatuses.add(s.kit.rawAllStatuses());
    } finally {
      setMode(s, null);
    }
    // Restart what failed, through REST, until every task runs (a task may report FAILED late).
    Scenario.awaitTrue(
        mode + ": every task running again after restarts",
        Scenario.DRAIN,
        Duration.ofSeconds(1),
        () -> {
          if (s.kit.status(s.mainConnector).tasks().stream()
              .anyMatch(t -> "FAILED".equals(t.state()))) {
            s.kit.restartFailedTasks(s.mainConnector);
          }
          return s.kit.allRunning(s.mainConnector);
        });
  }

  private void setMode(Scenario s, String mode) {
    s.db.update("DELETE FROM relay_fault");
    if (mode != null) {
      s.db.update("INSERT INTO relay_fault (mode) VALUES (?)", mode);
    }
  }

  /**
   * A BEFORE UPDATE trigger on the main key's rows that, while {@code relay_fault} holds a mode,
   * raises an exception whose message, detail and hint carry the driver sentinel and the row's
   * payload and headers: on claims ({@code claim-*}), on marking PUBLISHED ({@code publish-*}) or
   * FAILED ({@code failed-*}); with SQLState 40001 (retriable) or P0001 (not).
   */
  private void installFaultTrigger(OutboxDb db) {
    db.update("CREATE TABLE relay_fault (mode TEXT NOT NULL)");
    String raise =
        " '%s refused row %% payload %%', OLD.message_id, encode(OLD.payload, 'escape')"
                .formatted(driver)
            + " USING DETAIL = '%s detail ' || coalesce(OLD.headers::text, ''), HINT = '%s hint'"
                .formatted(driver, driver);
    db.update(
        "CREATE FUNCTION relay_fault_row() RETURNS trigger LANGUAGE plpgsql AS $$"
            + " DECLARE m TEXT; BEGIN"
            + " IF OLD.instance_key IS DISTINCT FROM '"
            + Scenario.MAIN_KEY
            + "' THEN RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END; END IF;"
            + " SELECT mode INTO m FROM relay_fault LIMIT 1;"
            + " IF m IS NULL THEN RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;"
            + " END IF;"
            // Publishing deletes the row (moving it to the published log, schema version 9).
            + " IF (TG_OP = 'DELETE' AND m LIKE 'publish-%' AND OLD.status = 'IN_FLIGHT')"
            + " OR (TG_OP = 'UPDATE' AND ((m LIKE 'claim-%' AND NEW.status = 'IN_FLIGHT'"
            + " AND NEW.lease_token <> OLD.lease_token)"
            + " OR (m LIKE 'failed-%' AND NEW.status = 'FAILED'))) THEN"
            + " IF m LIKE '%-retriable' THEN RAISE EXCEPTION"
            + raise
            + ", ERRCODE = 'serialization_failure';"
            + " ELSE RAISE EXCEPTION"
            + raise
            + "; END IF; END IF; RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END; END $$");
    db.update(
        "CREATE TRIGGER relay_fault BEFORE UPDATE OR DELETE ON outbox FOR EACH ROW"
            + " EXECUTE FUNCTION relay_fault_row()");
  }
}
