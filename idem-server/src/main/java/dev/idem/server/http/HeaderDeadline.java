package dev.idem.server.http;

import dev.idem.server.config.Durations;
import dev.idem.server.pipeline.Answer;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.io.ssl.SslConnection;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.Scheduler;

/**
 * Bounds the time a request line and headers may take ({@code server.read_timeout}), which Jetty
 * does not: its idle timeout only bounds the silence between two bytes, so a client sending one
 * header byte every few seconds could keep a connection for hours. Headers are parsed without a
 * request thread, so such clients cost a connection each, not a thread; this bounds that too.
 *
 * <p>Steps, once a second for every open connection that has no request in the handler:
 *
 * <ol>
 *   <li>if bytes arrived since the connection opened or its last request was answered, a request
 *       has begun: note when this was first seen;
 *   <li>if that was longer than {@code read_timeout} ago, the headers are still not complete: write
 *       {@code 408 request_timeout} in the JSON form and close the connection.
 * </ol>
 *
 * A request's headers are so refused between {@code read_timeout} and {@code read_timeout} plus two
 * seconds after their first byte. It is the handler wrapper (to see when a request is in the
 * handler) and the connection listener (to see connections open and close) of the listener.
 */
public final class HeaderDeadline extends Handler.Wrapper implements Connection.Listener {
  private static final long SWEEP_MILLIS = 1000;

  private final long readTimeoutNanos;
  private final String readTimeout;
  private final LongSupplier nanos;
  private final Map<Connection, Watch> watches = new ConcurrentHashMap<>();

  /** What one connection is doing, as far as the deadline cares. */
  private static final class Watch {
    /** Requests of this connection in the handler now. */
    int busy;

    /** Bytes in when the connection opened or its last request was answered. */
    long mark;

    /** When bytes past {@link #mark} were first seen; 0 if none were. */
    long begun;
  }

  /**
   * Creates the deadline.
   *
   * @param handler what handles the requests whose headers arrived in time
   * @param readTimeout the most time a request line and headers may take
   * @param nanos the monotonic clock
   */
  public HeaderDeadline(Handler handler, java.time.Duration readTimeout, LongSupplier nanos) {
    super(handler);
    this.readTimeoutNanos = readTimeout.toNanos();
    this.readTimeout = Durations.format(readTimeout);
    this.nanos = nanos;
  }

  /**
   * Checks every connection once a second until the scheduler stops.
   *
   * @param scheduler the server's scheduler
   */
  public void start(Scheduler scheduler) {
    scheduler.schedule(
        () -> {
          if (scheduler.isRunning()) {
            sweep();
            start(scheduler);
          }
        },
        SWEEP_MILLIS,
        TimeUnit.MILLISECONDS);
  }

  @Override
  public void onOpened(Connection connection) {
    if (connection instanceof SslConnection) {
      // TLS: the HTTP connection on top of it is watched (its requests name that one); the TLS
      // layer's bytes never match a request, so watching it would cut live connections.
      return;
    }
    Watch w = new Watch();
    w.mark = connection.getBytesIn();
    watches.put(connection, w);
  }

  @Override
  public void onClosed(Connection connection) {
    watches.remove(connection);
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) throws Exception {
    Connection connection = request.getConnectionMetaData().getConnection();
    Watch w = watches.get(connection);
    if (w == null) {
      return super.handle(request, response, callback);
    }
    synchronized (w) {
      w.busy++;
      w.begun = 0;
    }
    Callback answered = new Answered(w, connection, callback);
    boolean handled;
    try {
      handled = super.handle(request, response, answered);
    } catch (Exception | Error e) {
      done(w, connection);
      throw e;
    }
    if (!handled) {
      done(w, connection);
    }
    return handled;
  }

  /** The request's callback, which first marks the connection not busy: one object a request. */
  private static final class Answered implements Callback {
    private final Watch watch;
    private final Connection connection;
    private final Callback callback;

    Answered(Watch watch, Connection connection, Callback callback) {
      this.watch = watch;
      this.connection = connection;
      this.callback = callback;
    }

    @Override
    public void succeeded() {
      done(watch, connection);
      callback.succeeded();
    }

    @Override
    public void failed(Throwable x) {
      try {
        done(watch, connection);
      } finally {
        callback.failed(x);
      }
    }

    @Override
    public InvocationType getInvocationType() {
      return callback.getInvocationType();
    }
  }

  private static void done(Watch w, Connection connection) {
    synchronized (w) {
      w.busy--;
      w.mark = connection.getBytesIn();
    }
  }

  /** One pass over the connections; see the class comment. */
  void sweep() {
    long now = nanos.getAsLong();
    for (Map.Entry<Connection, Watch> e : watches.entrySet()) {
      Connection c = e.getKey();
      Watch w = e.getValue();
      boolean late;
      synchronized (w) {
        if (w.busy > 0 || c.getBytesIn() == w.mark) {
          w.begun = 0;
          continue;
        }
        if (w.begun == 0) {
          w.begun = now;
          continue;
        }
        late = now - w.begun > readTimeoutNanos;
      }
      if (late && watches.remove(c, w)) {
        refuse(c.getEndPoint());
      }
    }
  }

  private void refuse(EndPoint endPoint) {
    Answer a =
        Answer.error(
            408,
            "request_timeout",
            "the request line and headers did not arrive within server.read_timeout ("
                + readTimeout
                + "); send them at once");
    String head =
        "HTTP/1.1 408 Request Timeout\r\nContent-Type: "
            + a.contentType()
            + "\r\nContent-Length: "
            + a.body().length
            + "\r\nConnection: close\r\n\r\n";
    endPoint.write(
        Callback.from(endPoint::close, x -> endPoint.close()),
        ByteBuffer.wrap(head.getBytes(StandardCharsets.US_ASCII)),
        ByteBuffer.wrap(a.body()));
  }
}
