package dev.outboxrelay.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A TCP proxy on 127.0.0.1 in front of a local server that can turn one connection into a silent
 * network: once the client sends a chosen marker (a piece of SQL, say), that connection stays open
 * but forwards nothing more in either direction, as when a firewall or NAT drops a connection
 * without a reset. Other connections, and those opened later, keep working.
 */
public final class SilentProxy implements AutoCloseable {
  private final ServerSocket listener;
  private final int upstreamPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final AtomicReference<byte[]> marker = new AtomicReference<>();
  private final AtomicBoolean silencedOnce = new AtomicBoolean();
  private volatile boolean closed;

  private SilentProxy(int upstreamPort) throws IOException {
    this.upstreamPort = upstreamPort;
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "silent-proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** A proxy to {@code upstreamPort} on 127.0.0.1. */
  public static SilentProxy to(int upstreamPort) {
    try {
      return new SilentProxy(upstreamPort);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The JDBC URL of {@code database} on the embedded server, through this proxy. */
  public String jdbcUrl(String database) {
    return "jdbc:postgresql://127.0.0.1:" + listener.getLocalPort() + "/" + database;
  }

  /**
   * The next connection whose client sends {@code text} forwards that chunk and then falls silent
   * for good; the marker is used once.
   */
  public void silenceAfterClientSends(String text) {
    marker.set(text.getBytes(StandardCharsets.UTF_8));
  }

  /** True once a connection has fallen silent. */
  public boolean silenced() {
    return silencedOnce.get();
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = listener.accept();
        Socket server = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
        sockets.add(client);
        sockets.add(server);
        AtomicBoolean silent = new AtomicBoolean();
        pump(client, server, silent, true);
        pump(server, client, silent, false);
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void pump(Socket from, Socket to, AtomicBoolean silent, boolean fromClient) {
    Thread t =
        new Thread(
            () -> {
              byte[] buffer = new byte[8192];
              byte[] tail = new byte[0];
              try (InputStream in = from.getInputStream()) {
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buffer)) >= 0) {
                  if (silent.get()) {
                    continue; // read and drop: the peer sees an open, mute connection
                  }
                  if (fromClient) {
                    // Before forwarding: once the server has the chunk, its answer may come back
                    // before this thread could fall silent (a fast statement then succeeded).
                    tail = watch(tail, buffer, n, silent);
                  }
                  out.write(buffer, 0, n);
                  out.flush();
                }
              } catch (IOException e) {
                // Either side closed: the proxy is closing, or the peer gave up.
              }
            },
            "silent-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  /** Silences the connection once the marker was sent; returns the bytes to keep for the next. */
  private byte[] watch(byte[] tail, byte[] buffer, int n, AtomicBoolean silent) {
    byte[] wanted = marker.get();
    if (wanted == null) {
      return new byte[0];
    }
    byte[] window = new byte[tail.length + n];
    System.arraycopy(tail, 0, window, 0, tail.length);
    System.arraycopy(buffer, 0, window, tail.length, n);
    if (indexOf(window, wanted) >= 0 && marker.compareAndSet(wanted, null)) {
      silent.set(true);
      silencedOnce.set(true);
      return new byte[0];
    }
    int keep = Math.min(window.length, wanted.length - 1);
    byte[] next = new byte[keep];
    System.arraycopy(window, window.length - keep, next, 0, keep);
    return next;
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  @Override
  public void close() {
    closed = true;
    try {
      listener.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    for (Socket s : sockets) {
      try {
        s.close();
      } catch (IOException ignored) {
        // closing anyway
      }
    }
  }
}
