package dev.outboxrelay.store.postgres;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.callback.Callback;
import org.flywaydb.core.api.callback.Context;
import org.flywaydb.core.api.callback.Event;

/**
 * Sets PostgreSQL's {@code lock_timeout} for each migration, in the migration's own transaction
 * (Flyway runs {@code beforeEachMigrate} inside it), so the setting ends with it: nothing is left
 * on the connection, not even behind a pooler. Every shipped migration is transactional.
 */
final class LockTimeoutCallback implements Callback {
  private final Duration lockTimeout;

  LockTimeoutCallback(Duration lockTimeout) {
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
        context.getConnection().prepareStatement("SELECT set_config('lock_timeout', ?, true)")) {
      set.setString(1, lockTimeout.toMillis() + "ms");
      set.execute();
    } catch (SQLException e) {
      throw new FlywayException("could not set the migration's lock_timeout", e);
    }
  }

  @Override
  public String getCallbackName() {
    return "outbox-relay lock timeout";
  }
}
