package dev.idem.key;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * One typed component of key material. {@link KeyEncoding} writes each part with its type tag and
 * length, so parts of different types never encode alike: the text {@code "1"}, the integer {@code
 * 1}, the JSON value {@code 1}, a body field whose value is the number {@code 1}, a body field
 * whose value is the string {@code "1"} and a header whose value is {@code 1} are six different
 * keys.
 *
 * <p>Parts are immutable values with content equality; array contents are copied in and out.
 */
public sealed interface KeyPart
    permits KeyPart.Text,
        KeyPart.Bytes,
        KeyPart.Int64,
        KeyPart.Json,
        KeyPart.PrincipalChain,
        KeyPart.Digest,
        KeyPart.Field,
        KeyPart.Header {

  /**
   * Returns a text part (tag {@code 0x01}): what {@link KeyEncoding#ofString(String)} and {@link
   * KeyRule#of(java.util.function.Function)} key on.
   *
   * @param value the text; may be empty
   * @return the part
   * @throws dev.idem.KeyDerivationException if the text has a lone surrogate
   */
  static Text text(String value) {
    return new Text(value);
  }

  /**
   * Returns a bytes part (tag {@code 0x02}), e.g. a Kafka record key.
   *
   * @param value the bytes; copied
   * @return the part
   */
  static Bytes bytes(byte[] value) {
    return new Bytes(value);
  }

  /**
   * Returns an integer part (tag {@code 0x03}), e.g. a sequence number.
   *
   * @param value the integer
   * @return the part
   */
  static Int64 integer(long value) {
    return new Int64(value);
  }

  /**
   * Returns a JSON part (tag {@code 0x04}) holding the canonical form of a JSON value ({@link
   * CanonicalJson}: RFC 8785, but numbers by their exact value), so two spellings of the same value
   * are the same part.
   *
   * @param json UTF-8 JSON
   * @return the part
   * @throws InvalidJsonException if the bytes are not I-JSON
   */
  static Json json(byte[] json) {
    return new Json(json);
  }

  /**
   * Returns a principal-chain part (tag {@code 0x05}): the principal, then each delegation actor,
   * in order; empty for an anonymous event.
   *
   * @param chain the links
   * @return the part
   */
  static PrincipalChain principalChain(List<Principal> chain) {
    return new PrincipalChain(chain);
  }

  /**
   * Returns a digest part (tag {@code 0x06}): a SHA-256 digest computed elsewhere, e.g. {@link
   * CanonicalJson#sha256(byte[])} of a body.
   *
   * @param sha256 exactly 32 bytes; copied
   * @return the part
   * @throws IllegalArgumentException if the array is not 32 bytes long
   */
  static Digest digest(byte[] sha256) {
    return new Digest(sha256);
  }

  /**
   * Returns a field part (tag {@code 0x07}): the JSON value of a body field, in canonical form, so
   * it keeps its JSON type (the string {@code "123"} and the number {@code 123} are different
   * parts) and a number its exact value ({@code 1.0} and {@code 1} are one part). What {@link
   * KeyRule#field(String)} keys on; {@link FieldPath#extractJson(byte[])} reads such a value.
   *
   * @param json the value as UTF-8 JSON, e.g. {@code "A-1"} (with its quotes) or {@code 42}
   * @return the part
   * @throws InvalidJsonException if the bytes are not one I-JSON value
   */
  static Field field(byte[] json) {
    return new Field(json);
  }

  /**
   * Returns the field part of a field whose value is a JSON string: {@code stringField("A-1")} is
   * {@code field("\"A-1\"")}.
   *
   * @param value the string's characters
   * @return the part
   * @throws dev.idem.KeyDerivationException if the text has a lone surrogate
   */
  static Field stringField(String value) {
    KeyWriter.checkUnicode(value, "a field key part");
    return new Field(CanonicalStrings.quoted(value));
  }

  /**
   * Returns a header part (tag {@code 0x08}): the value of a header. What {@link
   * KeyRule#header(String)} keys on.
   *
   * @param value the header's value
   * @return the part
   * @throws dev.idem.KeyDerivationException if the text has a lone surrogate
   */
  static Header header(String value) {
    return new Header(value);
  }

  /**
   * Text, encoded as UTF-8.
   *
   * @param value the text
   */
  record Text(String value) implements KeyPart {
    /**
     * Validates the text.
     *
     * @throws dev.idem.KeyDerivationException if the text has a lone surrogate
     */
    public Text {
      KeyWriter.checkUnicode(value, "a text key part");
    }
  }

  /**
   * Raw bytes.
   *
   * @param value the bytes (a copy)
   */
  record Bytes(byte[] value) implements KeyPart {
    /** Copies the bytes in. */
    public Bytes {
      value = value.clone();
    }

    /**
     * Returns a copy of the bytes.
     *
     * @return the bytes
     */
    @Override
    public byte[] value() {
      return value.clone();
    }

    byte[] array() {
      return value;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Bytes b && Arrays.equals(b.value, value);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(value);
    }

    @Override
    public String toString() {
      return "Bytes[" + value.length + " bytes]";
    }
  }

  /**
   * A 64-bit signed integer, encoded as 8 bytes big-endian two's complement.
   *
   * @param value the integer
   */
  record Int64(long value) implements KeyPart {}

  /**
   * A JSON value in canonical form ({@link CanonicalJson}).
   *
   * @param canonical the canonical UTF-8 bytes (a copy)
   */
  record Json(byte[] canonical) implements KeyPart {
    /**
     * Canonicalizes the JSON (a no-op copy for input that is already canonical).
     *
     * @throws InvalidJsonException if the bytes are not I-JSON
     */
    public Json {
      canonical = CanonicalJson.canonicalize(canonical);
    }

    /**
     * Returns a copy of the canonical bytes.
     *
     * @return the canonical UTF-8 JSON
     */
    @Override
    public byte[] canonical() {
      return canonical.clone();
    }

    byte[] array() {
      return canonical;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Json j && Arrays.equals(j.canonical, canonical);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(canonical);
    }

    @Override
    public String toString() {
      return "Json[" + new String(canonical, StandardCharsets.UTF_8) + "]";
    }
  }

  /**
   * A principal chain: the principal, then each delegation actor, in order.
   *
   * @param principals the links (an unmodifiable copy); empty for an anonymous event
   */
  record PrincipalChain(List<Principal> principals) implements KeyPart {
    /**
     * Copies the list and validates the text of every link.
     *
     * @throws dev.idem.KeyDerivationException if an issuer or subject has a lone surrogate
     */
    public PrincipalChain {
      principals = List.copyOf(principals);
      for (Principal p : principals) {
        KeyWriter.checkUnicode(p.issuer(), "a principal's issuer");
        KeyWriter.checkUnicode(p.subject(), "a principal's subject");
      }
    }
  }

  /**
   * A SHA-256 digest.
   *
   * @param sha256 the 32 digest bytes (a copy)
   */
  record Digest(byte[] sha256) implements KeyPart {
    /**
     * Copies and checks the digest.
     *
     * @throws IllegalArgumentException if the array is not 32 bytes long
     */
    public Digest {
      if (sha256.length != 32) {
        throw new IllegalArgumentException(
            "a digest part is a 32-byte SHA-256 digest, got " + sha256.length + " bytes");
      }
      sha256 = sha256.clone();
    }

    /**
     * Returns a copy of the digest.
     *
     * @return the 32 bytes
     */
    @Override
    public byte[] sha256() {
      return sha256.clone();
    }

    byte[] array() {
      return sha256;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Digest d && Arrays.equals(d.sha256, sha256);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(sha256);
    }

    @Override
    public String toString() {
      return "Digest[" + HexFormat.of().formatHex(sha256) + "]";
    }
  }

  /**
   * The JSON value of a body field, in canonical form.
   *
   * @param json the canonical UTF-8 JSON of the value (a copy)
   */
  record Field(byte[] json) implements KeyPart {
    /**
     * Canonicalizes the value (a no-op copy for input that is already canonical).
     *
     * @throws InvalidJsonException if the bytes are not one I-JSON value
     */
    public Field {
      json = CanonicalJson.canonicalize(json);
    }

    /**
     * Returns a copy of the canonical bytes.
     *
     * @return the canonical UTF-8 JSON of the value
     */
    @Override
    public byte[] json() {
      return json.clone();
    }

    byte[] array() {
      return json;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Field f && Arrays.equals(f.json, json);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(json);
    }

    @Override
    public String toString() {
      return "Field[" + new String(json, StandardCharsets.UTF_8) + "]";
    }
  }

  /**
   * The value of a header.
   *
   * @param value the header's value
   */
  record Header(String value) implements KeyPart {
    /**
     * Validates the text.
     *
     * @throws dev.idem.KeyDerivationException if the text has a lone surrogate
     */
    public Header {
      KeyWriter.checkUnicode(value, "a header key part");
    }
  }
}
