package dev.idem.store.redis;

import dev.idem.DedupKey;
import dev.idem.Scope;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The stable key layout: {@code <prefix><scope>:<key hex>}, e.g. {@code
 * idem:shop-orders/dedup:9f86d081...} (64 lowercase hex digits). A scope has no {@code :}, so the
 * scope part is unambiguous; no hash tag is needed because every operation touches one key.
 */
final class KeyLayout {
  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
  private static final int HEX_LENGTH = 64;

  private final String prefix;
  private final ConcurrentHashMap<Scope, byte[]> scopePrefixes = new ConcurrentHashMap<>();

  KeyLayout(String prefix) {
    this.prefix = prefix;
  }

  /**
   * Returns the Redis key of one dedup key.
   *
   * @param scope the scope
   * @param key the key
   * @return {@code <prefix><scope>:<hex>} as UTF-8
   */
  byte[] key(Scope scope, DedupKey key) {
    byte[] head = scopePrefixes.computeIfAbsent(scope, this::scopePrefix);
    byte[] out = new byte[head.length + HEX_LENGTH];
    System.arraycopy(head, 0, out, 0, head.length);
    int at = head.length;
    for (int w = 0; w < 4; w++) {
      long word = key.word(w);
      for (int shift = 60; shift >= 0; shift -= 4) {
        out[at++] = HEX[(int) (word >>> shift) & 0xf];
      }
    }
    return out;
  }

  /**
   * Returns the SCAN pattern that matches exactly the keys of one scope: the prefix (glob
   * characters escaped), the scope, {@code :}, and 64 single-character wildcards, so that the keys
   * of a longer prefix that happens to start with this one's scope never match.
   *
   * @param scope the scope
   * @return the pattern as UTF-8
   */
  byte[] scanPattern(Scope scope) {
    StringBuilder p = new StringBuilder(prefix.length() + 80);
    for (int i = 0; i < prefix.length(); i++) {
      char c = prefix.charAt(i);
      if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
        p.append('\\');
      }
      p.append(c);
    }
    p.append(scope).append(':').append("?".repeat(HEX_LENGTH));
    return p.toString().getBytes(StandardCharsets.UTF_8);
  }

  private byte[] scopePrefix(Scope scope) {
    return (prefix + scope + ":").getBytes(StandardCharsets.UTF_8);
  }

  static String text(byte[] key) {
    return new String(key, StandardCharsets.UTF_8);
  }
}
