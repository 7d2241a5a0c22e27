package dev.outboxrelay.writer;

import java.sql.SQLException;

/**
 * {@link PostgresOutboxWriter#enqueue} failed, and the writer could not abort the transaction: a
 * driver it cannot inspect rolled the abort back to a savepoint of its own (pgjdbc's {@code
 * autosave=always} where the writer's class loader cannot reach pgjdbc's classes, as in an
 * application server's driver module, or behind a wrapper that hides the driver). Roll the
 * transaction back: committed, it keeps the business change without its message. Unchecked, so that
 * frameworks roll back for it by default (Spring's {@code @Transactional} commits on a checked
 * exception). The failure of the enqueue is its cause.
 */
public final class TransactionStillOpenException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  TransactionStillOpenException(SQLException cause) {
    super(
        "outbox-relay writer: enqueue failed and the transaction is still open after the writer"
            + " aborted it (the driver rolled the abort back to a savepoint of its own, as pgjdbc's"
            + " autosave=always does where the writer cannot reach pgjdbc's classes): roll it"
            + " back, do not commit",
        cause);
  }
}
