package dev.idem.server.deliver;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * The outbox payload format of a {@link Delivery}: compact, binary-safe, versioned. An outbox entry
 * written by one Idem version must be readable by the next, so this layout is a stable format;
 * change it only by adding a new version and keeping the old decoder.
 *
 * <p>Version 1, every length an unsigned LEB128 varint:
 *
 * <pre>
 * byte     0x01                    version
 * varint   n, then n bytes         pipeline, UTF-8
 * varint   n, then n bytes         idempotency key, UTF-8
 * varint   n+1, then n bytes       ordering key, UTF-8; 0 = none
 * varint   count                   headers, sorted by name
 *   varint n, then n bytes         header name, UTF-8
 *   varint n, then n bytes         header value, UTF-8
 * varint   n, then n bytes         body, as is
 * </pre>
 *
 * Nothing may follow the body. The encoding of a delivery is deterministic (headers are sorted).
 */
public final class DeliveryCodec {
  /** The version this class writes. */
  public static final int VERSION = 1;

  private DeliveryCodec() {}

  /**
   * Encodes a delivery.
   *
   * @param delivery the delivery
   * @return the payload
   */
  public static byte[] encode(Delivery delivery) {
    byte[] pipeline = utf8(delivery.pipeline());
    byte[] key = utf8(delivery.idempotencyKey());
    String orderingKey = delivery.orderingKey();
    byte @Nullable [] ordering = orderingKey == null ? null : utf8(orderingKey);
    Map<String, String> headers = delivery.headers();
    byte[][] headerBytes = new byte[headers.size() * 2][];
    int i = 0;
    for (Map.Entry<String, String> h :
        (headers.size() > 1 ? new TreeMap<>(headers) : headers).entrySet()) {
      headerBytes[i++] = utf8(h.getKey());
      headerBytes[i++] = utf8(h.getValue());
    }
    byte[] body = delivery.body();

    int size = 1 + sized(pipeline) + sized(key) + varintSize(headers.size()) + sized(body);
    size += ordering == null ? 1 : varintSize(ordering.length + 1) + ordering.length;
    for (byte[] b : headerBytes) {
      size += sized(b);
    }
    Writer w = new Writer(size);
    w.buf[w.pos++] = VERSION;
    w.bytes(pipeline);
    w.bytes(key);
    if (ordering == null) {
      w.varint(0);
    } else {
      w.varint(ordering.length + 1);
      w.raw(ordering);
    }
    w.varint(headers.size());
    for (byte[] b : headerBytes) {
      w.bytes(b);
    }
    w.bytes(body);
    return w.buf;
  }

  /**
   * Decodes a payload written by {@link #encode}.
   *
   * @param payload the payload
   * @return the delivery
   * @throws IllegalArgumentException if the payload is not a delivery of a known version (the
   *     message says what is wrong; the outbox dispatcher dead-letters such entries)
   */
  public static Delivery decode(byte[] payload) {
    Reader r = new Reader(payload);
    int version = r.u8();
    if (version != VERSION) {
      throw new IllegalArgumentException(
          "outbox payload has format version " + version + "; this Idem reads version " + VERSION);
    }
    String pipeline = r.string();
    String key = r.string();
    int orderingLength = r.varint();
    @Nullable String ordering = orderingLength == 0 ? null : r.string(orderingLength - 1);
    int headerCount = r.varint();
    if (headerCount > payload.length) {
      throw r.corrupt("header count " + headerCount + " is larger than the payload");
    }
    Map<String, String> headers = new TreeMap<>();
    for (int h = 0; h < headerCount; h++) {
      headers.put(r.string(), r.string());
    }
    byte[] body = r.bytes(r.varint());
    if (r.pos != payload.length) {
      throw r.corrupt((payload.length - r.pos) + " bytes follow the body");
    }
    return new Delivery(pipeline, key, ordering, body, headers);
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static int sized(byte[] b) {
    return varintSize(b.length) + b.length;
  }

  private static int varintSize(int value) {
    int size = 1;
    while ((value & ~0x7F) != 0) {
      value >>>= 7;
      size++;
    }
    return size;
  }

  private static final class Writer {
    final byte[] buf;
    int pos;

    Writer(int size) {
      buf = new byte[size];
    }

    void varint(int value) {
      while ((value & ~0x7F) != 0) {
        buf[pos++] = (byte) ((value & 0x7F) | 0x80);
        value >>>= 7;
      }
      buf[pos++] = (byte) value;
    }

    void raw(byte[] b) {
      System.arraycopy(b, 0, buf, pos, b.length);
      pos += b.length;
    }

    void bytes(byte[] b) {
      varint(b.length);
      raw(b);
    }
  }

  private static final class Reader {
    final byte[] buf;
    int pos;

    Reader(byte[] buf) {
      this.buf = buf;
    }

    int u8() {
      if (pos >= buf.length) {
        throw corrupt("it ends early");
      }
      return buf[pos++] & 0xFF;
    }

    int varint() {
      int value = 0;
      for (int shift = 0; shift < 32; shift += 7) {
        int b = u8();
        if (shift == 28 && (b & 0x70) != 0) {
          throw corrupt("a length does not fit in 31 bits");
        }
        value |= (b & 0x7F) << shift;
        if ((b & 0x80) == 0) {
          if (value < 0) {
            throw corrupt("a length is negative");
          }
          return value;
        }
      }
      throw corrupt("a length is longer than 5 bytes");
    }

    byte[] bytes(int length) {
      if (length > buf.length - pos) {
        throw corrupt("a length of " + length + " runs past the end");
      }
      byte[] out = Arrays.copyOfRange(buf, pos, pos + length);
      pos += length;
      return out;
    }

    String string() {
      return string(varint());
    }

    String string(int length) {
      if (length > buf.length - pos) {
        throw corrupt("a length of " + length + " runs past the end");
      }
      String s = new String(buf, pos, length, StandardCharsets.UTF_8);
      pos += length;
      return s;
    }

    IllegalArgumentException corrupt(String what) {
      return new IllegalArgumentException(
          "outbox payload is not a valid version " + VERSION + " delivery: " + what);
    }
  }
}
