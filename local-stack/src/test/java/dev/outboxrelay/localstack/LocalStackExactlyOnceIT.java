package dev.outboxrelay.localstack;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TransactionListing;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./local-stack.sh up --exactly-once} end to end: the worker runs with exactly-once source
 * support, the connector in exactly-once mode, the demo reads committed records only and still
 * finds its four rows, and the records were written by the task's transactional producer (its
 * transactional id is known to the broker, which no at-least-once worker would give it). {@code
 * status} names the guarantee, and an {@code up} asking for the other one says it runs this one.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LocalStackExactlyOnceIT {
  @TempDir static Path stateDir;

  private static final Map<String, String> ENV = Map.of("LOCAL_STACK_PORTS", "auto");
  private static LocalStackIT.Run firstUp;

  static LocalStackIT.Run localStack(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    List<String> all = new ArrayList<>(List.of(args));
    all.add("--repo-root=" + RepoFiles.root());
    all.add("--state-dir=" + stateDir);
    int exit =
        LocalStack.run(
            all.toArray(String[]::new),
            ENV,
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    return new LocalStackIT.Run(
        exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  @BeforeAll
  static void up() {
    firstUp = localStack("up", "--exactly-once");
  }

  @AfterAll
  static void down() {
    localStack("down");
  }

  @Test
  @Order(1)
  void theDemoReadsItsRowsCommittedFromAnExactlyOnceConnector() {
    String all = firstUp.out() + firstUp.err();
    assertEquals(0, firstUp.exit(), all);
    assertTrue(all.contains("exactly.once.source.support=enabled)"), all);
    assertTrue(
        all.contains(
            "with delivery.guarantee=exactly-once, exactly.once.support=required on top of the"
                + " file's settings"),
        all);
    assertTrue(all.contains("(isolation.level=read_committed)"), all);
    assertTrue(all.contains("Result     ok: 4 owned rows PUBLISHED in Kafka; 3 rows"), all);
    assertTrue(all.contains("  Delivery         exactly-once (worker"), all);
    assertTrue(all.contains("--isolation-level read_committed"), all);
  }

  @Test
  @Order(2)
  void theWorkerAndTheConnectorRunExactlyOnce() {
    Properties worker = PropertiesFiles.read(stateDir.resolve("connect/worker.properties"));
    assertEquals("enabled", worker.getProperty("exactly.once.source.support"));
    StackRecord stack = StackRecord.read(stateDir.resolve("stack.properties")).orElseThrow();
    assertEquals(Delivery.EXACTLY_ONCE, stack.delivery());
    var config = new ConnectRest(stack.connectUrl()).get("/connectors/outbox-relay-local/config");
    assertEquals("exactly-once", config.path("delivery.guarantee").asText());
    assertEquals("required", config.path("exactly.once.support").asText());
  }

  /**
   * Connect gives each task of an exactly-once worker a transactional producer with the id {@code
   * <group.id>-<connector>-<task>}; the broker's transaction coordinator knows it once the task
   * wrote in a transaction.
   */
  @Test
  @Order(3)
  void theTaskWroteThroughItsTransactionalProducer() throws Exception {
    StackRecord stack = StackRecord.read(stateDir.resolve("stack.properties")).orElseThrow();
    Properties p = new Properties();
    p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, stack.bootstrapServers());
    try (Admin admin = Admin.create(p)) {
      Set<String> ids =
          admin.listTransactions().all().get().stream()
              .map(TransactionListing::transactionalId)
              .collect(Collectors.toSet());
      assertTrue(ids.contains("outbox-relay-local-outbox-relay-local-0"), ids.toString());
    }
  }

  @Test
  @Order(4)
  void statusNamesTheGuarantee() {
    await() // as LocalStackIT's: a task restarting meanwhile shows for a moment
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () -> {
              LocalStackIT.Run status = localStack("status");
              assertEquals(0, status.exit(), status.out() + status.err());
              assertTrue(status.out().contains("  Delivery    exactly-once (worker"), status.out());
              assertTrue(
                  status
                      .out()
                      .contains(
                          "outbox-relay-local: RUNNING task 0=RUNNING"
                              + " (delivery.guarantee=exactly-once)"),
                  status.out());
            });
  }

  @Test
  @Order(5)
  void anUpAskingForTheOtherGuaranteeSaysWhichRuns() {
    LocalStackIT.Run again = localStack("up");
    assertEquals(1, again.exit(), again.out() + again.err());
    assertTrue(again.out().startsWith("The local stack is already running"), again.out());
    assertTrue(
        again
            .out()
            .contains(
                "It runs exactly-once, not at-least-once as asked: ./local-stack.sh down, then"
                    + " ./local-stack.sh up, to switch."),
        again.out());
    assertEquals(0, localStack("up", "--exactly-once").exit());
  }
}
