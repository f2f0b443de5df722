package dev.idem.server.signature;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** Test helpers: header lookups as the HTTP layer gives them, and an independent HMAC. */
final class Requests {
  private Requests() {}

  /** A case-insensitive header lookup, as the ingress passes it. */
  static Function<String, String> headers(String... namesAndValues) {
    Map<String, String> map = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    for (int i = 0; i < namesAndValues.length; i += 2) {
      map.put(namesAndValues[i], namesAndValues[i + 1]);
    }
    return map::get;
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** HMAC-SHA256 with the JDK directly, not through the code under test. */
  static byte[] hmac(byte[] key, String content) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(utf8(content));
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  static String hex(byte[] b) {
    return HexFormat.of().formatHex(b);
  }

  static String base64(byte[] b) {
    return Base64.getEncoder().encodeToString(b);
  }
}
