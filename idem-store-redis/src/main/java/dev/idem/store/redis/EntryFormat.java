package dev.idem.store.redis;

import dev.idem.Fingerprint;
import dev.idem.StoreException;
import dev.idem.spi.StoredEntry;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The packed v1 value stored under each key (stable: documented in {@code docs/stores/redis.md}).
 * Offsets are 0-based:
 *
 * <pre>
 *  0      version, 1
 *  1      state: 'I' in flight, 'C' committed
 *  2..9   fencing token, big-endian
 * 10..17  since (reserved or committed at), epoch milliseconds, big-endian int64
 * 18..25  deadline (lease end or expiry), epoch milliseconds; Long.MAX_VALUE = never
 * 26      flags: bit 0 fingerprint present, bit 1 result present
 * 27..58  fingerprint (32 bytes), if bit 0
 * then    the result bytes to the end, if bit 1 (may be empty)
 * </pre>
 */
final class EntryFormat {
  private EntryFormat() {}

  static final byte VERSION = 1;
  static final byte IN_FLIGHT = 'I';
  static final byte COMMITTED = 'C';
  static final int HEADER = 27;
  static final int FINGERPRINT = 32;

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
    v[0] = VERSION;
    v[1] = IN_FLIGHT;
    putLong(v, 2, token);
    putLong(v, 10, since);
    putLong(v, 18, deadline);
    if (fingerprint != null) {
      v[26] = 1;
      System.arraycopy(fingerprint.toBytes(), 0, v, HEADER, FINGERPRINT);
    }
    return v;
  }

  /**
   * Decodes a stored value.
   *
   * @param v the value
   * @param where the Redis key, for the error message
   * @return the entry
   * @throws StoreException if the value is not a v1 entry
   */
  static StoredEntry decode(byte[] v, String where) {
    if (v.length < HEADER || v[0] != VERSION || (v[1] != IN_FLIGHT && v[1] != COMMITTED)) {
      throw RedisErrors.badValue(where);
    }
    int flags = v[26];
    boolean hasFingerprint = (flags & 1) != 0;
    boolean hasResult = (flags & 2) != 0;
    int resultAt = hasFingerprint ? HEADER + FINGERPRINT : HEADER;
    if (v.length < resultAt) {
      throw RedisErrors.badValue(where);
    }
    Fingerprint fingerprint =
        hasFingerprint ? Fingerprint.ofDigest(Arrays.copyOfRange(v, HEADER, resultAt)) : null;
    byte[] result = hasResult ? Arrays.copyOfRange(v, resultAt, v.length) : null;
    return new StoredEntry(
        v[1] == IN_FLIGHT ? StoredEntry.State.IN_FLIGHT : StoredEntry.State.COMMITTED,
        getLong(v, 2),
        getLong(v, 10),
        getLong(v, 18),
        fingerprint,
        result);
  }

  /**
   * Returns a long as 8 big-endian bytes.
   *
   * @param value the value
   * @return a new array
   */
  static byte[] longBytes(long value) {
    byte[] b = new byte[8];
    putLong(b, 0, value);
    return b;
  }

  static void putLong(byte[] b, int at, long value) {
    for (int i = 7; i >= 0; i--) {
      b[at + i] = (byte) value;
      value >>>= 8;
    }
  }

  static long getLong(byte[] b, int at) {
    long value = 0;
    for (int i = 0; i < 8; i++) {
      value = (value << 8) | (b[at + i] & 0xff);
    }
    return value;
  }
}
