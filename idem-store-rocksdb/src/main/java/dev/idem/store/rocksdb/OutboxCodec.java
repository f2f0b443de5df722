package dev.idem.store.rocksdb;

import dev.idem.DedupKey;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.OutboxRecord;
import dev.idem.store.rocksdb.EntryCodec.MalformedValueException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * Keys and values of the {@code outbox} and {@code dead_letters} column families, format version 1.
 *
 * <pre>
 * key          = queue length(2, big-endian) | UTF-8 queue | id(8, big-endian)
 * outbox value = version(1) | flags(1: 0x01 last error present, 0x02 claimed,
 *                  0x04 ordering key present) | attempts(4) | enqueuedAt(8)
 *                | availableAt(8) | key digest(32) | [error length(4) | UTF-8 error]
 *                | [ordering key length(4) | UTF-8 ordering key] | payload
 * dead letter  = version(1: 1, or 2 with an ordering key) | attempts(4) | enqueuedAt(8)
 *                | deadAt(8) | key digest(32) | reason length(4) | UTF-8 reason
 *                | [version 2: ordering key length(4) | UTF-8 ordering key] | payload
 * </pre>
 *
 * <p>{@code availableAt} is when the entry may be claimed next: 0 for a new entry, the end of the
 * claim for a claimed one (flag {@code 0x02}), the retry time for a rescheduled one. Values written
 * before the flag existed read as not claimed, and values without flag {@code 0x04} (all written
 * before ordering keys) as having no ordering key. A dead letter keeps the ordering key its entry
 * had (version 2, written only for an entry with one, so that a dead letter without one reads the
 * same in earlier versions), so a requeue puts it back into its key's mailbox.
 */
final class OutboxCodec {
  static final byte VERSION = 1;
  private static final byte DEAD_WITH_ORDERING_KEY = 2;
  private static final int HAS_ERROR = 0x01;
  private static final int CLAIMED = 0x02;
  private static final int HAS_ORDERING_KEY = 0x04;
  private static final int OUTBOX_HEADER = 22 + ScopeKeys.DIGEST_BYTES;
  private static final int DEAD_HEADER = 21 + ScopeKeys.DIGEST_BYTES;
  static final int MAX_QUEUE_BYTES = 0xFFFF;

  private OutboxCodec() {}

  /** The key prefix of one queue; every key of the queue lies in {@code [prefix, upper)}. */
  static byte[] queuePrefix(String queue) {
    byte[] name = queue.getBytes(StandardCharsets.UTF_8);
    if (name.length > MAX_QUEUE_BYTES) {
      throw new IllegalArgumentException(
          "outbox queue name is "
              + name.length
              + " bytes in UTF-8; the most is "
              + MAX_QUEUE_BYTES);
    }
    byte[] out = new byte[2 + name.length];
    out[0] = (byte) (name.length >>> 8);
    out[1] = (byte) name.length;
    System.arraycopy(name, 0, out, 2, name.length);
    return out;
  }

  /** The first key past every key of the queue with this prefix. */
  static byte[] queueUpper(byte[] prefix) {
    // Prefixes are length-prefixed, so every key of the queue is prefix + 8 id bytes.
    byte[] out = Arrays.copyOf(prefix, prefix.length + 9);
    Arrays.fill(out, prefix.length, out.length, (byte) 0xFF);
    return out;
  }

  static byte[] key(byte[] prefix, long id) {
    byte[] out = Arrays.copyOf(prefix, prefix.length + 8);
    Bytes.putLong(out, prefix.length, id);
    return out;
  }

  static long id(byte[] key) {
    return Bytes.getLong(key, key.length - 8);
  }

