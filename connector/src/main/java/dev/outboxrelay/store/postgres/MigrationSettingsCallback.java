package dev.outboxrelay.store.postgres;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.callback.Callback;
import org.flywaydb.core.api.callback.Context;
import org.flywaydb.core.api.callback.Event;

/**
 * Sets PostgreSQL's settings for each migration, in the migration's own transaction (Flyway runs
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
 *   <li>{@code search_path}: the table's schema alone (the one it names, else the session's current
 *       schema, where the migrations create it and the history lives). A table named without a
 *       schema has its indexes named without one too, and a drop or rebuild of one the operator
 *       dropped beforehand (as the notes of versions 6, 7 and 12 to 15 advise) would otherwise find
 *       another schema's index of the same name further along the search path: a same-named outbox
 *       table of another connector's.
 * </ul>
 */
final class MigrationSettingsCallback implements Callback {
  private final Duration lockTimeout;
  private final String schema;

  /**
   * @param schema the schema the table names, or null for the session's current schema
   */
  MigrationSettingsCallback(Duration lockTimeout, String schema) {
    this.lockTimeout = lockTimeout;
    this.schema = schema;
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
                    + " THEN set_config('transaction_timeout', '0', true) END,"
                    // never null here: the migration lock refuses a session without a schema
                    + " set_config('search_path', quote_ident(coalesce(?, current_schema())),"
                    + " true)")) {
      set.setBoolean(1, !lockTimeout.isZero());
      set.setString(2, lockTimeout.toMillis() + "ms");
      set.setString(3, schema);
      set.execute();
    } catch (SQLException e) {
      throw new FlywayException("could not set the migration's settings", e);
    }
  }

  @Override
  public String getCallbackName() {
    return "outbox-relay migration settings";
  }
}
