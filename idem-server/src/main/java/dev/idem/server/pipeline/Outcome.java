package dev.idem.server.pipeline;

import dev.idem.DedupKey;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What a pipeline decided for one event, in terms of no transport: each source's edge turns it into
 * its own answer (an HTTP status, a Kafka offset commit, an AMQP ack or nack, a JetStream ack, nak
 * or term). By the time an outcome is returned the event's reservation is settled: committed for
 * {@link Accepted}, released for {@link Failed} and {@link Unavailable}, untouched (never taken)
 * for the others.
 *
 * <ul>
 *   <li>{@link Accepted}: the event was new and is done (delivered, or written to the outbox);
 *   <li>{@link Duplicate}: the key was already committed; the event is done;
 *   <li>{@link Stale}: sequence mode: the event is older than (or as old as) the last one its
 *       ordering key processed; it was dropped and its key committed, so it is done like a
 *       duplicate;
 *   <li>{@link InFlight}: another worker holds the key now; try again later;
 *   <li>{@link Conflict}: the key was used with a different payload (replay mode);
 *   <li>{@link Rejected}: the event is bad (no key, bad JSON, bad signature, refused caller) and
 *       will stay bad: do not retry it as it is;
 *   <li>{@link Unavailable}: the store (or a key server) did not answer, or the lease ran out;
 *       nothing was recorded, try again later;
 *   <li>{@link Failed}: the transform or the delivery failed; the key was released so a retry is
 *       processed again.
 * </ul>
 */
public sealed interface Outcome {

  /**
   * Whether the event is done for good (accepted or a duplicate): a broker source may acknowledge
   * it.
   *
   * @return true for {@link Accepted}, {@link Duplicate} and {@link Stale}
   */
  default boolean settled() {
    return this instanceof Accepted || this instanceof Duplicate || this instanceof Stale;
  }

  /**
   * The event was new and is done.
   *
   * @param key the event's key
   * @param reply in replay mode the downstream's answer to store and return; null otherwise
   * @param dropped whether the transform output nothing (nothing was delivered, the key released)
   */
  record Accepted(DedupKey key, @Nullable Reply reply, boolean dropped) implements Outcome {
    /** Validates the fields. */
    public Accepted {
      Objects.requireNonNull(key, "key");
    }
  }

  /**
   * The key was already committed.
   *
   * @param key the event's key
   * @param result the stored result (replay mode: the first answer, as {@code StoredAnswer} encodes
   *     it), or null
   */
  record Duplicate(DedupKey key, byte @Nullable [] result) implements Outcome {
    /** Validates the fields. */
    public Duplicate {
      Objects.requireNonNull(key, "key");
    }
  }

  /**
   * Sequence mode: the event's sequence is not newer than the last one processed for its ordering
   * key, so it was dropped (nothing delivered) and its key committed.
   *
   * @param key the event's key
   * @param sequence the event's sequence
   * @param last the last sequence processed for its ordering key
   */
  record Stale(DedupKey key, long sequence, long last) implements Outcome {
    /** Validates the fields. */
    public Stale {
      Objects.requireNonNull(key, "key");
    }
  }

  /**
   * Another worker holds the key.
   *
   * @param key the event's key
   * @param retryAfterSeconds when to try again, at least 1
   */
  record InFlight(DedupKey key, long retryAfterSeconds) implements Outcome {
    /** Validates the fields. */
    public InFlight {
      Objects.requireNonNull(key, "key");
    }
  }

  /**
   * The key was used before with a different payload (replay mode).
   *
   * @param key the event's key
   */
  record Conflict(DedupKey key) implements Outcome {
    /** Validates the fields. */
    public Conflict {
      Objects.requireNonNull(key, "key");
    }
  }

  /**
   * The event is refused as it is; nothing was reserved.
   *
   * @param kind why, in broad terms (what an HTTP edge answers)
   * @param code the machine-readable reason, e.g. {@code missing_key}, {@code invalid_signature}
   * @param message what is wrong and what to do
   */
  record Rejected(Rejection kind, String code, String message) implements Outcome {
    /** Validates the fields. */
    public Rejected {
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(code, "code");
      Objects.requireNonNull(message, "message");
    }
  }

  /**
   * Nothing was recorded because something the pipeline needs did not answer in time.
   *
   * @param key the event's key, or null if it was not derived yet
   * @param code {@code store_unavailable}, {@code lease_expired} or {@code keys_unavailable}
   * @param message what happened and what to do
   * @param retryAfterSeconds when to try again
   */
  record Unavailable(@Nullable DedupKey key, String code, String message, long retryAfterSeconds)
      implements Outcome {
    /** Validates the fields. */
    public Unavailable {
      Objects.requireNonNull(code, "code");
      Objects.requireNonNull(message, "message");
    }
  }

  /**
   * Processing failed; the key was released.
   *
   * @param key the event's key
   * @param kind what failed
   * @param code {@code delivery_failed}, {@code transform_failed} or {@code internal_error}
   * @param message what happened, for the sender (no internals)
   */
  record Failed(DedupKey key, Failure kind, String code, String message) implements Outcome {
    /** Validates the fields. */
    public Failed {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(code, "code");
      Objects.requireNonNull(message, "message");
    }
  }

  /** Why an event was refused. */
  enum Rejection {
    /** The event itself is bad: not JSON, no key, too deep, a number out of range. */
    BAD_INPUT,
    /** The provider's signature does not verify. */
    BAD_SIGNATURE,
    /** The caller's token is missing or invalid. */
    UNAUTHENTICATED,
    /** The caller is known but not allowed (e.g. a delegation chain too deep). */
    FORBIDDEN
  }

  /** What failed while processing. */
  enum Failure {
    /** The downstream did not take the event after its retries. */
    DELIVERY,
    /** The transform failed on this event. */
    TRANSFORM,
    /** Anything else. */
    INTERNAL
  }

  /**
   * The downstream's answer to a delivery, as replay mode stores and returns it.
   *
   * @param status the downstream's status (2xx)
   * @param contentType its content type, or null
   * @param body its body; callers must not modify it
   */
  record Reply(int status, @Nullable String contentType, byte[] body) {
    /** Validates the fields. */
    public Reply {
      Objects.requireNonNull(body, "body");
    }
  }
}
