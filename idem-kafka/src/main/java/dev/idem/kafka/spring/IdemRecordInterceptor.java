package dev.idem.kafka.spring;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.Reservation;
import dev.idem.Settlement;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.listener.RecordInterceptor;

/**
 * A Spring Kafka {@link RecordInterceptor} that runs each record's listener once per dedup key:
 *
 * <pre>{@code
 * factory.setRecordInterceptor(IdemRecordInterceptor.of(dedup, RecordKeys.recordKey()));
 * }</pre>
 *
 * <ol>
 *   <li>{@code intercept} reserves the record's key. New: the listener runs. Committed: the record
 *       is skipped (the container returns {@code null} from the interceptor, and acknowledges it).
 *   <li>In flight (another consumer or thread holds the key now): the interceptor waits, asking
 *       again every {@link Builder#inFlightPollInterval(Duration) poll interval}, until the holder
 *       settles: the record is then skipped if the holder committed, and runs if it failed. It is
 *       never dropped while in flight. The wait per holder is bounded by the holder's lease; if it
 *       outlasts {@code max.poll.interval.ms}, the consumer leaves the group and the record, not
 *       acknowledged, goes to another member, which decides it again.
 *   <li>{@code success} commits the key (before the container commits the offset), {@code failure}
 *       releases it so that the error handler's retry, or a redelivery, runs the listener again.
 * </ol>
 *
 * <p>A record whose key cannot be derived fails in {@code intercept} with {@link
 * dev.idem.KeyDerivationException}. Thread-safe: one instance may serve a concurrent container
 * (each consumer thread keeps its own reservation).
 *
 * @param <K> the record key type
 * @param <V> the record value type
 */
public final class IdemRecordInterceptor<K, V> implements RecordInterceptor<K, V> {
  private static final Logger LOG = LoggerFactory.getLogger(IdemRecordInterceptor.class);

  private final Deduplicator dedup;
  private final Function<ConsumerRecord<K, V>, DedupKey> keys;
  private final long pollNanos;
  private final ThreadLocal<@Nullable Held> held = new ThreadLocal<>();

  private IdemRecordInterceptor(Builder<K, V> b) {
    this.dedup = b.dedup;
    this.keys = b.keys;
    this.pollNanos = b.inFlightPoll.toNanos();
  }

  /**
   * Returns an interceptor with the default in-flight poll interval (100 ms).
   *
   * @param dedup the deduplicator (store, scope, window, lease)
   * @param keys derives a record's key, e.g. {@link dev.idem.kafka.RecordKeys#recordKey()}
   * @param <K> the record key type
   * @param <V> the record value type
   * @return the interceptor
   */
  public static <K, V> IdemRecordInterceptor<K, V> of(
      Deduplicator dedup, Function<ConsumerRecord<K, V>, DedupKey> keys) {
    return new Builder<>(dedup, keys).build();
  }

  /**
   * Starts a builder.
   *
   * @param dedup the deduplicator
   * @param keys derives a record's key
   * @param <K> the record key type
   * @param <V> the record value type
   * @return a builder
   */
  public static <K, V> Builder<K, V> builder(
      Deduplicator dedup, Function<ConsumerRecord<K, V>, DedupKey> keys) {
    return new Builder<>(dedup, keys);
  }

  /**
   * Reserves the record's key; see the class description.
   *
   * @param record the record
   * @param consumer the consumer
   * @return the record to run the listener on, or null to skip a duplicate
   * @throws dev.idem.KeyDerivationException if the record has no key
   * @throws dev.idem.StoreUnavailableException if the store did not answer
   * @throws IllegalStateException if the thread was interrupted while waiting for an in-flight key
   */
  @Override
  public @Nullable ConsumerRecord<K, V> intercept(
      ConsumerRecord<K, V> record, Consumer<K, V> consumer) {
    DedupKey key = keys.apply(record);
    while (true) {
      Decision decision = dedup.reserve(key);
      if (decision instanceof Decision.Acquired a) {
        held.set(new Held(record, a.reservation()));
        return record;
      }
      if (!(decision instanceof Decision.InFlight)) {
        return null; // committed: a duplicate
      }
      LockSupport.parkNanos(this, pollNanos);
      if (Thread.interrupted()) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(
            "interrupted while record "
                + record.topic()
                + "-"
                + record.partition()
                + "@"
                + record.offset()
                + " waited for its key (in flight elsewhere); it was not processed");
      }
    }
  }

  /** Commits the key of a record whose listener returned. */
  @Override
  public void success(ConsumerRecord<K, V> record, Consumer<K, V> consumer) {
    Reservation r = take(record);
    if (r != null && r.commit() == Settlement.LEASE_LOST) {
      LOG.warn(
          "{}: the listener outlasted the lease; the commit changed nothing. Raise the lease.", r);
    }
  }

  /** Releases the key of a record whose listener threw, so a retry runs it again. */
  @Override
  public void failure(ConsumerRecord<K, V> record, Exception exception, Consumer<K, V> consumer) {
    Reservation r = take(record);
    if (r != null) {
      r.release();
    }
  }

  @Override
  public void afterRecord(ConsumerRecord<K, V> record, Consumer<K, V> consumer) {
    // Neither success nor failure was called (e.g. the container stopped): let the key go now.
    Reservation r = take(record);
    if (r != null && r.settlement() == null) {
      r.release();
    }
  }

  private @Nullable Reservation take(ConsumerRecord<K, V> record) {
    Held h = held.get();
    if (h == null || h.record != record) {
      return null;
    }
    held.remove();
    return h.reservation;
  }

  private record Held(ConsumerRecord<?, ?> record, Reservation reservation) {}

  /**
   * Builds an {@link IdemRecordInterceptor}. Not thread-safe.
   *
   * @param <K> the record key type
   * @param <V> the record value type
   */
  public static final class Builder<K, V> {
    private final Deduplicator dedup;
    private final Function<ConsumerRecord<K, V>, DedupKey> keys;
    private Duration inFlightPoll = Duration.ofMillis(100);

    private Builder(Deduplicator dedup, Function<ConsumerRecord<K, V>, DedupKey> keys) {
      this.dedup = Objects.requireNonNull(dedup, "dedup");
      this.keys = Objects.requireNonNull(keys, "keys");
    }

    /**
     * Sets how often a record whose key is in flight asks again (default 100 ms).
     *
     * @param interval more than zero
     * @return this builder
     */
    public Builder<K, V> inFlightPollInterval(Duration interval) {
      if (interval.isNegative() || interval.isZero()) {
        throw new IllegalArgumentException(
            "inFlightPollInterval must be more than zero, got " + interval);
      }
      this.inFlightPoll = interval;
      return this;
    }

    /**
     * Returns the interceptor.
     *
     * @return a new interceptor
     */
    public IdemRecordInterceptor<K, V> build() {
      return new IdemRecordInterceptor<>(this);
    }
  }
}
