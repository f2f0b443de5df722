package dev.idem.key;

import dev.idem.DedupKey;
import dev.idem.KeyDerivationException;
import dev.idem.internal.Sha256Words;
import java.security.DigestException;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Writes the {@link KeyEncoding} format, either into bytes or straight into SHA-256. Small fields
 * and text are gathered in a reusable buffer; a large byte payload is fed to the digest directly
 * instead of being copied. Not thread-safe: each thread uses its own instance through {@link
 * #get()}, and callers compute every component's value before they {@link #start} writing.
 */
final class KeyWriter {
  static final byte[] MAGIC = {'I', 'D', 'K', KeyEncoding.VERSION};

  static final int TEXT = 0x01;
  static final int BYTES = 0x02;
  static final int INT64 = 0x03;
  static final int JSON = 0x04;
  static final int PRINCIPAL_CHAIN = 0x05;
  static final int DIGEST = 0x06;
  static final int FIELD = 0x07;
  static final int HEADER = 0x08;

  /** Byte payloads longer than this go to the digest without a copy. */
  private static final int DIRECT = 256;

  private static final int INITIAL = 512;
  private static final int MAX_RETAINED = 1 << 16;

  private static final ThreadLocal<KeyWriter> LOCAL = ThreadLocal.withInitial(KeyWriter::new);

  private byte[] buf = new byte[INITIAL];
  private int len;
  private boolean hashing;

  /** False while {@link #sha} may hold input of an encoding that did not finish (it threw). */
  private boolean digestClean = true;

  private final MessageDigest sha = Sha256Words.newDigest();
  private final byte[] digest = new byte[32];

  private KeyWriter() {}

  static KeyWriter get() {
    return LOCAL.get();
  }

  /**
   * Starts an encoding of {@code count} components.
   *
   * @param hashing true to feed SHA-256 (finish with {@link #key()}), false to collect the bytes
   *     (finish with {@link #toByteArray()})
   */
  KeyWriter start(int count, boolean hashing) {
    this.hashing = hashing;
    len = 0;
    if (!digestClean) {
      sha.reset(); // digest() resets it after a finished encoding
      digestClean = true;
    }
    ensure(8);
    System.arraycopy(MAGIC, 0, buf, 0, 4);
    len = 4;
    putInt(count);
    return this;
  }

  /** Writes one part. */
  void part(KeyPart part) {
    if (part instanceof KeyPart.Text t) {
      text(TEXT, t.value());
    } else if (part instanceof KeyPart.Field f) {
      bytes(FIELD, f.array());
    } else if (part instanceof KeyPart.Header h) {
      text(HEADER, h.value());
    } else if (part instanceof KeyPart.Bytes b) {
      bytes(BYTES, b.array());
    } else if (part instanceof KeyPart.Json j) {
      bytes(JSON, j.array());
    } else if (part instanceof KeyPart.Digest d) {
      bytes(DIGEST, d.array());
    } else if (part instanceof KeyPart.Int64 i) {
      int64(i.value());
    } else if (part instanceof KeyPart.PrincipalChain c) {
      principals(c.principals());
    } else {
      throw new IllegalArgumentException("unknown key part " + part);
    }
  }

  /** Writes a text-valued component: tag, UTF-8 length, UTF-8. */
  void text(int tag, String value) {
    ensure(5 + 3 * value.length());
    buf[len++] = (byte) tag;
    int at = len;
    len += 4;
    utf8(value);
    putIntAt(at, len - at - 4);
  }

  /** Writes a byte-valued component: tag, length, bytes. */
  void bytes(int tag, byte[] value) {
    bytes(tag, value, 0, value.length);
  }

  /** Writes a byte-valued component from {@code value[off, off + length)}. */
  void bytes(int tag, byte[] value, int off, int length) {
    ensure(5);
    buf[len++] = (byte) tag;
    putInt(length);
    if (hashing && length > DIRECT) {
      digestClean = false;
      sha.update(buf, 0, len);
      len = 0;
      sha.update(value, off, length);
    } else {
      ensure(length);
      System.arraycopy(value, off, buf, len, length);
      len += length;
    }
  }

  void int64(long value) {
    ensure(13);
    buf[len++] = (byte) INT64;
    putInt(8);
    putInt((int) (value >>> 32));
    putInt((int) value);
  }

  /** Writes a principal chain: link count, then length-prefixed issuer and subject per link. */
  void principals(List<Principal> chain) {
    ensure(9);
    buf[len++] = (byte) PRINCIPAL_CHAIN;
    int at = len;
    len += 4;
    putInt(chain.size());
    for (Principal p : chain) {
      lengthPrefixedUtf8(p.issuer());
      lengthPrefixedUtf8(p.subject());
    }
    putIntAt(at, len - at - 4);
  }

  private void lengthPrefixedUtf8(String s) {
    ensure(4 + 3 * s.length());
    int at = len;
    len += 4;
    utf8(s);
    putIntAt(at, len - at - 4);
  }

  /** Finishes a hashing encoding. */
  DedupKey key() {
    sha.update(buf, 0, len);
    try {
      sha.digest(digest, 0, 32);
    } catch (DigestException e) {
      throw new IllegalStateException("SHA-256 digest needs 32 bytes", e);
    }
    digestClean = true;
    trim();
    return DedupKey.ofDigest(digest);
  }

  /** Finishes a collecting encoding. */
  byte[] toByteArray() {
    byte[] bytes = Arrays.copyOf(buf, len);
    trim();
    return bytes;
  }

  private void trim() {
    len = 0;
    if (buf.length > MAX_RETAINED) {
      buf = new byte[INITIAL];
    }
  }

  /**
   * UTF-8 without replacement characters: the caller validated the text ({@link #checkUnicode}).
   */
  private void utf8(String s) {
    byte[] b = buf;
    int n = len;
    for (int i = 0, length = s.length(); i < length; i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        b[n++] = (byte) c;
      } else if (c < 0x800) {
        b[n++] = (byte) (0xC0 | (c >> 6));
        b[n++] = (byte) (0x80 | (c & 0x3F));
      } else if (Character.isHighSurrogate(c)
          && i + 1 < length
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        int cp = Character.toCodePoint(c, s.charAt(++i));
        b[n++] = (byte) (0xF0 | (cp >> 18));
        b[n++] = (byte) (0x80 | ((cp >> 12) & 0x3F));
        b[n++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
        b[n++] = (byte) (0x80 | (cp & 0x3F));
      } else if (Character.isSurrogate(c)) {
        throw new KeyDerivationException(
            "key text has a lone surrogate at index " + i + "; a key must be valid Unicode");
      } else {
        b[n++] = (byte) (0xE0 | (c >> 12));
        b[n++] = (byte) (0x80 | ((c >> 6) & 0x3F));
        b[n++] = (byte) (0x80 | (c & 0x3F));
      }
    }
    len = n;
  }

  /**
   * Checks that text is valid Unicode: a lone surrogate has no UTF-8 form, and replacing it (as
   * {@code String.getBytes} does) would make two different texts one key.
   *
   * @throws KeyDerivationException if the text has a lone surrogate
   */
  static void checkUnicode(String s, String what) {
    Objects.requireNonNull(s, what);
    for (int i = 0, length = s.length(); i < length; i++) {
      char c = s.charAt(i);
      if (Character.isSurrogate(c)) {
        if (Character.isHighSurrogate(c)
            && i + 1 < length
            && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        } else {
          throw new KeyDerivationException(
              what + " has a lone surrogate at index " + i + "; a key must be valid Unicode");
        }
      }
    }
  }

  private void putInt(int v) {
    putIntAt(len, v);
    len += 4;
  }

  private void putIntAt(int at, int v) {
    buf[at] = (byte) (v >>> 24);
    buf[at + 1] = (byte) (v >>> 16);
    buf[at + 2] = (byte) (v >>> 8);
    buf[at + 3] = (byte) v;
  }

  private void ensure(int extra) {
    if (len + extra > buf.length) {
      buf = Arrays.copyOf(buf, Math.max(len + extra, buf.length * 2));
    }
  }
}