  /** An outbox entry as stored. */
  record Entry(
      int attempts,
      long enqueuedAtMillis,
      long availableAtMillis,
      DedupKey key,
      @Nullable String lastError,
      byte[] payload,
      boolean claimed,
      @Nullable String orderingKey) {

    /** An entry without an ordering key that is not claimed. */
    Entry(
        int attempts,
        long enqueuedAtMillis,
        long availableAtMillis,
        DedupKey key,
        @Nullable String lastError,
        byte[] payload) {
      this(attempts, enqueuedAtMillis, availableAtMillis, key, lastError, payload, false, null);
    }

    /** This entry claimed once more, until {@code untilMillis}. */
    Entry claimedUntil(long untilMillis) {
      return new Entry(
          attempts + 1, enqueuedAtMillis, untilMillis, key, lastError, payload, true, orderingKey);
    }

    /** This entry, no longer claimed, claimable from {@code atMillis}, with an error if given. */
    Entry availableAt(long atMillis, @Nullable String error) {
      return new Entry(
          attempts, enqueuedAtMillis, atMillis, key, error, payload, false, orderingKey);
    }

    OutboxRecord toRecord(long id, String queue) {
      return new OutboxRecord(id, queue, key, payload, attempts, enqueuedAtMillis, lastError);
    }
  }

  static byte[] encode(Entry e) {
    byte[] error = e.lastError() == null ? null : e.lastError().getBytes(StandardCharsets.UTF_8);
    byte[] ordering =
        e.orderingKey() == null ? null : e.orderingKey().getBytes(StandardCharsets.UTF_8);
    byte[] out =
        new byte
            [OUTBOX_HEADER
                + (error == null ? 0 : 4 + error.length)
                + (ordering == null ? 0 : 4 + ordering.length)
                + e.payload().length];
    out[0] = VERSION;
    out[1] =
        (byte)
            ((error == null ? 0 : HAS_ERROR)
                | (e.claimed() ? CLAIMED : 0)
                | (ordering == null ? 0 : HAS_ORDERING_KEY));
    Bytes.putInt(out, 2, e.attempts());
    Bytes.putLong(out, 6, e.enqueuedAtMillis());
    Bytes.putLong(out, 14, e.availableAtMillis());
    putDigest(out, 22, e.key());
    int at = OUTBOX_HEADER;
    if (error != null) {
      Bytes.putInt(out, at, error.length);
      System.arraycopy(error, 0, out, at + 4, error.length);
      at += 4 + error.length;
    }
    if (ordering != null) {
      Bytes.putInt(out, at, ordering.length);
      System.arraycopy(ordering, 0, out, at + 4, ordering.length);
      at += 4 + ordering.length;
    }
    System.arraycopy(e.payload(), 0, out, at, e.payload().length);
    return out;
  }

  static Entry decode(byte[] in) {
    if (in.length < OUTBOX_HEADER || in[0] != VERSION) {
      throw new MalformedValueException(
          "outbox value of "
              + in.length
              + " bytes is not format version "
              + VERSION
              + (in.length > 0 ? " (it says " + in[0] + ")" : ""));
    }
    int at = OUTBOX_HEADER;
    String error = null;
    if ((in[1] & HAS_ERROR) != 0) {
      int length = lengthAt(in, at);
      error = new String(in, at + 4, length, StandardCharsets.UTF_8);
      at += 4 + length;
    }
    String ordering = null;
    if ((in[1] & HAS_ORDERING_KEY) != 0) {
      int length = lengthAt(in, at);
      ordering = new String(in, at + 4, length, StandardCharsets.UTF_8);
      at += 4 + length;
    }
    return new Entry(
        Bytes.getInt(in, 2),
        Bytes.getLong(in, 6),
        Bytes.getLong(in, 14),
        digestAt(in, 22),
        error,
        Arrays.copyOfRange(in, at, in.length),
        (in[1] & CLAIMED) != 0,
        ordering);
  }

  /** The ordering key of an encoded outbox value (null if none), without copying the payload. */
  static @Nullable String orderingKey(byte[] in) {
    if (in.length < OUTBOX_HEADER || in[0] != VERSION) {
      throw new MalformedValueException("outbox value is not format version " + VERSION);
    }
    if ((in[1] & HAS_ORDERING_KEY) == 0) {
      return null;
    }
    int at = OUTBOX_HEADER;
    if ((in[1] & HAS_ERROR) != 0) {
      at += 4 + lengthAt(in, at);
    }
    int length = lengthAt(in, at);
    return new String(in, at + 4, length, StandardCharsets.UTF_8);
  }

