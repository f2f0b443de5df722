package dev.idem.server.pipeline;

import dev.idem.Deduplicator;
import dev.idem.IdemException;
import dev.idem.KeyDerivationException;
import dev.idem.TimeSource;
import dev.idem.key.FieldPath;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sequence mode of a pipeline's ordering step ({@code ordering.sequence}): each event carries a
 * sequence number (a version) in its body; per ordering key, an event whose sequence is not newer
 * than the last one processed is stale and dropped, and an early one (more than one past the last)
 * waits for the gap to fill, for at most {@code ordering.gap_timeout}.
 *
 * <p>The last sequence of each ordering key is kept in the pipeline's store, so it holds across
 * instances and restarts: it is the stored result of a committed key (the ordering key's digest) in
 * the scope {@code <pipeline>/sequence}, kept without TTL. It is read and written only while the
 * event holds its ordering key's turn (across instances, the shared lock), so two events of one key
 * never update it at once; the update is a forget, a reserve and a commit, and an instance that
 * dies in the middle of those (milliseconds) loses that key's last sequence: its next event is then
 * taken as the key's first. The key's first event ever is processed whatever its sequence.
 *
 * <p>An early event waits without holding the key's turn (so the events that fill the gap can
 * pass), polling the stored sequence from 5 ms up to every 200 ms; then it takes the turn again and
 * checks once more. A waiting event keeps its own dedup reservation (renewed while it waits).
 */
public final class SequenceGuard {
  private static final Logger LOG = LoggerFactory.getLogger(SequenceGuard.class);
  private static final long MIN_POLL_MILLIS = 5;
  private static final long MAX_POLL_MILLIS = 200;

  /** The stored value of a key that has no sequence yet. */
  public static final long NONE = Long.MIN_VALUE;

  private final String pipeline;
  private final String spelling;
  private final FieldPath path;
  private final StoredValues records;
  private final Duration gapTimeout;
  private final TimeSource time;

  /**
   * Creates the guard.
   *
   * @param pipeline the pipeline id, for logs
   * @param path the field path of the sequence number (e.g. {@code body.version})
   * @param records a deduplicator on the pipeline's store, scope {@code <pipeline>/sequence},
   *     without TTL
   * @param gapTimeout how long an early event waits for its gap
   * @param time the clock
   */
  public SequenceGuard(
      String pipeline, String path, Deduplicator records, Duration gapTimeout, TimeSource time) {
    this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    this.spelling = path;
    this.path = FieldPath.parse(path);
    this.records = new StoredValues(Objects.requireNonNull(records, "records"));
    this.gapTimeout = Objects.requireNonNull(gapTimeout, "gapTimeout");
    this.time = Objects.requireNonNull(time, "time");
  }

  /**
   * Returns how long an early event waits for its gap.
   *
   * @return the gap timeout
   */
  public Duration gapTimeout() {
    return gapTimeout;
  }

  /**
   * Reads an event's sequence number.
   *
   * @param body the event's validated JSON body
   * @return the sequence
   * @throws KeyDerivationException if the field is missing or not an integer (the message says what
   *     to send)
   */
  public long sequenceOf(byte[] body) {
    return sequenceOf(new InboundRequest(body, name -> null));
  }

  /**
   * Reads an event's sequence, from the pipeline's read of its body if it has one.
   *
   * @param event the event
   * @return the sequence
   * @throws KeyDerivationException if the field is missing or not an integer
   */
  public long sequenceOf(InboundRequest event) {
    String text;
    try {
      text =
          event.canonical() != null ? path.extract(event.canonical()) : path.extract(event.body());
    } catch (KeyDerivationException e) {
      throw new KeyDerivationException(
          "ordering.sequence " + spelling + ": " + e.getMessage() + "; send the event's version");
    }
    long value;
    try {
      value = Long.parseLong(text.trim());
    } catch (NumberFormatException e) {
      value = NONE;
    }
    if (value == NONE) {
      throw new KeyDerivationException(
          "ordering.sequence "
              + spelling
              + " must be an integer (a version that grows by one per event of the key), got '"
              + (text.length() > 40 ? text.substring(0, 40) + "..." : text)
              + "'");
    }
    return value;
  }

  /**
   * Returns the last sequence processed for an ordering key.
   *
   * @param orderingKey the ordering key's text form ({@link OrderingStep.Turn#key()})
   * @return the sequence, or {@link #NONE} if the key has none yet
   */
  public long last(String orderingKey) {
    byte[] value = records.read(orderingKey);
    if (value != null) {
      try {
        return Long.parseLong(new String(value, StandardCharsets.US_ASCII));
      } catch (NumberFormatException e) {
        LOG.warn("pipeline={} ordering key={} unreadable last sequence", pipeline, orderingKey);
      }
    }
    return NONE;
  }

  /**
   * Records the last sequence processed for an ordering key; the caller holds the key's turn.
   *
   * @param orderingKey the ordering key's text form
   * @param sequence the sequence just processed
   */
  public void record(String orderingKey, long sequence) {
    if (!records.write(orderingKey, Long.toString(sequence).getBytes(StandardCharsets.US_ASCII))) {
      LOG.warn(
          "pipeline={} ordering key={} could not record last sequence {} (another writer held"
              + " it); the key's next event is checked against the older one",
          pipeline,
          orderingKey,
          sequence);
    }
  }

  /**
   * Waits, without the key's turn, until the key's last sequence reaches {@code sequence - 1} or
   * the deadline passes.
   *
   * @param orderingKey the ordering key's text form
   * @param sequence the early event's sequence
   * @param deadlineNanos the monotonic deadline
   */
  public void awaitGap(String orderingKey, long sequence, long deadlineNanos) {
    long pause = MIN_POLL_MILLIS;
    while (time.monotonicNanos() - deadlineNanos < 0) {
      long last = last(orderingKey);
      if (last != NONE && last >= sequence - 1) {
        return;
      }
      long left = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - time.monotonicNanos());
      try {
        Thread.sleep(Math.max(1, Math.min(pause, left)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IdemException("interrupted while an early event waited for its gap", e);
      }
      pause = Math.min(MAX_POLL_MILLIS, pause * 2);
    }
  }
}
