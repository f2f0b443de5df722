package dev.idem.server.support;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 over a plain socket, for requests no well-behaved client sends (bad framing, trickled
 * bodies, huge headers). Every read has a socket timeout, so a server that never answers fails the
 * test instead of hanging it.
 */
public final class RawHttp implements AutoCloseable {
  /** One parsed answer. */
  public record Reply(int status, Map<String, String> headers, String body) {
    public String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }
  }

  private final Socket socket;
  private final OutputStream out;
  private final InputStream in;

  public RawHttp(URI base) {
    try {
      socket = new Socket();
      socket.connect(new InetSocketAddress(base.getHost(), base.getPort()), 5000);
      socket.setSoTimeout(30_000);
      socket.setTcpNoDelay(true);
      out = socket.getOutputStream();
      in = socket.getInputStream();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Sends one request's bytes in one exchange and reads the answer. */
  public static Reply exchange(URI base, String request) {
    return exchange(base, request.getBytes(StandardCharsets.ISO_8859_1));
  }

  /** Sends raw bytes and reads the answer. */
  public static Reply exchange(URI base, byte[] request) {
    try (RawHttp c = new RawHttp(base)) {
      c.send(request);
      return c.read();
    }
  }

  public void send(String text) {
    send(text.getBytes(StandardCharsets.ISO_8859_1));
  }

  /** Writes and flushes; false if the server has closed the connection. */
  public boolean trySend(byte[] bytes) {
    try {
      out.write(bytes);
      out.flush();
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  public void send(byte[] bytes) {
    try {
      out.write(bytes);
      out.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Reads one answer: the head, then Content-Length bytes or up to the close. */
  public Reply read() {
    try {
      ByteArrayOutputStream head = new ByteArrayOutputStream();
      int last4 = 0;
      while (last4 != 0x0d0a0d0a) {
        int b = in.read();
        if (b < 0) {
          throw new IOException("the connection closed before an answer; got: " + head);
        }
        head.write(b);
        last4 = (last4 << 8) | b;
      }
      String[] lines = head.toString(StandardCharsets.ISO_8859_1).split("\r\n");
      int status = Integer.parseInt(lines[0].split(" ")[1]);
      Map<String, String> headers = new LinkedHashMap<>();
      for (int i = 1; i < lines.length; i++) {
        int colon = lines[i].indexOf(':');
        if (colon > 0) {
          headers.put(
              lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
              lines[i].substring(colon + 1).trim());
        }
      }
      byte[] body;
      String length = headers.get("content-length");
      if (length != null) {
        body = in.readNBytes(Integer.parseInt(length));
      } else {
        body = in.readAllBytes();
      }
      return new Reply(status, headers, new String(body, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() {
    try {
      socket.close();
    } catch (IOException e) {
      // closing a test socket; nothing to do
    }
  }
}
