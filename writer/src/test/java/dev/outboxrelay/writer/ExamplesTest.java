package dev.outboxrelay.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.outboxrelay.writer.examples.JdbcOrderService;
import dev.outboxrelay.writer.examples.SpringOrderService;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The examples of docs/writing-rows.md, compiled by the build, run against a real PostgreSQL, and
 * shown in the doc exactly as they are here: the Spring one through Spring's own
 * {@code @Transactional} proxy and {@link DataSourceTransactionManager}.
 */
class ExamplesTest {
  private static final Path EXAMPLES = Path.of("src/test/java/dev/outboxrelay/writer/examples");
  private static final Path WRITING_ROWS = Path.of("../docs/writing-rows.md");
  private static final String TRACEPARENT = OutboxMessageTest.TRACEPARENT;

  private TestDatabase db;
  private AnnotationConfigApplicationContext spring;

  @BeforeEach
  void database() {
    db = TestDatabase.withOutbox("examples");
    db.exec("CREATE TABLE orders (id TEXT PRIMARY KEY, total_cents BIGINT NOT NULL)");
  }

  @AfterEach
  void closeSpring() {
    if (spring != null) {
      spring.close();
    }
  }

  /** What a Spring Boot application has: a DataSource, JdbcTemplate and transaction manager. */
  @Configuration
  @EnableTransactionManagement
  static class Application {
    @Bean
    JdbcTemplate jdbcTemplate(DataSource dataSource) {
      return new JdbcTemplate(dataSource);
    }

    @Bean
    PlatformTransactionManager transactionManager(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }

    @Bean
    SpringOrderService orderService(DataSource dataSource, JdbcTemplate jdbc) {
      return new SpringOrderService(dataSource, jdbc);
    }
  }

  private SpringOrderService springService() {
    spring = new AnnotationConfigApplicationContext();
    spring.registerBean(DataSource.class, db::dataSource);
    spring.register(Application.class);
    spring.refresh();
    return spring.getBean(SpringOrderService.class);
  }

  @Test
  void springCommitsTheOrderAndItsOutboxRowTogether() throws SQLException {
    springService().placeOrder("o-1", 4200, TRACEPARENT);

    assertEquals(List.of(Map.of("id", "o-1")), db.rows("SELECT id FROM orders"));
    assertEquals(
        List.of(
            Map.of(
                "message_id", "o-1:placed",
                "instance_key", "orders-eu",
                "payload", "{\"orderId\":\"o-1\",\"totalCents\":4200}",
                "traceparent", TRACEPARENT)),
        db.rows(
            "SELECT message_id, instance_key, convert_from(payload, 'UTF8') AS payload,"
                + " headers ->> 'traceparent' AS traceparent FROM outbox"));
  }

  @Test
  void aRolledBackBusinessTransactionLeavesNoOutboxRow() {
    SpringOrderService orders = springService();
    TransactionTemplate business =
        new TransactionTemplate(spring.getBean(PlatformTransactionManager.class));

    // placeOrder joins the caller's transaction, which then rolls back.
    business.executeWithoutResult(
        status -> {
          try {
            orders.placeOrder("o-1", 4200, TRACEPARENT);
          } catch (SQLException e) {
            throw new IllegalStateException(e);
          }
          assertEquals(1L, outboxRowsInThisTransaction(), "written in this transaction");
          status.setRollbackOnly();
        });
    // Or throws after placeOrder returned.
    assertThrows(
        IllegalStateException.class,
        () ->
            business.executeWithoutResult(
                status -> {
                  try {
                    orders.placeOrder("o-2", 4200, TRACEPARENT);
                  } catch (SQLException e) {
                    throw new IllegalStateException(e);
                  }
                  throw new IllegalStateException("payment declined");
                }));

    assertEquals(0, db.count("SELECT count(*) FROM orders"));
    assertEquals(0, db.count("SELECT count(*) FROM outbox"));
  }

  /** JdbcTemplate takes the connection of the transaction in progress, as placeOrder did. */
  private Long outboxRowsInThisTransaction() {
    return spring
        .getBean(JdbcTemplate.class)
        .queryForObject("SELECT count(*) FROM outbox", Long.class);
  }

