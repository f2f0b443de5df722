package dev.idem.server;

import static dev.idem.server.support.PipelineAnswers.answer;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.core.OutputStreamAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.logging.IdemLogEncoder;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.support.RecordingSink;
import dev.idem.server.support.SwitchableStore;
import dev.idem.server.support.TestParts;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * {@code IDEM_LOG_FORMAT=json}: the console encoder writes one JSON object per line, and the
 * pipeline's decision lines carry pipeline, key digest and decision as fields.
 */
class JsonLogTest {
  static final ObjectMapper JSON = new ObjectMapper();

  final LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
  final Logger pipelineLog = context.getLogger(Pipeline.class);
  final ByteArrayOutputStream out = new ByteArrayOutputStream();
  OutputStreamAppender<ch.qos.logback.classic.spi.ILoggingEvent> appender;
  Level before;

  IdemLogEncoder capture(String format) {
    IdemLogEncoder encoder = new IdemLogEncoder();
    encoder.setContext(context);
    encoder.setFormat(format);
    encoder.setPattern("%-5level %logger - %msg%n");
    encoder.start();
    appender = new OutputStreamAppender<>();
    appender.setContext(context);
    appender.setEncoder(encoder);
    appender.setOutputStream(out);
    appender.start();
    before = pipelineLog.getLevel();
    pipelineLog.setLevel(Level.DEBUG);
    pipelineLog.addAppender(appender);
    return encoder;
  }

  @AfterEach
  void detach() {
    pipelineLog.detachAppender(appender);
    pipelineLog.setLevel(before);
    appender.stop();
  }

  List<String> lines() {
    List<String> lines = new ArrayList<>();
    for (String l : out.toString(StandardCharsets.UTF_8).split("\n")) {
      if (!l.isBlank()) {
        lines.add(l);
      }
    }
    return lines;
  }

  static Pipeline pipeline(SwitchableStore store) {
    PipelineSettings settings =
        ConfigLoader.parse(
                "log.yaml",
                """
                pipelines:
                  - id: orders
                    source: { webhook: { path: /orders } }
                    dedup: { key: source.id }
                    deliver: { stdout: {} }
                """,
                n -> null)
            .pipelines()
            .get(0);
    return Pipeline.builder(settings)
        .keys(TestParts.idField())
        .dedup(Deduplicator.builder(store, Scope.of("orders")).build(), store)
        .deliverer(TestParts.retrying(new RecordingSink(), 0))
        .build();
  }

  static void send(Pipeline p, String body) {
    answer(p, new InboundRequest(body.getBytes(StandardCharsets.UTF_8), h -> null));
  }

  @Test
  void eachDecisionIsOneJsonObjectPerLineWithItsFields() throws Exception {
    // given JSON logs
    assertThat(capture("json").format()).isEqualTo("json");
    Pipeline p = pipeline(new SwitchableStore());
    String digest = TestParts.keyOf("o-1").toHex();

    // when an event arrives twice
    send(p, "{\"id\":\"o-1\"}");
    send(p, "{\"id\":\"o-1\"}");

    // then each decision is one line that parses, with the standard and the structured fields
    List<String> lines = lines();
    assertThat(lines).hasSize(2);
    List<String> decisions = new ArrayList<>();
    for (String line : lines) {
      JsonNode n = JSON.readTree(line);
      assertThat(n.path("timestamp").asLong()).isPositive();
      assertThat(n.path("level").asText()).isEqualTo("DEBUG");
      assertThat(n.path("loggerName").asText()).isEqualTo(Pipeline.class.getName());
      assertThat(n.path("formattedMessage").asText()).startsWith("decision pipeline=orders key=");
      assertThat(n.path("mdc").path("pipeline").asText()).isEqualTo("orders");
      assertThat(n.path("mdc").path("key_digest").asText()).isEqualTo(digest);
      decisions.add(n.path("mdc").path("decision").asText());
    }
    assertThat(decisions).containsExactly("pass", "duplicate");
  }

  @Test
  void aStoreOutageLineCarriesTheFieldsAndTheyDoNotLeakIntoLaterLines() throws Exception {
    capture("JSON");
    SwitchableStore store = new SwitchableStore();
    Pipeline p = pipeline(store);
    store.down(true);

    send(p, "{\"id\":\"o-2\"}");
    LoggerFactory.getLogger(Pipeline.class).info("after");

    List<String> lines = lines();
    assertThat(lines).hasSize(2);
    JsonNode outage = JSON.readTree(lines.get(0));
    assertThat(outage.path("level").asText()).isEqualTo("WARN");
    assertThat(outage.path("mdc").path("decision").asText()).isEqualTo("store_unavailable");
    assertThat(outage.path("mdc").path("key_digest").asText())
        .isEqualTo(TestParts.keyOf("o-2").toHex());
    JsonNode after = JSON.readTree(lines.get(1));
    assertThat(after.path("formattedMessage").asText()).isEqualTo("after");
    assertThat(after.path("mdc").path("pipeline").isMissingNode()).isTrue();
  }

  @Test
  void textIsTheDefaultAndAnUnknownFormatFallsBackToText() {
    IdemLogEncoder encoder = capture("xml");

    send(pipeline(new SwitchableStore()), "{\"id\":\"o-3\"}");

    assertThat(encoder.format()).isEqualTo("text");
    assertThat(lines())
        .singleElement()
        .satisfies(
            l -> assertThat(l).startsWith("DEBUG " + Pipeline.class.getName() + " - decision"));
    assertThat(context.getStatusManager().getCopyOfStatusList())
        .anySatisfy(s -> assertThat(s.getMessage()).contains("IDEM_LOG_FORMAT='xml'"));
  }
}
