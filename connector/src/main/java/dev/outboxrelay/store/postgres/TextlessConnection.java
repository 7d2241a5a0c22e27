package dev.outboxrelay.store.postgres;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.util.Set;

/**
 * A connection, and the statements and metadata it creates, whose failures carry the SQLState alone
 * (and their linked failures': HikariCP reads the chain's states to evict): none of the driver's
 * text (see {@link DriverDataSource#withoutText}). HikariCP logs failures of the connections it
 * holds on its own, with their message and cause chain: at WARN, a connection it discards as broken
 * (class 08, 57P01–57P03: a failover, or a trigger of the user's that raises such a state with row
 * values in its message), and the setup of each new connection (its isolation read and set, the
 * session's settings), which a pooler whose server refuses it fails with the server's pg_hba line:
 * the client's address, user and database. The relay reads the SQLState and the kind only, both
 * kept. Result sets are left as they are: the relay reads them whole (no cursor), so their failures
 * are the driver's conversions, which HikariCP does not log.
 */
final class TextlessConnection implements InvocationHandler {
  private static final Set<Class<?>> WRAPPED =
      Set.of(
          Statement.class,
          PreparedStatement.class,
          CallableStatement.class,
          DatabaseMetaData.class);

  private final Object delegate;

  private TextlessConnection(Object delegate) {
    this.delegate = delegate;
  }

  static Connection of(Connection connection) {
    return (Connection) proxy(connection, Connection.class);
  }

  private static Object proxy(Object delegate, Class<?> type) {
    return Proxy.newProxyInstance(
        TextlessConnection.class.getClassLoader(),
        new Class<?>[] {type},
        new TextlessConnection(delegate));
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    if (method.getDeclaringClass() == Object.class) {
      switch (method.getName()) {
        case "equals":
          return proxy == args[0];
        case "hashCode":
          return System.identityHashCode(proxy);
        default:
          return method.invoke(delegate, args); // toString: the driver's names no server
      }
    }
    Object result;
    try {
      result = method.invoke(delegate, args);
    } catch (InvocationTargetException e) {
      Throwable failure = e.getCause();
      if (failure instanceof SQLException sql
          && !(sql instanceof SQLFeatureNotSupportedException)) {
        throw DriverDataSource.withoutText(sql, method.getName() + " failed");
      }
      throw failure; // the driver's own refusal of a feature quotes nothing of the server's
    }
    return result != null && WRAPPED.contains(method.getReturnType())
        ? proxy(result, method.getReturnType())
        : result;
  }
}