  @Test
  void aFailedOutboxInsertRollsTheOrderBack() {
    db.exec("ALTER TABLE outbox ADD CONSTRAINT no_poison CHECK (aggregate_id <> 'o-poison')");
    SpringOrderService orders = springService();

    SQLException e =
        assertThrows(SQLException.class, () -> orders.placeOrder("o-poison", 1, TRACEPARENT));
    assertEquals("23514", e.getSQLState(), e::toString); // check_violation

    assertEquals(0, db.count("SELECT count(*) FROM orders"));
    assertEquals(0, db.count("SELECT count(*) FROM outbox"));
  }

  /**
   * A business change that fails after placeOrder enqueued its message, in the same transaction:
   * the message goes with it. (A change that fails before the enqueue, such as placeOrder's own
   * insert of an existing order, proves nothing: no enqueue ran.)
   */
  @Test
  void aFailedBusinessChangeWritesNoOutboxRow() throws SQLException {
    SpringOrderService orders = springService();
    orders.placeOrder("o-1", 4200, TRACEPARENT);
    TransactionTemplate business =
        new TransactionTemplate(spring.getBean(PlatformTransactionManager.class));
    JdbcTemplate jdbc = spring.getBean(JdbcTemplate.class);

    assertThrows(
        DataIntegrityViolationException.class,
        () ->
            business.executeWithoutResult(
                status -> {
                  try {
                    orders.placeOrder("o-2", 100, TRACEPARENT);
                  } catch (SQLException e) {
                    throw new IllegalStateException(e);
                  }
                  assertEquals(2L, outboxRowsInThisTransaction(), "o-2's written in it");
                  // The next change of the transaction fails: o-1 exists.
                  jdbc.update("INSERT INTO orders (id, total_cents) VALUES ('o-1', 1)");
                }));

    assertEquals(List.of(Map.of("id", "o-1")), db.rows("SELECT id FROM orders"));
    assertEquals(
        List.of(Map.of("message_id", "o-1:placed")), db.rows("SELECT message_id FROM outbox"));
  }

  @Test
  void plainJdbcCommitsBothOrRollsBothBack() throws SQLException {
    db.exec("ALTER TABLE outbox ADD CONSTRAINT no_poison CHECK (aggregate_id <> 'o-poison')");
    JdbcOrderService orders = new JdbcOrderService(db.dataSource());

    assertEquals(EnqueueResult.ENQUEUED, orders.placeOrder("o-1", 4200, TRACEPARENT));
    assertEquals(EnqueueResult.ENQUEUED, orders.placeOrder("o-2", 100, null));
    assertThrows(SQLException.class, () -> orders.placeOrder("o-poison", 1, TRACEPARENT));

    assertEquals(
        List.of(Map.of("id", "o-1"), Map.of("id", "o-2")),
        db.rows("SELECT id FROM orders ORDER BY id"));
    assertEquals(
        List.of(
            row("aggregate_id", "o-1", "headers", "{\"traceparent\": \"" + TRACEPARENT + "\"}"),
            row("aggregate_id", "o-2", "headers", null)),
        db.rows("SELECT aggregate_id, headers::text AS headers FROM outbox ORDER BY seq"));
  }

  private static Map<String, String> row(String... columnsAndValues) {
    Map<String, String> row = new TreeMap<>();
    for (int i = 0; i < columnsAndValues.length; i += 2) {
      row.put(columnsAndValues[i], columnsAndValues[i + 1]);
    }
    return row;
  }

  @Test
  void theDocShowsEachExampleAsCompiled() throws IOException {
    String doc = Files.readString(WRITING_ROWS);
    for (String example : List.of("JdbcOrderService.java", "SpringOrderService.java")) {
      String source = Files.readString(EXAMPLES.resolve(example));
      String shown = source.substring(source.indexOf("\nimport ") + 1);
      assertTrue(
          doc.contains("```java\n" + shown + "```\n"),
          () ->
              "docs/writing-rows.md must show "
                  + example
                  + " after its package line, exactly:\n"
                  + shown);
    }
  }
}
