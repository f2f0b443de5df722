package dev.idem.spi;

import dev.idem.Fingerprint;
import org.jspecify.annotations.Nullable;

/** The state of one key, as {@link DedupStore#inspect} sees it at a given time. */
public sealed interface KeyState permits KeyState.Absent, KeyState.InFlight, KeyState.Committed {

  /** The shared {@link Absent} value. */
  KeyState ABSENT = new Absent();

  /** Never reserved, released, expired, evicted or forgotten. */
  record Absent() implements KeyState {}

  /**
   * Reserved and not yet settled; the lease has not run out.
   *
   * @param reservedAtMillis when it was reserved
   * @param leaseUntilMillis when the lease runs out
   * @param fingerprint the payload fingerprint given at reserve, or null
   */
  record InFlight(long reservedAtMillis, long leaseUntilMillis, @Nullable Fingerprint fingerprint)
      implements KeyState {}

  /**
   * Committed and not expired.
   *
   * @param committedAtMillis when it was committed
   * @param expiresAtMillis when it expires ({@link Long#MAX_VALUE}: never)
   * @param fingerprint the payload fingerprint, or null
   * @param result the stored result, or null
   */
  record Committed(
      long committedAtMillis,
      long expiresAtMillis,
      @Nullable Fingerprint fingerprint,
      byte @Nullable [] result)
      implements KeyState {}
}
