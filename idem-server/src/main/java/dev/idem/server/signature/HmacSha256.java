package dev.idem.server.signature;

import java.security.GeneralSecurityException;
import java.util.concurrent.atomic.AtomicReferenceArray;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * HMAC-SHA256 with one secret, safe and cheap to call from many threads.
 *
 * <p>A {@link Mac} is stateful, so each call needs its own. Creating one ({@code Mac.getInstance}
 * plus {@code init}) costs a provider lookup and the key schedule; cloning the initialised
 * prototype costs a small copy. Idle instances wait in a small striped array indexed by the calling
 * thread's id: a thread usually takes back the instance it returned, with one atomic swap and no
 * allocation. Unlike a {@code ThreadLocal}, this also works for virtual threads (one per request),
 * which would otherwise build a new {@code Mac} every time.
 */
final class HmacSha256 {
  private static final String ALGORITHM = "HmacSHA256";

  private final SecretKeySpec key;
  private final Mac prototype;
  private final AtomicReferenceArray<@Nullable Mac> idle;
  private final int mask;

  /**
   * Prepares the HMAC.
   *
   * @param key the secret's bytes; not empty
   */
  HmacSha256(byte[] key) {
    if (key.length == 0) {
      throw new IllegalArgumentException("HMAC key must not be empty");
    }
    this.key = new SecretKeySpec(key, ALGORITHM);
    try {
      prototype = Mac.getInstance(ALGORITHM);
      prototype.init(this.key);
    } catch (GeneralSecurityException e) {
      // Every Java runtime ships HmacSHA256 (it is a required algorithm).
      throw new IllegalStateException("HmacSHA256 is not available in this Java runtime", e);
    }
    int stripes =
        Integer.highestOneBit(Math.max(4, Runtime.getRuntime().availableProcessors()) * 4);
    idle = new AtomicReferenceArray<>(stripes);
    mask = stripes - 1;
  }

  /**
   * Computes the HMAC of {@code prefix} followed by {@code body}, without concatenating them.
   *
   * @param prefix bytes signed before the body, or null
   * @param body the raw body
   * @return the 32-byte MAC
   */
  byte[] mac(byte @Nullable [] prefix, byte[] body) {
    int slot = slot();
    Mac mac = idle.getAndSet(slot, null);
    if (mac == null) {
      mac = copy();
    }
    if (prefix != null) {
      mac.update(prefix);
    }
    byte[] result = mac.doFinal(body); // doFinal also resets the Mac for its next use
    idle.lazySet(slot, mac);
    return result;
  }

  private int slot() {
    @SuppressWarnings("deprecation") // getId() is the only id on Java 17; threadId() is Java 19+
    long id = Thread.currentThread().getId();
    return (int) ((id * 0x9E3779B97F4A7C15L) >>> 40) & mask;
  }

  private Mac copy() {
    try {
      return (Mac) prototype.clone();
    } catch (CloneNotSupportedException e) {
      // A provider whose Mac cannot be cloned: initialise a fresh one with the same key.
      try {
        Mac fresh = Mac.getInstance(ALGORITHM, prototype.getProvider());
        fresh.init(key);
        return fresh;
      } catch (GeneralSecurityException inner) {
        throw new IllegalStateException("cannot create an HmacSHA256 instance", inner);
      }
    }
  }
}
