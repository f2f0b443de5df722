package dev.idem.server.pipeline;

import dev.idem.StoreException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * Encodes the downstream's reply to the first delivery of a key in replay mode, so that duplicates
 * get the same status, content type and body. Layout: version byte {@code 1}, status (2 bytes),
 * content type length (2 bytes) and UTF-8 bytes, then the body; or the single byte {@code 0} when
 * the downstream gave no reply to replay (the source then answers as for any accepted event).
 */
public final class StoredAnswer {
  private static final byte VERSION = 1;
  private static final byte NO_REPLY = 0;

  private StoredAnswer() {}

  /**
   * Encodes a reply for the store.
   *
   * @param reply the reply, or null if there is none to replay
   * @return the stored form
   */
  public static byte[] encode(Outcome.@Nullable Reply reply) {
    if (reply == null) {
      return new byte[] {NO_REPLY};
    }
    String contentType = reply.contentType() == null ? "application/json" : reply.contentType();
    byte[] type = contentType.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(1 + 2 + 2 + type.length + reply.body().length);
    b.put(VERSION)
        .putShort((short) reply.status())
        .putShort((short) type.length)
        .put(type)
        .put(reply.body());
    return b.array();
  }

  /**
   * Decodes a stored reply.
   *
   * @param stored the stored form
   * @return the reply, or null if the first delivery had none to replay
   * @throws StoreException if the layout is unknown
   */
  public static Outcome.@Nullable Reply decode(byte[] stored) {
    if (stored.length == 1 && stored[0] == NO_REPLY) {
      return null;
    }
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
    return new Outcome.Reply(status, new String(type, StandardCharsets.UTF_8), body);
  }
}
