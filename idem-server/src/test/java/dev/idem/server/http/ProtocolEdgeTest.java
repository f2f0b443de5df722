package dev.idem.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.server.support.RawHttp;
import dev.idem.server.support.RawHttp.Reply;
import dev.idem.server.support.TestService;
import java.net.URI;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 9 §5 and issue 8: every protocol-level rejection, Jetty's or Idem's, answers in the
 * documented form {@code {"error","message"}} with a JSON content type, over a real socket.
 */
class ProtocolEdgeTest {
  static final String TOKEN = "edge-admin-token-0123456789";
  static final String EVENT = "{\"id\":\"e-1\"}";
  static TestService service;
  static URI base;

  @BeforeAll
  static void start() {
    service =
        TestService.start(
            """
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /hooks/p } }
                dedup: { key: source.id }
                deliver: { stdout: {} }
            """,
            TOKEN);
    base = service.server.uri();
  }

  @AfterAll
  static void stop() {
    service.close();
  }

  static Reply post(String headers, String body) {
    return RawHttp.exchange(
        base,
        "POST /hooks/p HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + headers + "\r\n" + body);
  }

  static void assertJsonError(Reply r, int status, String code) {
    assertThat(r.status()).as(r.toString()).isEqualTo(status);
    assertThat(r.header("Content-Type")).as(r.toString()).startsWith("application/json");
    assertThat(r.body())
        .as(r.toString())
        .startsWith("{\"error\":\"" + code + "\",\"message\":\"")
        .endsWith("\"}");
  }

  @Test
  void duplicateContentLengthsAre400() {
    assertJsonError(
        post("Content-Length: 12\r\nContent-Length: 13\r\n", EVENT), 400, "bad_request");
  }

  @Test
  void aContentLengthThatIsNotANumberIs400() {
    assertJsonError(post("Content-Length: twelve\r\n", EVENT), 400, "bad_request");
  }

  @Test
  void aNegativeContentLengthIs400() {
    assertJsonError(post("Content-Length: -1\r\n", EVENT), 400, "bad_request");
  }

  @Test
  void contentLengthTogetherWithChunkedIs400() {
    String chunked = Integer.toHexString(EVENT.length()) + "\r\n" + EVENT + "\r\n0\r\n\r\n";
    assertJsonError(
        post("Content-Length: 12\r\nTransfer-Encoding: chunked\r\n", chunked), 400, "bad_request");
  }

  @Test
  void aBadChunkSizeInTheBodyIs400AndNothingIsDelivered() {
    int before = service.sinks.get("p").delivered().size();
    assertJsonError(
        post("Transfer-Encoding: chunked\r\n", "zz\r\n" + EVENT + "\r\n0\r\n\r\n"),
        400,
        "bad_request");
    assertThat(service.sinks.get("p").delivered()).hasSize(before);
  }

  @Test
  void aMissingHostIs400() {
    assertJsonError(
        RawHttp.exchange(base, "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n"),
        400,
        "bad_request");
  }

  @Test
  void aMalformedRequestLineIs400() {
    assertJsonError(RawHttp.exchange(base, "HELLO\r\n\r\n"), 400, "bad_request");
  }

  @Test
  void aUrlOverTheHeaderLimitIs414() {
    Reply r =
        RawHttp.exchange(
            base, "GET /" + "a".repeat(9000) + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assertJsonError(r, 414, "uri_too_long");
  }

  @Test
  void headersOverTheLimitAre431() {
    Reply r =
        RawHttp.exchange(
            base,
            "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: "
                + "b".repeat(9000)
                + "\r\nConnection: close\r\n\r\n");
    assertJsonError(r, 431, "headers_too_large");
  }

  @Test
  void anUnknownHttpVersionIs505() {
    assertJsonError(
        RawHttp.exchange(base, "GET /health HTTP/3.0\r\nHost: x\r\n\r\n"),
        505,
        "http_version_not_supported");
  }

  @Test
  void anHttp2PrefaceOnTheHttp1PortIs426() {
    assertJsonError(
        RawHttp.exchange(base, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 426, "upgrade_required");
  }

  @Test
  void aBadPathEscapeIs400() {
    assertJsonError(
        RawHttp.exchange(base, "GET /hooks/%ZZ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        400,
        "bad_request");
  }

  @Test
  void aMalformedAdminKeyEscapeIs400NotA500() {
    for (String key : new String[] {"%ZZ", "%", "ord%2", "%E0%A4%A"}) {
      Reply r =
          RawHttp.exchange(
              base,
              "GET /admin/pipelines/p/keys/"
                  + key
                  + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                  + TOKEN
                  + "\r\nConnection: close\r\n\r\n");
      assertJsonError(r, 400, "bad_request");
    }
  }

  @Test
  void aMalformedAdminQueryEscapeIs400() {
    Reply r =
        RawHttp.exchange(
            base,
            "GET /admin/pipelines/p/dead-letters?limit=%ZZ HTTP/1.1\r\nHost: x\r\n"
                + "Authorization: Bearer "
                + TOKEN
                + "\r\nConnection: close\r\n\r\n");
    assertJsonError(r, 400, "bad_request");
  }

  @Test
  void aTransferCodingOtherThanChunkedIs501AndNothingIsDelivered() {
    int before = service.sinks.get("p").delivered().size();
    String chunked = Integer.toHexString(EVENT.length()) + "\r\n" + EVENT + "\r\n0\r\n\r\n";
    assertJsonError(post("Transfer-Encoding: gzip, chunked\r\n", chunked), 501, "not_implemented");
    assertThat(service.sinks.get("p").delivered().size()).isEqualTo(before);
  }

  @Test
  void aContentEncodingIs415() {
    assertJsonError(
        post("Content-Encoding: gzip\r\nContent-Length: 12\r\n", EVENT),
        415,
        "unsupported_encoding");
  }

  @Test
  void multipartIs415() {
    String body = "--b\r\nContent-Type: application/json\r\n\r\n" + EVENT + "\r\n--b--\r\n";
    assertJsonError(
        post(
            "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: "
                + body.length()
                + "\r\n",
            body),
        415,
        "unsupported_media_type");
  }

  @Test
  void aCharsetOtherThanUtf8Is415() {
    assertJsonError(
        post("Content-Type: application/json; charset=utf-16\r\nContent-Length: 12\r\n", EVENT),
        415,
        "unsupported_media_type");
  }

  @Test
  void jsonSentAsTextOrFormIsReadAsJson() {
    Reply text =
        post("Content-Type: text/plain\r\nContent-Length: 17\r\n", "{\"id\":\"as-text\"}\n");
    Reply form =
        post(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 15\r\n",
            "{\"id\":\"a-form\"}");
    Reply json =
        post(
            "Content-Type: application/json; charset=UTF-8\r\nContent-Length: 15\r\n",
            "{\"id\":\"a-json\"}");
    assertThat(text.status()).as(text.toString()).isEqualTo(202);
    assertThat(form.status()).as(form.toString()).isEqualTo(202);
    assertThat(json.status()).as(json.toString()).isEqualTo(202);
  }
}
