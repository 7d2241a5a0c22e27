package dev.outboxrelay.connect;

import dev.outboxrelay.config.OutboxSourceConfig;
import dev.outboxrelay.store.OutboxStore;
import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.RelayClock;
import java.sql.Connection;
import java.util.function.Supplier;

/** Opens the store a task works on. Production uses PostgreSQL; tests may substitute. */
interface StoreProvider {
  /** The operation a failed {@link #migrate} names in its {@link OutboxStoreException}. */
  String MIGRATE = "migrate";

  /** A migration Flyway refused for a reason of its own (a failed or changed migration). */
  String SCHEMA_MIGRATION_FAILED = "SCHEMA_MIGRATION_FAILED";

  /**
   * The reason code of a {@link #migrate} that found another session migrating the same table
   * (another task, or the CLI): retriable, nothing was changed.
   */
  String MIGRATION_IN_PROGRESS = "SCHEMA_MIGRATION_IN_PROGRESS";

  /** The operation a failed {@link #checkSchema} names in its {@link OutboxStoreException}. */
  String CHECK_SCHEMA = "check-schema";

  /** ... and the one it names when the role lacks a privilege a task uses. */
  String CHECK_PRIVILEGES = "check-privileges";

  /** The table's schema is older than this build relays: it would fail after sending. */
  String SCHEMA_TOO_OLD = "SCHEMA_TOO_OLD";

  /**
   * A table without a schema history (the user's own tool's, or adopted from Debezium) lacks what
   * the relay reads: the published log, or an index; or it keeps the index of parked rows of schema
   * version 7. The task waits, as for {@link #SCHEMA_TOO_OLD}, but no migration can help: the
   * statements named in the detail must be run by hand.
   */
  String SCHEMA_INCOMPLETE = "SCHEMA_INCOMPLETE";

  /** A {@link #migrate} found the table without an outbox-relay schema history: nothing done. */
  String SCHEMA_NOT_MANAGED = "SCHEMA_NOT_MANAGED";

  /** Opens the store (a pool is created lazily: the database may still be down). */
  OutboxStore open(OutboxSourceConfig config, String poolName);

  /**
   * Applies the schema migrations (only called when {@code schema.migrate.on.start} is set).
   *
   * @throws OutboxStoreException classified, its operation {@link #MIGRATE}
   */
  void migrate(OutboxSourceConfig config);

  /**
   * Checks, before the first claim, that the table's schema is one this build relays (after {@link
   * #migrate}, or in its stead): Connect validates a configuration only when it is created or
   * changed, not when a worker restarts with a new plugin on a table left unmigrated, whose first
   * publish then failed after its records went out (and again after every restart). A table kept by
   * the user's own migration tool (no schema history) must have the published log and the indexes
   * the relay reads ({@link #SCHEMA_INCOMPLETE}). A newer schema is relayed on (a task of the older
   * release during a rolling upgrade, whose migrations keep the previous release working), and
   * said. Then that the role still has the privileges a task uses (validation checked them when the
   * configuration was made). None by default: a store without a schema.
   *
   * @throws OutboxStoreException {@link #SCHEMA_TOO_OLD} (the task waits for the migration), {@link
   *     #SCHEMA_INCOMPLETE} (it waits for the statements the detail names), or classified, its
   *     operation {@link #CHECK_SCHEMA}; a privilege missing, {@link #CHECK_PRIVILEGES}
   */
  default void checkSchema(OutboxSourceConfig config) {}

  /**
   * Connections for LISTEN/NOTIFY wake-ups, outside the pool (held for long); null where the store
   * has no notifications.
   */
  Supplier<Connection> notificationConnections(OutboxSourceConfig config);

  /** The clock leases are judged by: the database's unless a test substitutes one. */
  RelayClock clock();
}
