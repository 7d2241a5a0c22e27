package dev.outboxrelay.store.postgres;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.callback.Callback;
import org.flywaydb.core.api.callback.Context;
import org.flywaydb.core.api.callback.Event;

/**
 * Sets PostgreSQL's timeouts for each migration, in the migration's own transaction (Flyway runs
 * {@code beforeEachMigrate} inside it), so the settings end with it: nothing is left on the
 * connection, not even behind a pooler. Every shipped migration is transactional.
 *
 * <ul>
 *   <li>{@code lock_timeout}: the configured wait for a lock (zero: the server's setting).
 *   <li>{@code statement_timeout} off: an index build on a large table may take long, and a timeout
 *       set for the role or in the URL's options (as for transaction-mode poolers) would cancel it,
 *       again at every retry, and a cancelled concurrent pre-build leaves an invalid index.
 *   <li>{@code transaction_timeout} off (PostgreSQL 17): a role's or database's would end the
 *       migration's transaction however its statements fare.
 * </ul>
 */
final class MigrationTimeoutsCallback implements Callback {
  private final Duration lockTimeout;

  MigrationTimeoutsCallback(Duration lockTimeout) {
    this.lockTimeout = lockTimeout;
  }

  @Override
  public boolean supports(Event event, Context context) {
    return event == Event.BEFORE_EACH_MIGRATE;
  }

  @Override
  public boolean canHandleInTransaction(Event event, Context context) {
    return true;
  }

  @Override
  public void handle(Event event, Context context) {
    try (PreparedStatement set =
        context
            .getConnection()
            .prepareStatement(
                "SELECT set_config('statement_timeout', '0', true),"
                    + " CASE WHEN ? THEN set_config('lock_timeout', ?, true) END,"
                    // PostgreSQL 17's transaction_timeout ends the whole migration's transaction
                    + " CASE WHEN current_setting('server_version_num')::int >= 170000"
                    + " THEN set_config('transaction_timeout', '0', true) END")) {
      set.setBoolean(1, !lockTimeout.isZero());
      set.setString(2, lockTimeout.toMillis() + "ms");
      set.execute();
    } catch (SQLException e) {
      throw new FlywayException("could not set the migration's timeouts", e);
    }
  }

  @Override
  public String getCallbackName() {
    return "outbox-relay migration timeouts";
  }
}
