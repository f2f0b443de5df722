package dev.idem.server.signature;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The HMAC keys of one webhook source: one per configured secret (several while a secret is
 * rolled). A request matches if any signature it carries equals the MAC under any key; each
 * comparison is constant-time ({@link MessageDigest#isEqual}), and every signature is compared with
 * a key's MAC before the next key is tried.
 */
final class SigningKeys {
  private final List<HmacSha256> keys;

  private SigningKeys(List<HmacSha256> keys) {
    this.keys = List.copyOf(keys);
  }

  /** Keys that are the secrets' UTF-8 bytes (Stripe, GitHub, Shopify). */
  static SigningKeys utf8(List<String> secrets) {
    List<HmacSha256> keys = new ArrayList<>(secrets.size());
    for (String s : secrets) {
      keys.add(new HmacSha256(s.getBytes(StandardCharsets.UTF_8)));
    }
    return new SigningKeys(keys);
  }

  /** Keys given as bytes (Standard Webhooks: the decoded secrets). */
  static SigningKeys raw(List<byte[]> secrets) {
    List<HmacSha256> keys = new ArrayList<>(secrets.size());
    for (byte[] s : secrets) {
      keys.add(new HmacSha256(s));
    }
    return new SigningKeys(keys);
  }

  /**
   * Returns whether any of {@code given} is the MAC of {@code prefix + body} under any key.
   *
   * @param prefix bytes signed before the body, or null
   * @param body the raw body
   * @param given the signatures the request carries, decoded; none of them null
   * @return whether one matches
   */
  boolean matchesAny(byte @Nullable [] prefix, byte[] body, List<byte[]> given) {
    for (HmacSha256 key : keys) {
      byte[] expected = key.mac(prefix, body);
      boolean matched = false;
      for (byte[] signature : given) {
        matched |= MessageDigest.isEqual(expected, signature);
      }
      if (matched) {
        return true;
      }
    }
    return false;
  }
}
