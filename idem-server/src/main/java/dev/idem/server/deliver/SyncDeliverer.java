package dev.idem.server.deliver;

import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers an event inline, on the caller's thread, retrying as the {@link RetryPolicy} says: the
 * {@code sync} delivery mode, where the webhook is answered only after downstream accepted the
 * event (or gave up, and the key is released so the sender's own retry is accepted).
 *
 * <p>Retries wait with exponential backoff and full jitter ({@link RetryPolicy#backoff}), at least
 * as long as downstream's {@code Retry-After}. A non-retryable failure (e.g. HTTP 400) ends the
 * delivery at once.
 *
 * <p><b>Deadline.</b> A sender waits for the answer, and most give up after 5 to 30 seconds
 * (Shopify 5s, GitHub 10s). So the whole delivery has a deadline (default {@link
 * #DEFAULT_DEADLINE}): no retry starts if its backoff would end after the deadline, and the outcome
 * is the last failure, marked retryable, so that the sender's retry can try again. An attempt in
 * progress is never cut short (the sink's own timeout bounds it), so the longest a call can take is
 * the deadline plus one attempt's timeout.
 *
 * <p>Every failed attempt is logged at WARN (pipeline, idempotency key, attempt n of m, the error,
 * and when the next attempt is due or why there is none).
 *
 * <p>Thread-safe: one instance serves every request of a pipeline.
 */
public final class SyncDeliverer {
  /** The default deadline for a whole delivery with its retries: 10 seconds. */
  public static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(10);

  private static final Logger LOG = LoggerFactory.getLogger(SyncDeliverer.class);

  private final Sink sink;
  private final RetryPolicy retry;
  private final DeliveryListener listener;
  private final Duration deadline;
  private final TimeSource time;
  private final Sleeper sleeper;
  private final DoubleSupplier jitter;

  /**
   * A deliverer with the default deadline, the system clock and real sleeps.
   *
   * @param sink where to deliver
   * @param retry how to retry
   * @param listener hears outcomes
   */
  public SyncDeliverer(Sink sink, RetryPolicy retry, DeliveryListener listener) {
    this(builder(sink).retryPolicy(retry).listener(listener));
  }

  private SyncDeliverer(Builder b) {
    this.sink = b.sink;
    this.retry = b.retry;
    this.listener = b.listener;
    this.deadline = b.deadline;
    this.time = b.time;
    this.sleeper = b.sleeper;
    this.jitter = b.jitter;
  }

  /**
   * Starts a builder.
   *
   * @param sink where to deliver
   * @return a builder with the defaults: {@link RetryPolicy#DEFAULT}, no listener, {@link
   *     #DEFAULT_DEADLINE}, the system clock, real sleeps, random jitter
   */
  public static Builder builder(Sink sink) {
    return new Builder(sink);
  }

  /**
   * Delivers with retries, blocking until delivered, failed for good, or out of time.
   *
   * @param delivery the event
   * @return {@link DeliveryOutcome.Delivered}, or the last {@link DeliveryOutcome.Failed} (its
   *     message says how many attempts were made; retryable unless downstream refused the event)
   */
  public DeliveryOutcome deliver(Delivery delivery) {
    long start = time.monotonicNanos();
    long deadlineNanos = deadline.toNanos();
    for (int attempt = 1; ; attempt++) {
      DeliveryOutcome outcome = attempt(delivery);
      if (outcome instanceof DeliveryOutcome.Delivered) {
        Listeners.delivered(
            listener,
            delivery.pipeline(),
            attempt,
            Duration.ofNanos(time.monotonicNanos() - start));
        return outcome;
      }
      DeliveryOutcome.Failed failed = (DeliveryOutcome.Failed) outcome;
      if (!failed.retryable()) {
        return giveUp(delivery, attempt, failed, "not retryable");
      }
      if (attempt >= retry.maxAttempts()) {
        return giveUp(delivery, attempt, failed, "no retries left");
      }
      Duration wait = retry.backoff(attempt, jitter.getAsDouble(), failed.retryAfter());
      long elapsed = time.monotonicNanos() - start;
      if (elapsed + wait.toNanos() >= deadlineNanos) {
        return giveUp(
            delivery,
            attempt,
            new DeliveryOutcome.Failed(failed.error(), true, failed.retryAfter()),
            "the next retry would end after the " + deadline.toMillis() + "ms deadline");
      }
      AttemptLog.failed(
          LOG,
          delivery,
          attempt,
          retry.maxAttempts(),
          failed.error(),
          Instant.ofEpochMilli(time.wallMillis() + wait.toMillis()),
          "");
      Listeners.retry(listener, delivery.pipeline(), attempt, failed.error());
      try {
        sleeper.sleep(wait);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return giveUp(
            delivery,
            attempt,
            new DeliveryOutcome.Failed(failed.error(), true, failed.retryAfter()),
            "interrupted while waiting to retry");
      }
    }
  }

  private DeliveryOutcome attempt(Delivery delivery) {
    try {
      return sink.deliver(delivery);
    } catch (RuntimeException e) {
      // The Sink contract says failures are values; a throw is a bug in the sink, but it must not
      // escape as a 500 with the key left in flight.
      LOG.warn("sink {} threw instead of returning a failure", sink.describe(), e);
      return new DeliveryOutcome.Failed("sink " + sink.describe() + " threw " + e, true);
    }
  }

  private DeliveryOutcome.Failed giveUp(
      Delivery delivery, int attempts, DeliveryOutcome.Failed last, String why) {
    AttemptLog.failed(
        LOG, delivery, attempts, retry.maxAttempts(), last.error(), null, "sync delivery: " + why);
    String error =
        "gave up after "
            + attempts
            + (attempts == 1 ? " attempt (" : " attempts (")
            + why
            + "): "
            + last.error();
    Listeners.gaveUp(listener, delivery.pipeline(), attempts, last.error(), false);
    return new DeliveryOutcome.Failed(error, last.retryable(), last.retryAfter());
  }

  /**
   * Returns the deadline of a whole delivery.
   *
   * @return the deadline
   */
  public Duration deadline() {
    return deadline;
  }

  @Override
  public String toString() {
    return "SyncDeliverer[" + sink.describe() + ", " + retry + ", deadline=" + deadline + "]";
  }

  /** Builds a {@link SyncDeliverer}; not thread-safe, copied on {@link #build()}. */
  public static final class Builder {
    private final Sink sink;
    private RetryPolicy retry = RetryPolicy.DEFAULT;
    private DeliveryListener listener = DeliveryListener.NOOP;
    private Duration deadline = DEFAULT_DEADLINE;
    private TimeSource time = TimeSource.system();
    private Sleeper sleeper = Sleeper.SYSTEM;
    private DoubleSupplier jitter = () -> ThreadLocalRandom.current().nextDouble();

    private Builder(Sink sink) {
      this.sink = Objects.requireNonNull(sink, "sink");
    }

    /**
     * Sets the retry policy.
     *
     * @param retry the policy
     * @return this builder
     */
    public Builder retryPolicy(RetryPolicy retry) {
      this.retry = Objects.requireNonNull(retry, "retry");
      return this;
    }

    /**
     * Sets the listener.
     *
     * @param listener hears outcomes
     * @return this builder
     */
    public Builder listener(DeliveryListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Sets the deadline of a whole delivery, retries included.
     *
     * @param deadline positive
     * @return this builder
     * @throws IdemConfigException if not positive
     */
    public Builder deadline(Duration deadline) {
      Objects.requireNonNull(deadline, "deadline");
      if (deadline.isNegative() || deadline.isZero()) {
        throw new IdemConfigException("sync delivery deadline must be positive, got " + deadline);
      }
      this.deadline = deadline;
      return this;
    }

    /**
     * Sets the clock that measures the deadline and the latency.
     *
     * @param time the time source
     * @return this builder
     */
    public Builder timeSource(TimeSource time) {
      this.time = Objects.requireNonNull(time, "time");
      return this;
    }

    /**
     * Sets how the deliverer waits between attempts.
     *
     * @param sleeper the sleeper
     * @return this builder
     */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    /**
     * Sets the source of jitter: numbers in {@code [0, 1)}.
     *
     * @param jitter the source, e.g. a constant in tests
     * @return this builder
     */
    public Builder jitter(DoubleSupplier jitter) {
      this.jitter = Objects.requireNonNull(jitter, "jitter");
      return this;
    }

    /**
     * Builds the deliverer.
     *
     * @return the deliverer
     */
    public SyncDeliverer build() {
      return new SyncDeliverer(this);
    }
  }
}
