package dev.outboxrelay.store.postgres;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketOption;
import javax.net.SocketFactory;
import jdk.net.ExtendedSocketOptions;

/**
 * The driver's sockets for connections without a socket timeout (a migration's): TCP keepalives
 * after 60 s of silence, 6 probes 10 s apart, as {@link DataSourceFactory#MIGRATION_SESSION} asks
 * of the server. A read on a connection whose server died, or whose path a firewall dropped, then
 * fails within about two minutes; with the system's keepalive defaults it waited about two hours,
 * holding the poll that started the migration. A live index build that takes hours is not cut
 * short: the server's host answers the probes. Where the platform lacks these options the socket
 * keeps the system's timing. The driver instantiates it by name ({@code socketFactory}).
 */
public final class KeepAliveSocketFactory extends SocketFactory {
  static final int IDLE_SECONDS = 60;
  static final int INTERVAL_SECONDS = 10;
  static final int PROBES = 6;

  @Override
  public Socket createSocket() throws IOException {
    Socket socket = new Socket();
    socket.setKeepAlive(true);
    try {
      Timing.set(socket);
    } catch (
        NoClassDefFoundError e) { // NOPMD: a runtime image without jdk.net: the system's timing
      // Keepalives on all the same.
    }
    return socket;
  }

  /** Apart, so that a runtime image without the jdk.net module fails only here. */
  private static final class Timing {
    static void set(Socket socket) {
      set(socket, ExtendedSocketOptions.TCP_KEEPIDLE, IDLE_SECONDS);
      set(socket, ExtendedSocketOptions.TCP_KEEPINTERVAL, INTERVAL_SECONDS);
      set(socket, ExtendedSocketOptions.TCP_KEEPCOUNT, PROBES);
    }

    private static void set(Socket socket, SocketOption<Integer> option, int value) {
      if (socket.supportedOptions().contains(option)) {
        try {
          socket.setOption(option, value);
        } catch (IOException | UnsupportedOperationException e) { // NOPMD: the system's timing
          // A platform that lists the option but refuses the value: connecting matters more.
        }
      }
    }
  }

  @Override
  public Socket createSocket(String host, int port) throws IOException {
    return connected(new InetSocketAddress(host, port), null);
  }

  @Override
  public Socket createSocket(String host, int port, InetAddress localHost, int localPort)
      throws IOException {
    return connected(
        new InetSocketAddress(host, port), new InetSocketAddress(localHost, localPort));
  }

  @Override
  public Socket createSocket(InetAddress host, int port) throws IOException {
    return connected(new InetSocketAddress(host, port), null);
  }

  @Override
  public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
      throws IOException {
    return connected(
        new InetSocketAddress(address, port), new InetSocketAddress(localAddress, localPort));
  }

  private Socket connected(InetSocketAddress remote, InetSocketAddress local) throws IOException {
    Socket socket = createSocket();
    try {
      if (local != null) {
        socket.bind(local);
      }
      socket.connect(remote);
      return socket;
    } catch (IOException e) {
      socket.close();
      throw e;
    }
  }
}