  /** Whether an encoded outbox value is claimed and its claim runs past {@code nowMillis}. */
  static boolean claimedPast(byte[] in, long nowMillis) {
    return (in[1] & CLAIMED) != 0 && Bytes.getLong(in, 14) > nowMillis;
  }

  /** The claimable-from time of an encoded outbox value, without decoding the rest. */
  static long availableAt(byte[] in) {
    if (in.length < OUTBOX_HEADER || in[0] != VERSION) {
      throw new MalformedValueException("outbox value is not format version " + VERSION);
    }
    return Bytes.getLong(in, 14);
  }

  static byte[] encodeDead(Entry e, long deadAtMillis, String reason) {
    byte[] why = reason.getBytes(StandardCharsets.UTF_8);
    byte[] ordering =
        e.orderingKey() == null ? null : e.orderingKey().getBytes(StandardCharsets.UTF_8);
    int payloadAt = DEAD_HEADER + 4 + why.length + (ordering == null ? 0 : 4 + ordering.length);
    byte[] out = new byte[payloadAt + e.payload().length];
    out[0] = ordering == null ? VERSION : DEAD_WITH_ORDERING_KEY;
    Bytes.putInt(out, 1, e.attempts());
    Bytes.putLong(out, 5, e.enqueuedAtMillis());
    Bytes.putLong(out, 13, deadAtMillis);
    putDigest(out, 21, e.key());
    Bytes.putInt(out, DEAD_HEADER, why.length);
    System.arraycopy(why, 0, out, DEAD_HEADER + 4, why.length);
    if (ordering != null) {
      int at = DEAD_HEADER + 4 + why.length;
      Bytes.putInt(out, at, ordering.length);
      System.arraycopy(ordering, 0, out, at + 4, ordering.length);
    }
    System.arraycopy(e.payload(), 0, out, payloadAt, e.payload().length);
    return out;
  }

  static DeadLetter decodeDead(long id, String queue, byte[] in) {
    checkDead(in);
    int length = lengthAt(in, DEAD_HEADER);
    int payloadAt = DEAD_HEADER + 4 + length;
    if (in[0] == DEAD_WITH_ORDERING_KEY) {
      payloadAt += 4 + lengthAt(in, payloadAt);
    }
    return new DeadLetter(
        id,
        queue,
        digestAt(in, 21),
        Arrays.copyOfRange(in, payloadAt, in.length),
        Bytes.getInt(in, 1),
        Bytes.getLong(in, 5),
        Bytes.getLong(in, 13),
        new String(in, DEAD_HEADER + 4, length, StandardCharsets.UTF_8));
  }

  /** The ordering key an encoded dead letter's entry had (null if none). */
  static @Nullable String deadOrderingKey(byte[] in) {
    checkDead(in);
    if (in[0] != DEAD_WITH_ORDERING_KEY) {
      return null;
    }
    int at = DEAD_HEADER + 4 + lengthAt(in, DEAD_HEADER);
    int length = lengthAt(in, at);
    return new String(in, at + 4, length, StandardCharsets.UTF_8);
  }

  private static void checkDead(byte[] in) {
    if (in.length < DEAD_HEADER + 4 || (in[0] != VERSION && in[0] != DEAD_WITH_ORDERING_KEY)) {
      throw new MalformedValueException(
          "dead-letter value is not format version " + VERSION + " or " + DEAD_WITH_ORDERING_KEY);
    }
  }

  private static int lengthAt(byte[] in, int at) {
    if (in.length - at < 4) {
      throw new MalformedValueException("outbox value is truncated at byte " + at);
    }
    int length = Bytes.getInt(in, at);
    if (length < 0 || length > in.length - at - 4) {
      throw new MalformedValueException(
          "outbox value has a text length " + length + " past its end");
    }
    return length;
  }

  private static void putDigest(byte[] out, int offset, DedupKey key) {
    for (int i = 0; i < 4; i++) {
      Bytes.putLong(out, offset + 8 * i, key.word(i));
    }
  }

  private static DedupKey digestAt(byte[] in, int offset) {
    return DedupKey.ofWords(
        Bytes.getLong(in, offset),
        Bytes.getLong(in, offset + 8),
        Bytes.getLong(in, offset + 16),
        Bytes.getLong(in, offset + 24));
  }
}
