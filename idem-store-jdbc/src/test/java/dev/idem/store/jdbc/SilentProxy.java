package dev.idem.store.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;

/**
 * A TCP proxy on a free loopback port that forwards to a server until {@link #goSilent()}: from
 * then on it keeps every connection open and accepts new ones, but forwards nothing either way, as
 * a proxy or network path that stopped answering does. {@link #dropAnswers()} stops only the
 * server's answers (requests still reach it), and {@link #heal()} makes new connections work again
 * (a connection that lost bytes stays stuck). Closing it closes every socket and stops its threads.
 */
final class SilentProxy implements AutoCloseable {
  private final ServerSocket server;
  private final String targetHost;
  private final int targetPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final CountDownLatch closed = new CountDownLatch(1);
  private volatile boolean silent;
  private volatile boolean answersDropped;

  SilentProxy(String targetHost, int targetPort) throws IOException {
    this.targetHost = targetHost;
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::acceptLoop, "silent-proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** Returns the port to connect to instead of the server's. */
  int port() {
    return server.getLocalPort();
  }

  /** Stops forwarding, keeping every connection open. */
  void goSilent() {
    silent = true;
  }

  /** Keeps forwarding requests to the server, but none of its answers back. */
  void dropAnswers() {
    answersDropped = true;
  }

  /** Forwards both ways again, on connections opened from now on. */
  void heal() {
    silent = false;
    answersDropped = false;
  }

  private void acceptLoop() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        sockets.add(client);
        if (silent) {
          continue; // accepted, and never answered
        }
        Socket upstream = new Socket();
        sockets.add(upstream);
        upstream.connect(new InetSocketAddress(targetHost, targetPort), 2_000);
        pump(client, upstream, false);
        pump(upstream, client, true);
      } catch (IOException e) {
        // Closed, or the server refused: the client sees its connection drop.
      }
    }
  }

  private void pump(Socket from, Socket to, boolean answers) {
    Thread t =
        new Thread(
            () -> {
              byte[] buf = new byte[16 * 1024];
              try (InputStream in = from.getInputStream();
                  OutputStream out = to.getOutputStream()) {
                for (int n; (n = in.read(buf)) >= 0; ) {
                  if (silent || (answers && answersDropped)) {
                    closed.await(); // hold the bytes: nothing more gets through
                    return;
                  }
                  out.write(buf, 0, n);
                  out.flush();
                }
              } catch (IOException e) {
                // Either side closed.
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "silent-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() throws IOException {
    closed.countDown();
    server.close();
    for (Socket s : sockets) {
      try {
        s.close();
      } catch (IOException ignored) {
        // Already closed.
      }
    }
  }
}
