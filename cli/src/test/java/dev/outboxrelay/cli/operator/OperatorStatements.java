package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.postgres.NamedSql;
import dev.outboxrelay.store.postgres.OutboxTable;

/** The operator statements, for the tests of other packages that look at their plans. */
public final class OperatorStatements {
  private OperatorStatements() {}

  /** One batch of a requeue by {@code selector} (ALL or CORRELATION_ID) of the table. */
  public static NamedSql requeueBatch(OutboxTable table, RequeueRequest.Selector selector) {
    return new OperatorSql(table).requeueBatch.get(selector);
  }

  /** The count of a requeue by {@code selector} (its dry run). */
  public static NamedSql countRequeueable(OutboxTable table, RequeueRequest.Selector selector) {
    return new OperatorSql(table).countRequeueable.get(selector);
  }
}
