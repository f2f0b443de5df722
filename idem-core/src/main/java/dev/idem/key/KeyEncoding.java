package dev.idem.key;

import dev.idem.DedupKey;
import dev.idem.KeyDerivationException;
import java.util.List;

/**
 * Turns key material into a {@link DedupKey}: SHA-256 over an unambiguous, versioned encoding of
 * typed components ({@link KeyPart}s). Every key Idem derives goes through here.
 *
 * <h2>Format, version 2</h2>
 *
 * <p><b>Stable on-disk and on-wire format: stores keep only the digest, so changing a single byte
 * of it changes every key and silently forgets every stored one.</b> A change needs a new version
 * byte and a migration story; the fixed test vectors in {@code KeyEncodingTest} fail on any change.
 *
 * <pre>
 * offset  size  content
 * 0       3     magic: 0x49 0x44 0x4B ("IDK")
 * 3       1     format version: 0x02
 * 4       4     number of components, unsigned 32-bit big-endian
 * 8       ...   the components, in order, each:
 *                 1 byte   type tag
 *                 4 bytes  payload length in bytes, unsigned 32-bit big-endian
 *                 n bytes  payload
 * </pre>
 *
 * <table class="striped">
 *   <caption>Type tags and payloads</caption>
 *   <thead>
 *     <tr><th>tag</th><th>part</th><th>payload</th></tr>
 *   </thead>
 *   <tbody>
 *     <tr><td>0x01</td><td>{@link KeyPart.Text}</td><td>the text in UTF-8 (no BOM, no Unicode
 *         normalisation)</td></tr>
 *     <tr><td>0x02</td><td>{@link KeyPart.Bytes}</td><td>the bytes</td></tr>
 *     <tr><td>0x03</td><td>{@link KeyPart.Int64}</td><td>8 bytes, two's complement,
 *         big-endian</td></tr>
 *     <tr><td>0x04</td><td>{@link KeyPart.Json}</td><td>the canonical form, UTF-8 ({@link
 *         CanonicalJson}: RFC 8785, but numbers by their exact decimal value)</td></tr>
 *     <tr><td>0x05</td><td>{@link KeyPart.PrincipalChain}</td><td>number of links (unsigned
 *         32-bit big-endian), then per link: issuer length (unsigned 32-bit big-endian), issuer in
 *         UTF-8, subject length (unsigned 32-bit big-endian), subject in UTF-8</td></tr>
 *     <tr><td>0x06</td><td>{@link KeyPart.Digest}</td><td>the 32 bytes of a SHA-256
 *         digest</td></tr>
 *     <tr><td>0x07</td><td>{@link KeyPart.Field}</td><td>a body field's JSON value in canonical
 *         form, UTF-8: a string with its quotes and canonical escapes ({@code "A-1"}), a number by
 *         its exact value ({@code 820982911946154508}), {@code true}, {@code false}, an object or
 *         array as its canonical JSON</td></tr>
 *     <tr><td>0x08</td><td>{@link KeyPart.Header}</td><td>a header's value in UTF-8</td></tr>
 *   </tbody>
 * </table>
 *
 * <p>The key is the SHA-256 of those bytes. Example: the text {@code "ab"} alone encodes as {@code
 * 49444b02 00000001 01 00000002 6162}; a field whose value is the number {@code 42} as {@code
 * 49444b02 00000001 07 00000002 3432}, and one whose value is the string {@code "42"} as {@code
 * 49444b02 00000001 07 00000004 22343222}.
 *
 * <p>Version history. Version 1 wrote a field's value as bare text (the number {@code 123}, the
 * string {@code "123"} and {@code 123.0} were one key) and read numbers through an IEEE-754 double
 * (820982911946154508 and 820982911946154509 were one key); version 2 keeps a field's JSON type and
 * every number's exact value. The versions share no keys: every key changes, so keys stored under
 * version 1 are not found after an upgrade (an event seen before it is new once more); see the
 * upgrade note in {@code docs/guarantees.md}.
 *
 * <p>Why it is unambiguous: the header is fixed; the count says how many components follow; each
 * component states its type and exact length, and the nested fields of a principal chain are
 * length-prefixed too. So the bytes parse back to exactly one list of typed components: {@code
 * ["ab","c"]} and {@code ["a","bc"]}, the text {@code "1"} and the integer {@code 1}, a field
 * holding the number {@code 1} and one holding the string {@code "1"}, and {@code []}, {@code [""]}
 * and {@code [json null]} are all different keys. Text with a lone surrogate has no UTF-8 form and
 * is rejected rather than replaced, so two different strings never share bytes.
 *
 * <p>Hashing feeds SHA-256 from a per-thread buffer, and large byte payloads directly; nothing is
 * copied needlessly. Thread-safe.
 */
public final class KeyEncoding {
  /** The format version this class writes (byte 3 of every encoding). */
  public static final byte VERSION = 2;

  private KeyEncoding() {}

  /**
   * Returns the key of one string, e.g. an order id or an {@code Idempotency-Key} value: the key of
   * {@code [KeyPart.text(key)]}.
   *
   * @param key the key text
   * @return the key
   * @throws KeyDerivationException if the text is blank (a blank key is an error, never a key) or
   *     has a lone surrogate
   */
  public static DedupKey ofString(String key) {
    if (key.isBlank()) {
      throw new KeyDerivationException(
          "blank key: a key must not be empty or whitespace; give the event's identity");
    }
    KeyWriter w = KeyWriter.get().start(1, true);
    w.text(KeyWriter.TEXT, key);
    return w.key();
  }

  /**
   * Returns the key of a list of parts.
   *
   * @param parts the components, in order; may be empty
   * @return SHA-256 of {@link #encode(List)}
   */
  public static DedupKey of(KeyPart... parts) {
    return of(List.of(parts));
  }

  /**
   * Returns the key of a list of parts.
   *
   * @param parts the components, in order; may be empty
   * @return SHA-256 of {@link #encode(List)}
   */
  public static DedupKey of(List<? extends KeyPart> parts) {
    KeyWriter w = KeyWriter.get().start(parts.size(), true);
    for (KeyPart part : parts) {
      w.part(part);
    }
    return w.key();
  }

  /**
   * Returns the encoded bytes (what {@link #of(List)} hashes), e.g. to store or to inspect.
   *
   * @param parts the components, in order; may be empty
   * @return the encoding, a new array
   */
  public static byte[] encode(KeyPart... parts) {
    return encode(List.of(parts));
  }

  /**
   * Returns the encoded bytes (what {@link #of(List)} hashes), e.g. to store or to inspect.
   *
   * @param parts the components, in order; may be empty
   * @return the encoding, a new array
   */
  public static byte[] encode(List<? extends KeyPart> parts) {
    KeyWriter w = KeyWriter.get().start(parts.size(), false);
    for (KeyPart part : parts) {
      w.part(part);
    }
    return w.toByteArray();
  }
}
