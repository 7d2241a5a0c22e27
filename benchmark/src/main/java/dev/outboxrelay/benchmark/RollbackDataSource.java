package dev.outboxrelay.benchmark;

import dev.outboxrelay.store.postgres.AbstractDataSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * Hands out one connection in a transaction whose {@code close()} and {@code commit()} roll back
 * instead, and which stays in a transaction: the store's real claim statement (which commits its
 * own transaction) then runs again and again against the very same pending rows.
 */
final class RollbackDataSource extends AbstractDataSource {
  private final Connection connection;

  RollbackDataSource(Connection connection) throws SQLException {
    this.connection = connection;
    connection.setAutoCommit(false);
  }

  @Override
  public Connection getConnection() {
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "close", "commit" -> {
                  connection.rollback();
                  return null;
                }
                case "setAutoCommit" -> {
                  return null;
                }
                default -> {}
              }
              try {
                return method.invoke(connection, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  @Override
  public Connection getConnection(String username, String password) {
    return getConnection();
  }
}
