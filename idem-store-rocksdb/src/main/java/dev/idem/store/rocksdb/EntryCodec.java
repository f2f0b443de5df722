package dev.idem.store.rocksdb;

import dev.idem.Fingerprint;
import dev.idem.spi.StoredEntry;
import dev.idem.spi.StoredEntry.State;
import java.util.Arrays;

/**
 * The value stored under an entry key, format version 1:
 *
 * <pre>
 * byte 0      version (1)
 * byte 1      flags: 0x01 committed (else in flight), 0x02 fingerprint present, 0x04 result present,
 *             0x08 no deadline (kept forever), 0x10 deadline stored absolute (not as a delta)
 * bytes 2-9   token, big-endian
 * bytes 10-17 since (ms since the epoch), big-endian
 * then        deadline: nothing (0x08); 8 bytes big-endian (0x10); else unsigned varint of
 *             deadline - since
 * then        fingerprint, 32 bytes (0x02)
 * then        result: every remaining byte (0x04; may be empty)
 * </pre>
 *
 * <p>A reader rejects any other version with a {@link MalformedValueException}, so a store written
 * by a newer format is never misread.
 */
final class EntryCodec {
  static final byte VERSION = 1;

  static final int COMMITTED = 0x01;
  static final int HAS_FINGERPRINT = 0x02;
  static final int HAS_RESULT = 0x04;
  static final int NO_DEADLINE = 0x08;
  static final int ABSOLUTE_DEADLINE = 0x10;
  private static final int KNOWN_FLAGS = 0x1F;

  private static final int HEADER = 18;

  private EntryCodec() {}

  static byte[] encode(StoredEntry e) {
    int flags = e.state() == State.COMMITTED ? COMMITTED : 0;
    long delta = e.deadlineMillis() - e.sinceMillis();
    int deadlineSize;
    if (e.deadlineMillis() == Long.MAX_VALUE) {
      flags |= NO_DEADLINE;
      deadlineSize = 0;
    } else if (delta < 0 || e.deadlineMillis() < e.sinceMillis()) {
      flags |= ABSOLUTE_DEADLINE;
      deadlineSize = 8;
    } else {
      deadlineSize = Bytes.varLongSize(delta);
    }
    Fingerprint fp = e.fingerprint();
    byte[] result = e.result();
    if (fp != null) {
      flags |= HAS_FINGERPRINT;
    }
    if (result != null) {
      flags |= HAS_RESULT;
    }
    int size =
        HEADER
            + deadlineSize
            + (fp != null ? ScopeKeys.DIGEST_BYTES : 0)
            + (result != null ? result.length : 0);
    byte[] out = new byte[size];
    out[0] = VERSION;
    out[1] = (byte) flags;
    Bytes.putLong(out, 2, e.token());
    Bytes.putLong(out, 10, e.sinceMillis());
    int at = HEADER;
    if ((flags & ABSOLUTE_DEADLINE) != 0) {
      Bytes.putLong(out, at, e.deadlineMillis());
      at += 8;
    } else if ((flags & NO_DEADLINE) == 0) {
      at = Bytes.putVarLong(out, at, delta);
    }
    if (fp != null) {
      byte[] digest = fp.toBytes();
      System.arraycopy(digest, 0, out, at, digest.length);
      at += digest.length;
    }
    if (result != null) {
      System.arraycopy(result, 0, out, at, result.length);
    }
    return out;
  }

  static StoredEntry decode(byte[] in) {
    if (in.length > 0 && in[0] != VERSION) {
      throw new MalformedValueException(
          "entry value has format version " + in[0] + "; this Idem reads version " + VERSION);
    }
    if (in.length < HEADER) {
      throw new MalformedValueException("entry value is " + in.length + " bytes, too short");
    }
    int flags = in[1] & 0xFF;
    if ((flags & ~KNOWN_FLAGS) != 0) {
      throw new MalformedValueException(
          "entry value has unknown flags 0x" + Integer.toHexString(flags));
    }
    long token = Bytes.getLong(in, 2);
    long since = Bytes.getLong(in, 10);
    int at = HEADER;
    long deadline;
    if ((flags & NO_DEADLINE) != 0) {
      deadline = Long.MAX_VALUE;
    } else if ((flags & ABSOLUTE_DEADLINE) != 0) {
      need(in, at, 8);
      deadline = Bytes.getLong(in, at);
      at += 8;
    } else {
      long delta = 0;
      int shift = 0;
      while (true) {
        need(in, at, 1);
        byte b = in[at++];
        delta |= (long) (b & 0x7F) << shift;
        if (b >= 0) {
          break;
        }
        shift += 7;
        if (shift > 63) {
          throw new MalformedValueException("entry value has an overlong deadline varint");
        }
      }
      deadline = since + delta;
    }
    Fingerprint fp = null;
    if ((flags & HAS_FINGERPRINT) != 0) {
      need(in, at, ScopeKeys.DIGEST_BYTES);
      fp = Fingerprint.ofDigest(Arrays.copyOfRange(in, at, at + ScopeKeys.DIGEST_BYTES));
      at += ScopeKeys.DIGEST_BYTES;
    }
    byte[] result = null;
    if ((flags & HAS_RESULT) != 0) {
      result = Arrays.copyOfRange(in, at, in.length);
    } else if (at != in.length) {
      throw new MalformedValueException(
          "entry value has " + (in.length - at) + " trailing bytes and no result flag");
    }
    State state = (flags & COMMITTED) != 0 ? State.COMMITTED : State.IN_FLIGHT;
    return new StoredEntry(state, token, since, deadline, fp, result);
  }

  private static void need(byte[] in, int at, int n) {
    if (in.length - at < n) {
      throw new MalformedValueException("entry value is truncated at byte " + at);
    }
  }

  /** A stored value this version cannot read; the store turns it into a StoreException. */
  static final class MalformedValueException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MalformedValueException(String message) {
      super(message);
    }
  }
}
