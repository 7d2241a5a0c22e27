package dev.outboxrelay.cli.operator;

import dev.outboxrelay.store.postgres.NamedSql;
import dev.outboxrelay.store.postgres.OutboxTable;

/** The operator statements, for the tests of other packages that look at their plans. */
public final class OperatorStatements {
  private OperatorStatements() {}

  /** One batch of a requeue or discard by {@code selector} (ALL or CORRELATION_ID) of the table. */
  public static NamedSql changeBatch(
      OutboxTable table, ParkedAction action, ParkedSelection.Selector selector) {
    return new OperatorSql(table).changeBatch.get(action).get(selector);
  }

  /**
   * A park's dry run by message id, on a table whose message fields are named by {@code columns}.
   */
  public static NamedSql parkDryRun(
      OutboxTable table, dev.outboxrelay.store.postgres.ColumnMapping columns) {
    return new OperatorSql(table, columns, false).parkDryRun;
  }

  /** A page of rows with {@code status} (the list command's). */
  public static NamedSql list(OutboxTable table, dev.outboxrelay.store.MessageStatus status) {
    return new OperatorSql(table).list.get(status);
  }

  /** The oldest row of a key with a parked status (the status command's). */
  public static NamedSql oldestWithStatus(OutboxTable table) {
    return new OperatorSql(table).oldestWithStatus;
  }

  /** A requeue or discard by message id. */
  public static NamedSql changeMessageIds(OutboxTable table, ParkedAction action) {
    return new OperatorSql(table).changeMessageIds.get(action);
  }

  /** The count of parked rows by {@code selector} (the dry run of a requeue or discard). */
  public static NamedSql countParked(OutboxTable table, ParkedSelection.Selector selector) {
    return new OperatorSql(table).countParked.get(selector);
  }
}
