package dev.outboxrelay.cli;

import dev.outboxrelay.cli.operator.OperatorStore;
import dev.outboxrelay.store.postgres.AbstractDataSource;
import dev.outboxrelay.store.postgres.PostgresOutboxStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import javax.sql.DataSource;

/**
 * The stores of a command that reads several figures which must agree (status: counts, lag, expired
 * leases, oldest parked rows), all on one connection in one read-only REPEATABLE READ transaction
 * ({@link Database#inOneSnapshot}): each statement sees the table as the first saw it.
 */
public record Snapshot(PostgresOutboxStore relayStore, OperatorStore operatorStore) {

  /**
   * {@code connection} as a data source for the stores, which close what they get: closing it
   * leaves the one connection, and its transaction, open for their next statement.
   */
  static DataSource lending(Connection connection) {
    Connection lent =
        (Connection)
            Proxy.newProxyInstance(
                Connection.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("close")) {
                    return null;
                  }
                  try {
                    return method.invoke(connection, args);
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
    return new AbstractDataSource() {
      @Override
      public Connection getConnection() {
        return lent;
      }
    };
  }
}
