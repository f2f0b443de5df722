package dev.idem.server.pipeline;

import dev.idem.StoreException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Encodes the answer given to the first delivery of a key in replay mode, so that duplicates get
 * the same status, content type and body. Layout: version byte {@code 1}, status (2 bytes), content
 * type length (2 bytes) and UTF-8 bytes, then the body.
 */
final class StoredAnswer {
  private static final byte VERSION = 1;

  private StoredAnswer() {}

  static byte[] encode(Answer a) {
    byte[] type = a.contentType().getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(1 + 2 + 2 + type.length + a.body().length);
    b.put(VERSION)
        .putShort((short) a.status())
        .putShort((short) type.length)
        .put(type)
        .put(a.body());
    return b.array();
  }

  static Answer decode(byte[] stored) {
    ByteBuffer b = ByteBuffer.wrap(stored);
    if (stored.length < 5 || b.get() != VERSION) {
      throw new StoreException(
          "a stored replay answer has an unknown layout; forget the key (DELETE"
              + " /admin/pipelines/{id}/keys/{key}) so that it is processed anew");
    }
    int status = b.getShort() & 0xFFFF;
    int typeLength = b.getShort() & 0xFFFF;
    byte[] type = new byte[typeLength];
    b.get(type);
    byte[] body = new byte[b.remaining()];
    b.get(body);
    return new Answer(status, new String(type, StandardCharsets.UTF_8), Map.of(), body);
  }
}
