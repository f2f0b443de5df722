package dev.idem.server.http;

import dev.idem.server.config.DataSizes;
import dev.idem.server.config.Durations;
import dev.idem.server.config.HttpLimits;
import dev.idem.server.pipeline.Answer;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.eclipse.jetty.http.HttpException;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.thread.Invocable;
import org.eclipse.jetty.util.thread.Scheduler;
import org.jspecify.annotations.Nullable;

/**
 * Reads one request body without holding a thread while the client is slow: each arrival is copied
 * by a demand callback that returns at once, so a thousand trickling uploads cost no request
 * threads, and the other requests keep being served. The body ends in exactly one of two ways:
 *
 * <ol>
 *   <li>it arrived whole, within {@code max} bytes: {@link Outcome#body} runs (on a pool thread,
 *       where blocking is allowed);
 *   <li>it was refused: {@link Outcome#refused} runs with the answer: {@code 413} past {@code max};
 *       {@code 408} when it is not complete after {@code server.read_timeout}, when after the first
 *       second it falls behind {@code server.min_data_rate} bytes per second, or when the
 *       connection is silent for {@code server.idle_timeout}; {@code 400} when the client breaks
 *       the framing.
 * </ol>
 *
 * <p>A timer ticks once a second (and at the deadline) to check the deadline and the rate, from the
 * first time the body is found incomplete; the first of the tick, an arrival or a failure to settle
 * the body wins, the others do nothing.
 */
final class BodyReader implements Invocable.Task {
  /** What happens to the body; exactly one method is called, once. */
  interface Outcome {
    /**
     * The body arrived whole.
     *
     * @param body the bytes
     */
    void body(byte[] body);

    /**
     * The body was refused.
     *
     * @param answer what to answer
     */
    void refused(Answer answer);
  }

  /** The rate check leaves the first second alone (connection set-up, 100-continue). */
  static final long RATE_GRACE_NANOS = TimeUnit.SECONDS.toNanos(1);

  private static final long TICK_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final Request request;
  private final BodyBuffer buffer;
  private final long declared;
  private final long max;
  private final HttpLimits limits;
  private final Scheduler scheduler;
  private final LongSupplier nanos;
  private final Outcome outcome;
  private final long started;
  private final AtomicBoolean settled = new AtomicBoolean();
  private volatile long received;
  private volatile Scheduler.@Nullable Task tick;

  BodyReader(
      Request request,
      long max,
      HttpLimits limits,
      Scheduler scheduler,
      LongSupplier nanos,
      Outcome outcome) {
    this.request = request;
    this.declared = request.getLength();
    this.max = max;
    this.buffer = new BodyBuffer(declared, max);
    this.limits = limits;
    this.scheduler = scheduler;
    this.nanos = nanos;
    this.outcome = outcome;
    this.started = nanos.getAsLong();
  }

  /**
   * Starts reading: what has arrived is read now, the rest as it comes. The timer starts only when
   * the body is not complete after that first read (a small body usually arrives with its headers,
   * and then needs no timer); the deadline still counts from the start.
   */
  void start() {
    run();
    if (!settled.get()) {
      // A body settled meanwhile on another thread makes this tick a no-op (it checks settled).
      scheduleTick();
    }
  }

  /**
   * Blocking: when the body is complete, the pipeline runs in this callback, so Jetty must call it
   * on a pool thread, never on a selector thread.
   */
  @Override
  public InvocationType getInvocationType() {
    return InvocationType.BLOCKING;
  }

  /** Reads what has arrived, then asks to be called again when more does. */
  @Override
  public void run() {
    while (!settled.get()) {
      Content.Chunk chunk = request.read();
      if (chunk == null) {
        request.demand(this);
        return;
      }
      Answer refusal = null;
      boolean last;
      try {
        if (Content.Chunk.isFailure(chunk)) {
          refusal = failed(chunk.getFailure());
          last = true;
        } else {
          ByteBuffer bytes = chunk.getByteBuffer();
          if (!buffer.append(bytes)) {
            refusal = IdemHandler.tooLarge(max, declared);
          }
          received = buffer.size();
          last = chunk.isLast();
        }
      } finally {
        chunk.release();
      }
      if (refusal != null) {
        refuse(refusal);
        return;
      }
      if (last) {
        if (settle()) {
          outcome.body(buffer.toByteArray());
        }
        return;
      }
    }
  }

  private void scheduleTick() {
    long remaining = limits.readTimeout().toNanos() - (nanos.getAsLong() - started);
    tick =
        scheduler.schedule(
            this::onTick, Math.max(1, Math.min(TICK_NANOS, remaining)), TimeUnit.NANOSECONDS);
  }

  private void onTick() {
    if (settled.get()) {
      return;
    }
    long elapsed = nanos.getAsLong() - started;
    if (elapsed >= limits.readTimeout().toNanos()) {
      refuse(
          timeout(
              "the body did not arrive within server.read_timeout ("
                  + Durations.format(limits.readTimeout())
                  + "); send the whole body at once"));
      return;
    }
    if (tooSlow(elapsed, received)) {
      refuse(
          timeout(
              "the body arrives slower than server.min_data_rate ("
                  + DataSizes.format(limits.minDataRate())
                  + " per second; "
                  + received
                  + " bytes after "
                  + TimeUnit.NANOSECONDS.toMillis(elapsed)
                  + " ms); send the whole body at once"));
      return;
    }
    scheduleTick();
  }

  /**
   * Whether a body that has {@code bytes} after {@code elapsed} nanoseconds falls behind the rate:
   * after the grace second, it must have {@code min_data_rate} bytes for every second since, or all
   * of its declared length.
   */
  boolean tooSlow(long elapsed, long bytes) {
    long rate = limits.minDataRate();
    if (rate <= 0 || elapsed <= RATE_GRACE_NANOS) {
      return false;
    }
    double seconds = (elapsed - RATE_GRACE_NANOS) / 1e9;
    double due = rate * seconds;
    if (declared >= 0) {
      due = Math.min(due, declared);
    }
    return bytes < due;
  }

  private boolean settle() {
    if (!settled.compareAndSet(false, true)) {
      return false;
    }
    Scheduler.Task t = tick;
    if (t != null) {
      t.cancel();
    }
    return true;
  }

  private void refuse(Answer answer) {
    if (settle()) {
      outcome.refused(answer);
    }
  }

  private Answer failed(Throwable failure) {
    if (failure instanceof TimeoutException) {
      return timeout(
          "no body bytes arrived for server.idle_timeout ("
              + Durations.format(limits.idleTimeout())
              + "); send the whole body at once");
    }
    if (failure instanceof HttpException h && h.getCode() == 413) {
      return IdemHandler.tooLarge(max, declared);
    }
    if (failure instanceof HttpException h && h.getCode() == 408) {
      return timeout("the body did not arrive in time: " + h.getReason());
    }
    String why = failure instanceof HttpException h ? h.getReason() : failure.getMessage();
    return Answer.error(
        400,
        "bad_request",
        "the body could not be read ("
            + (why == null ? failure.getClass().getSimpleName() : why)
            + "); send it again with a correct Content-Length or chunked framing",
        Map.of("Connection", "close"));
  }

  static Answer timeout(String message) {
    return Answer.error(408, "request_timeout", message, Map.of("Connection", "close"));
  }
}
