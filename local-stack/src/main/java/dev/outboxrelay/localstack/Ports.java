package dev.outboxrelay.localstack;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

/** Loopback ports: is one free, and a free one when the user asked for any. */
final class Ports {
  static final String LOOPBACK = "127.0.0.1";

  private Ports() {}

  static boolean isFree(int port) {
    try (ServerSocket socket = new ServerSocket()) {
      // As servers do: connections in TIME_WAIT from an earlier run must not count as "in use".
      socket.setReuseAddress(true);
      socket.bind(new InetSocketAddress(InetAddress.getByName(LOOPBACK), port));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** A port the kernel considers free right now (another process may still take it). */
  static int anyFree() {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(LOOPBACK))) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new StackException("could not find a free loopback port: " + e.getMessage(), e);
    }
  }

  /** Throws a message that names the port, what it is for and how to choose another. */
  static void requireFree(int port, String purpose, String setting) {
    if (!isFree(port)) {
      throw new StackException(
          "port "
              + port
              + " ("
              + purpose
              + ") is already in use on "
              + LOOPBACK
              + ".\n  Stop what uses it (e.g. `ss -ltnp 'sport = :"
              + port
              + "'` shows it), or choose another port: "
              + setting
              + "=<port>, or LOCAL_STACK_PORTS=auto for free ports.");
    }
  }
}
