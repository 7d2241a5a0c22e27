package dev.outboxrelay.testing;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A server on 127.0.0.1 that answers every login as PgBouncer answers one it refuses itself (a
 * password its auth file does not take): an ErrorResponse of SQLState 08P01, then the connection
 * closed; or, {@link #answering}, with another SQLState (a server starting up: 57P03); or, {@link
 * #loggingIn}, lets the login through and refuses every statement, as PgBouncer does once the
 * server behind it refuses it. It declines SSL and reads the startup message.
 */
public final class RefusingPooler implements AutoCloseable {
  private static final int SSL_REQUEST = 80877103;
  private static final int GSS_REQUEST = 80877104;

  private final ServerSocket listener;
  private final String sqlState;
  private final String message;
  private final boolean loggingIn;

  private RefusingPooler(String sqlState, String message, boolean loggingIn) throws IOException {
    this.sqlState = sqlState;
    this.message = message;
    this.loggingIn = loggingIn;
    listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "refusing-pooler");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  public static RefusingPooler start() {
    return answering("08P01", "password authentication failed");
  }

  /** A server that refuses every login with this SQLState and message. */
  public static RefusingPooler answering(String sqlState, String message) {
    return open(sqlState, message, false);
  }

  /**
   * A pooler that lets every login through and answers every statement with an ErrorResponse of
   * this SQLState and message (PgBouncer's "server login has been failing, cached error: ...", the
   * server's pg_hba line quoted).
   */
  public static RefusingPooler loggingIn(String sqlState, String message) {
    return open(sqlState, message, true);
  }

  private static RefusingPooler open(String sqlState, String message, boolean loggingIn) {
    try {
      return new RefusingPooler(sqlState, message, loggingIn);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A JDBC URL of {@code database} through this pooler. */
  public String jdbcUrl(String database) {
    String host = listener.getInetAddress().getHostAddress();
    return "jdbc:postgresql://"
        + (host.contains(":") ? "[" + host + "]" : host)
        + ":"
        + listener.getLocalPort()
        + "/"
        + database;
  }

  private void accept() {
    while (!listener.isClosed()) {
      try {
        Socket client = listener.accept();
        if (loggingIn) {
          Thread session = new Thread(() -> serve(client), "refusing-pooler-session");
          session.setDaemon(true);
          session.start(); // a pool holds several sessions open at once
        } else {
          serve(client);
        }
      } catch (IOException | RuntimeException e) {
        // closed: no more clients
      }
    }
  }

  private void serve(Socket socket) {
    try (Socket client = socket) {
      client.setSoTimeout(loggingIn ? 60_000 : 5_000); // a client that sends nothing goes
      readStartup(client);
      if (loggingIn) {
        refuseStatements(client);
      } else {
        DataOutputStream out = new DataOutputStream(client.getOutputStream());
        send(out, 'E', error("FATAL"));
        out.flush();
      }
    } catch (IOException | RuntimeException e) {
      // a client that went away or spoke otherwise: the next one
    }
  }

  private void readStartup(Socket client) throws IOException {
    DataInputStream in = new DataInputStream(client.getInputStream());
    DataOutputStream out = new DataOutputStream(client.getOutputStream());
    while (true) {
      int length = in.readInt();
      int code = in.readInt();
      in.skipNBytes(length - 8);
      if (code == SSL_REQUEST || code == GSS_REQUEST) {
        out.writeByte('N'); // no encryption: the startup message follows
        out.flush();
        continue;
      }
      break; // the startup message
    }
  }

  /** Logs the client in, then answers each Sync or simple query with the error, until it ends. */
  private void refuseStatements(Socket client) throws IOException {
    DataInputStream in = new DataInputStream(client.getInputStream());
    DataOutputStream out = new DataOutputStream(client.getOutputStream());
    send(out, 'R', new byte[4]); // AuthenticationOk
    String[][] parameters = {
      {"server_version", "16.4"},
      {"client_encoding", "UTF8"},
      {"DateStyle", "ISO, MDY"},
      {"integer_datetimes", "on"},
      {"standard_conforming_strings", "on"},
      {"TimeZone", "UTC"}
    };
    for (String[] p : parameters) {
      send(out, 'S', (p[0] + "\0" + p[1] + "\0").getBytes(StandardCharsets.US_ASCII));
    }
    send(out, 'K', new byte[] {0, 0, 0, 1, 0, 0, 0, 2}); // BackendKeyData
    send(out, 'Z', new byte[] {'I'}); // ReadyForQuery
    out.flush();
    while (true) {
      int type = in.read();
      if (type < 0 || type == 'X') {
        return; // gone, or Terminate
      }
      in.skipNBytes(in.readInt() - 4);
      if (type == 'S' || type == 'Q') {
        send(out, 'E', error("ERROR"));
        send(out, 'Z', new byte[] {'I'});
        out.flush();
      }
    }
  }

  private byte[] error(String severity) {
    return ("S" + severity + "\0V" + severity + "\0C" + sqlState + "\0M" + message + "\0\0")
        .getBytes(StandardCharsets.UTF_8);
  }

  private static void send(DataOutputStream out, char type, byte[] body) throws IOException {
    out.writeByte(type);
    out.writeInt(4 + body.length);
    out.write(body);
  }

  @Override
  public void close() {
    try {
      listener.close();
    } catch (IOException e) {
      // closing
    }
  }
}
