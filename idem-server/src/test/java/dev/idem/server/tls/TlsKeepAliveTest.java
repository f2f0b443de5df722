package dev.idem.server.tls;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.TimeSource;
import dev.idem.server.IdemServer;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.TestCertificates;
import dev.idem.server.support.TestCertificates.Identity;
import dev.idem.server.support.TestEdge;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Regression: the header deadline ({@code server.read_timeout}) watched the TLS layer's connection
 * too, whose bytes never match a request, and cut kept-alive TLS connections after the timeout.
 */
class TlsKeepAliveTest {
  @TempDir Path dir;

  @Test
  void aKeptAliveTlsConnectionOutlivesTheReadTimeout() throws Exception {
    Identity ca = TestCertificates.ca("CN=Keep-Alive CA");
    Identity server = TestCertificates.leaf("CN=keep-alive", ca, true);
    Files.writeString(dir.resolve("s.pem"), TestCertificates.pem(server.cert()));
    Files.writeString(dir.resolve("k.pem"), TestCertificates.pem(server.keys().getPrivate()));
    IdemConfig config =
        ConfigLoader.parse(
            "tls.yaml",
            """
            server:
              host: 127.0.0.1
              port: 0
              read_timeout: 500ms
              tls: { certificate: "%s", private_key: "%s" }
            store: { type: memory }
            pipelines:
              - id: p
                source: { webhook: { path: /in } }
                deliver: { stdout: {} }
            """
                .formatted(dir.resolve("s.pem"), dir.resolve("k.pem")),
            n -> null);
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("ca", ca.cert());
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, tmf.getTrustManagers(), null);

    try (IdemServer idem =
            IdemServer.start(
                config.server(),
                ServiceAssembly.assemble(config, new TestEdge(), TimeSource.system()));
        SSLSocket socket =
            (SSLSocket) ctx.getSocketFactory().createSocket("127.0.0.1", idem.port())) {
      OutputStream out = socket.getOutputStream();
      BufferedReader in =
          new BufferedReader(
              new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));

      String first = exchange(out, in);
      // Idle, between requests, for several sweeps past read_timeout (idle_timeout is 30 s).
      Thread.sleep(3_000);
      String second = exchange(out, in);

      assertThat(first).startsWith("HTTP/1.1 200");
      assertThat(second).startsWith("HTTP/1.1 200");
    }
  }

  /** One GET /health on the connection; returns the status line, reads the rest of the answer. */
  private static String exchange(OutputStream out, BufferedReader in) throws Exception {
    out.write(
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    out.flush();
    String status = in.readLine();
    int length = 0;
    for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
      if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
        length = Integer.parseInt(line.substring(15).trim());
      }
    }
    char[] body = new char[length];
    int read = 0;
    while (read < length) {
      read += in.read(body, read, length - read);
    }
    return status == null ? "" : status;
  }
}
