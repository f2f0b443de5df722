package dev.idem.store.redis;

import dev.idem.Fingerprint;
import dev.idem.spi.StoredEntry;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The packed value of one key in the compact layout (a field of a bucket hash; stable: documented
 * in {@code docs/stores/redis.md}). The field is the key's 32-byte digest itself. Offsets are
 * 0-based:
 *
 * <pre>
 *  0      0xC0 | flags: bit 0 committed (else in flight), bit 1 fingerprint present,
 *         bit 2 result inline, bit 3 result in its own string key (see {@link CompactLayout})
 *  1..8   fencing token, big-endian
 *  9..16  since (reserved or committed at), epoch milliseconds, big-endian int64
 * 17..24  deadline (lease end or expiry), epoch milliseconds; Long.MAX_VALUE = never
 * 25..56  fingerprint (32 bytes), if bit 1
 * then    the result bytes to the end, if bit 2 (may be empty)
 * </pre>
 *
 * <p>25 bytes without a fingerprint, 57 with one. A result is inline only while the whole value
 * stays within 64 bytes (Redis's default {@code hash-max-listpack-value}), so that the hash keeps
 * its compact encoding; a longer one lives in its own string key with the entry's expiry.
 */
final class CompactFormat {
  private CompactFormat() {}

  static final int MARK = 0xC0;
  static final int COMMITTED = 1;
  static final int HAS_FINGERPRINT = 2;
  static final int RESULT_INLINE = 4;
  static final int RESULT_EXTERNAL = 8;
  static final int HEADER = 25;
  static final int FINGERPRINT = 32;

  /** The longest value kept inline: Redis's default {@code hash-max-listpack-value}. */
  static final int INLINE_LIMIT = 64;

  /**
   * Packs a new in-flight entry (what reserve writes when it acquires).
   *
   * @param token the fencing token
   * @param since the reservation time
   * @param deadline when the lease runs out
   * @param fingerprint the payload fingerprint, or null
   * @return the value
   */
  static byte[] inFlight(long token, long since, long deadline, @Nullable Fingerprint fingerprint) {
    byte[] v = new byte[fingerprint == null ? HEADER : HEADER + FINGERPRINT];
    v[0] = (byte) (MARK | (fingerprint == null ? 0 : HAS_FINGERPRINT));
    EntryFormat.putLong(v, 1, token);
    EntryFormat.putLong(v, 9, since);
    EntryFormat.putLong(v, 17, deadline);
    if (fingerprint != null) {
      System.arraycopy(fingerprint.toBytes(), 0, v, HEADER, FINGERPRINT);
    }
    return v;
  }

  /**
   * Decodes a stored value.
   *
   * @param v the value
   * @param externalResult the result read from its own key, if the value says it lives there
   * @param where the bucket hash and key, for the error message
   * @return the entry
   * @throws dev.idem.StoreException if the value is not a compact entry
   */
  static StoredEntry decode(byte[] v, byte @Nullable [] externalResult, String where) {
    if (v.length < HEADER || (v[0] & 0xF0) != MARK) {
      throw RedisErrors.badValue(where);
    }
    int flags = v[0] & 0x0F;
    boolean hasFingerprint = (flags & HAS_FINGERPRINT) != 0;
    int resultAt = hasFingerprint ? HEADER + FINGERPRINT : HEADER;
    if (v.length < resultAt
        || ((flags & RESULT_EXTERNAL) != 0 && externalResult == null)
        || ((flags & RESULT_INLINE) == 0 && v.length != resultAt)) {
      throw RedisErrors.badValue(where);
    }
    Fingerprint fingerprint =
        hasFingerprint ? Fingerprint.ofDigest(Arrays.copyOfRange(v, HEADER, resultAt)) : null;
    byte[] result = null;
    if ((flags & RESULT_INLINE) != 0) {
      result = Arrays.copyOfRange(v, resultAt, v.length);
    } else if ((flags & RESULT_EXTERNAL) != 0) {
      result = externalResult;
    }
    return new StoredEntry(
        (flags & COMMITTED) != 0 ? StoredEntry.State.COMMITTED : StoredEntry.State.IN_FLIGHT,
        EntryFormat.getLong(v, 1),
        EntryFormat.getLong(v, 9),
        EntryFormat.getLong(v, 17),
        fingerprint,
        result);
  }
}
