package dev.idem.key;

import dev.idem.DedupKey;
import dev.idem.KeyDerivationException;

/** The default key: principal chain plus SHA-256 of the canonical JSON body. */
final class DefaultKeyRule implements KeyRule {
  static final DefaultKeyRule INSTANCE = new DefaultKeyRule();

  private static final String GIVE_A_KEY =
      "; give a key: dedup.key (a field path, [paths], or header(\"X-Id\"))";

  private DefaultKeyRule() {}

  @Override
  public DedupKey derive(InboundEvent event) {
    CanonicalBody read = event.canonicalBody();
    if (read != null) {
      KeyWriter w = KeyWriter.get().start(2, true);
      w.principals(event.principalChain());
      w.bytes(KeyWriter.DIGEST, read.digest());
      return w.key();
    }
    byte[] body = event.body();
    if (body == null || body.length == 0) {
      throw new KeyDerivationException(
          "the body is not JSON (the event has "
              + (body == null ? "no" : "an empty")
              + " body)"
              + GIVE_A_KEY);
    }
    JsonCanonicalizer c = JsonCanonicalizer.get();
    try {
      c.sha256(body, c.digest);
    } catch (NumberOutOfRangeException e) {
      throw e; // it says what to send
    } catch (InvalidJsonException e) {
      throw new KeyDerivationException(
          "the body is not JSON (" + e.problem() + ")" + GIVE_A_KEY, e);
    } finally {
      c.trim();
    }
    KeyWriter w = KeyWriter.get().start(2, true);
    w.principals(event.principalChain());
    w.bytes(KeyWriter.DIGEST, c.digest);
    return w.key();
  }

  @Override
  public String toString() {
    return "defaultKey (principal chain + SHA-256 of the canonical JSON body)";
  }
}
