package dev.outboxrelay.store.postgres;

import dev.outboxrelay.store.OutboxStoreException;
import dev.outboxrelay.store.OutboxStoreException.Kind;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;

/** Classifies driver failures by SQLState, never by message text. */
public final class SqlStates {
  /** lock_not_available: a lock_timeout (or NOWAIT) expired; retriable. */
  public static final String LOCK_NOT_AVAILABLE = "55P03";

  /** query_canceled: statement_timeout, or a cancel request; the statement changed nothing. */
  public static final String QUERY_CANCELED = "57014";

  /**
   * object_not_in_prerequisite_state: retriable when the server is in recovery (a standby that was
   * connected to during a failover); permanent when the outbox table lacks a replica identity that
   * a publication needs, which {@link ReplicaIdentity} tells apart.
   */
  public static final String OBJECT_NOT_IN_PREREQUISITE_STATE = "55000";

  /**
   * protocol_violation: what a connection pooler (PgBouncer) answers a login it refuses itself (a
   * wrong password in its own auth file or query, an unknown database, max_client_conn reached) and
   * some of its own timeouts (query_wait_timeout): retried as the others of class 08, under a
   * reason of its own, so that a password a pooler refuses is not read as an outage.
   */
  public static final String PROTOCOL_VIOLATION = "08P01";

  private SqlStates() {}

  /** A sanitized exception for {@code operation}; the driver's message and cause are dropped. */
  public static OutboxStoreException classify(SQLException e, String operation) {
    String state = findState(e);
    Kind kind = kindOf(state, e);
    return new OutboxStoreException(kind, reasonCode(kind, state), state, operation);
  }

  /**
   * Without a SQLState: the driver's or the pool's transient and recoverable failures, and a wait
   * for a pooled connection that an interrupt ended (HikariCP's plain SQLException, its cause the
   * InterruptedException; the pool restores the flag): a stopping task's, not the database's.
   */
  static Kind kindOf(String state, SQLException e) {
    if (state == null) {
      return e instanceof SQLTransientException
              || e instanceof SQLRecoverableException
              || e.getCause() instanceof InterruptedException
          ? Kind.TRANSIENT
          : Kind.INTERNAL;
    }
    if (state.equals("08004")) {
      // Connection rejected: pgjdbc's "no password was provided" (or an SSL mode the server
      // refuses). Retrying cannot fix it; the task fails naming the credentials.
      return Kind.AUTHENTICATION;
    }
    if (state.startsWith("08") // connection exception
        || state.startsWith("53") // insufficient resources
        || state.startsWith("57P") // admin shutdown, crash shutdown, cannot connect now
        || state.equals(QUERY_CANCELED) // statement timeout / cancel
        || state.equals("40001") // serialization failure
        || state.equals("40P01") // deadlock detected
        || state.equals(LOCK_NOT_AVAILABLE)
        || state.equals(OBJECT_NOT_IN_PREREQUISITE_STATE)
        || state.equals("25006") // read-only transaction (failover to a replica)
        // The session was ended by idle_in_transaction_session_timeout or transaction_timeout
        // (a role's or a pooler's): the transaction rolled back, a new connection retries it.
        || state.equals("25P03")
        || state.equals("25P04")
        || state.equals("XX000") && e instanceof SQLTransientException) {
      return Kind.TRANSIENT;
    }
    if (state.startsWith("28")) {
      return Kind.AUTHENTICATION;
    }
    if (state.equals("42501")) {
      return Kind.PERMISSION;
    }
    if (state.equals("42P01") // undefined table
        || state.equals("42703") // undefined column
        || state.equals("42883") // undefined function
        || state.equals("3F000") // invalid schema name
        || state.equals("3D000")) { // invalid catalog (database) name
      return Kind.SCHEMA;
    }
    if (state.startsWith("22") || state.startsWith("23")) {
      return Kind.INVALID_DATA;
    }
    return Kind.INTERNAL;
  }

  private static String reasonCode(Kind kind, String state) {
    return switch (kind) {
      case TRANSIENT ->
          switch (state == null ? "" : state) { // a pool's timeout has none
            case LOCK_NOT_AVAILABLE -> "DB_LOCK_NOT_AVAILABLE";
            case PROTOCOL_VIOLATION -> "DB_POOLER_REFUSED";
            // The database answered, after statement.timeout.ms (or an operator's cancel): it is
            // no outage, and a statement cancelled at every run wants looking into.
            case QUERY_CANCELED -> "DB_QUERY_CANCELED";
            default -> "DB_UNAVAILABLE";
          };
      case AUTHENTICATION -> "DB_AUTHENTICATION_FAILED";
      case PERMISSION -> "DB_PERMISSION_DENIED";
      case SCHEMA -> "3D000".equals(state) ? "DB_DATABASE_MISSING" : "DB_SCHEMA_MISSING";
      case INVALID_DATA -> "DB_INVALID_DATA";
      case INTERNAL -> "DB_ERROR";
    };
  }

  /** The first SQLState in the exception chain (Hikari wraps the driver's exception). */
  static String findState(SQLException e) {
    Throwable t = e;
    for (int depth = 0; t != null && depth < 8; depth++, t = t.getCause()) {
      if (t instanceof SQLException sql && sql.getSQLState() != null) {
        return sql.getSQLState();
      }
    }
    return null;
  }
}
