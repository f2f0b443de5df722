package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.idem.server.logging.AccessLog;
import dev.idem.server.support.Http;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** {@code IDEM_ACCESS_LOG}: off unless switched on; when on, one NCSA line per request. */
class AccessLogTest {
  final Logger access =
      ((LoggerContext) LoggerFactory.getILoggerFactory()).getLogger(AccessLog.LOGGER);
  final ListAppender<ILoggingEvent> lines = new ListAppender<>();
  Server jetty;

  @AfterEach
  void stop() throws Exception {
    access.detachAppender(lines);
    if (jetty != null) {
      jetty.stop();
    }
  }

  @Test
  void itIsOffUnlessTheEnvironmentSwitchesItOn() {
    assertThat(AccessLog.fromEnvironment(n -> null)).isNull();
    assertThat(AccessLog.fromEnvironment(Map.of(AccessLog.ENV, "false")::get)).isNull();
    assertThat(AccessLog.fromEnvironment(Map.of(AccessLog.ENV, "maybe")::get)).isNull();
    assertThat(AccessLog.fromEnvironment(Map.of(AccessLog.ENV, "true")::get)).isNotNull();
    assertThat(AccessLog.enabled(" ON ")).isTrue();
    assertThat(AccessLog.enabled("1")).isTrue();
    assertThat(AccessLog.enabled("off")).isFalse();
  }

  @Test
  void eachRequestIsOneLineWithMethodPathStatusAndSize() throws Exception {
    // given a server with the access log on
    lines.setContext(access.getLoggerContext());
    lines.start();
    access.addAppender(lines);
    jetty = new Server();
    ServerConnector connector = new ServerConnector(jetty);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    jetty.addConnector(connector);
    jetty.setHandler(
        new Handler.Abstract() {
          @Override
          public boolean handle(Request request, Response response, Callback callback) {
            response.setStatus(202);
            response.write(
                true, ByteBuffer.wrap("accepted".getBytes(StandardCharsets.UTF_8)), callback);
            return true;
          }
        });
    jetty.setRequestLog(AccessLog.fromEnvironment(Map.of(AccessLog.ENV, "true")::get));
    jetty.start();

    // when a webhook is posted
    new Http(URI.create("http://127.0.0.1:" + connector.getLocalPort()))
        .post("/hooks/orders", "{\"id\":1}");

    // then one line says who asked what, the answer and its size
    await().atMost(Duration.ofSeconds(10)).until(() -> !lines.list.isEmpty());
    assertThat(lines.list)
        .singleElement()
        .satisfies(
            e ->
                assertThat(e.getFormattedMessage())
                    .matches(
                        "127\\.0\\.0\\.1 - - \\[[^]]+] \"POST /hooks/orders HTTP/1\\.1\" 202 8"
                            + " \\d+ms"));
  }
}
