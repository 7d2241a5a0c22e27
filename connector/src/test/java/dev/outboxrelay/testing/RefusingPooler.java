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
 * closed; or, {@link #answering}, with another SQLState (a server starting up: 57P03). It declines
 * SSL, reads the startup message and says nothing else.
 */
public final class RefusingPooler implements AutoCloseable {
  private static final int SSL_REQUEST = 80877103;
  private static final int GSS_REQUEST = 80877104;

  private final ServerSocket listener;
  private final String sqlState;
  private final String message;

  private RefusingPooler(String sqlState, String message) throws IOException {
    this.sqlState = sqlState;
    this.message = message;
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
    try {
      return new RefusingPooler(sqlState, message);
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
      try (Socket client = listener.accept()) {
        client.setSoTimeout(5_000); // a client that sends nothing holds up no other
        refuse(client);
      } catch (IOException | RuntimeException e) {
        // closed, or a client that went away or spoke otherwise: the next one
      }
    }
  }

  private void refuse(Socket client) throws IOException {
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
    byte[] fields =
        ("SFATAL\0VFATAL\0C" + sqlState + "\0M" + message + "\0\0")
            .getBytes(StandardCharsets.US_ASCII);
    out.writeByte('E');
    out.writeInt(4 + fields.length);
    out.write(fields);
    out.flush();
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
