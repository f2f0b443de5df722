package dev.idem.tck;

import dev.idem.Fingerprint;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReserveResult;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * Canonical text for store answers, so that answers compare by content (records holding a {@code
 * byte[]} compare arrays by identity) and failures read well. Large results print as their length
 * and digest.
 */
final class Describe {
  private static final int FULL_BYTES = 48;

  private Describe() {}

  static String answer(@Nullable ReserveResult r) {
    if (r == null) {
      return "null";
    }
    if (r instanceof ReserveResult.Acquired a) {
      return "Acquired[token="
          + a.token()
          + ", leaseUntil="
          + a.leaseUntilMillis()
          + ", replaced="
          + a.replaced()
          + "]";
    }
    if (r instanceof ReserveResult.Duplicate d) {
      return "Duplicate[committedAt="
          + d.committedAtMillis()
          + ", expiresAt="
          + millis(d.expiresAtMillis())
          + ", result="
          + bytes(d.result())
          + "]";
    }
    if (r instanceof ReserveResult.InFlight f) {
      return "InFlight[leaseUntil=" + f.leaseUntilMillis() + "]";
    }
    ReserveResult.Conflict c = (ReserveResult.Conflict) r;
    return "Conflict[committedAt=" + c.committedAtMillis() + "]";
  }

  static String state(@Nullable KeyState s) {
    if (s == null) {
      return "null";
    }
    if (s instanceof KeyState.Absent) {
      return "Absent";
    }
    if (s instanceof KeyState.InFlight f) {
      return "InFlight[reservedAt="
          + f.reservedAtMillis()
          + ", leaseUntil="
          + f.leaseUntilMillis()
          + ", fingerprint="
          + fingerprint(f.fingerprint())
          + "]";
    }
    KeyState.Committed c = (KeyState.Committed) s;
    return "Committed[committedAt="
        + c.committedAtMillis()
        + ", expiresAt="
        + millis(c.expiresAtMillis())
        + ", fingerprint="
        + fingerprint(c.fingerprint())
        + ", result="
        + bytes(c.result())
        + "]";
  }

  static String bytes(byte @Nullable [] b) {
    if (b == null) {
      return "null";
    }
    if (b.length <= FULL_BYTES) {
      return "<" + b.length + " bytes " + HexFormat.of().formatHex(b) + ">";
    }
    byte[] digest;
    try {
      digest = MessageDigest.getInstance("SHA-256").digest(b);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
    return "<" + b.length + " bytes, sha256 " + HexFormat.of().formatHex(digest, 0, 8) + "..>";
  }

  static String fingerprint(@Nullable Fingerprint f) {
    return f == null ? "null" : f.toHex().substring(0, 12);
  }

  static String millis(long m) {
    return m == Long.MAX_VALUE ? "never" : Long.toString(m);
  }
}
