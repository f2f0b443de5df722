package dev.idem.server;

import static dev.idem.server.support.PipelineAnswers.answer;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.config.PipelineSettings;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Answer;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.support.Http;
import dev.idem.server.support.Receiver;
import dev.idem.server.support.RecordingSink;
import dev.idem.server.support.SwitchableStore;
import dev.idem.server.support.TestParts;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code deploy/grafana/idem.json} and {@code deploy/prometheus/alerts.yml} parse, are complete,
 * and refer only to metrics (and label values) that {@code /metrics} really exposes after a short
 * run of the service: new events, a duplicate, a failed sync delivery, evictions before the window
 * ended, and an async dead letter.
 */
class MonitoringFilesTest {
  static final Path DASHBOARD = Path.of("..", "deploy", "grafana", "idem.json");
  static final Path ALERTS = Path.of("..", "deploy", "prometheus", "alerts.yml");

  static Receiver receiver;
  static Receiver down;
  static IdemServer server;
  static Http http;

  @BeforeAll
  static void run() {
    receiver = new Receiver();
    down = new Receiver();
    down.failNext(Integer.MAX_VALUE);
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: memory }
        pipelines:
          - id: orders
            source: { webhook: { path: /hooks/orders } }
            dedup: { key: source.id, window: 1h, max_keys: 1 }
            deliver: { retries: 1, backoff: 10ms, http: { url: "%s", timeout: 5s } }
          - id: queued
            source: { webhook: { path: /hooks/queued } }
            dedup: { key: source.id }
            deliver:
              mode: async
              retries: 1
              backoff: 10ms
              max_backoff: 20ms
              http: { url: "%s", timeout: 2s }
        """
            .formatted(receiver.uri("/orders"), down.uri("/queued"));
    IdemConfig config = ConfigLoader.parse("monitoring.yaml", yaml, n -> null);
    server =
        IdemServer.start(
            config.server(),
            ServiceAssembly.assemble(config, new DefaultEdge(), TimeSource.system()));
    http = new Http(server.uri());

    assertThat(http.post("/hooks/orders", "{\"id\":\"o-1\"}").statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/orders", "{\"id\":\"o-1\"}").statusCode()).isEqualTo(200);
    receiver.failNext(2);
    assertThat(http.post("/hooks/orders", "{\"id\":\"o-fails\"}").statusCode()).isEqualTo(502);
    // max_keys 1 with a 1h window: each new key evicts the previous one before its window ended.
    assertThat(http.post("/hooks/orders", "{\"id\":\"o-2\"}").statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/orders", "{\"id\":\"o-3\"}").statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/queued", "{\"id\":\"q-1\"}").statusCode()).isEqualTo(202);
    await()
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                value(
                        scrape(),
                        "idem_deliveries_total",
                        Map.of("pipeline", "queued", "outcome", "dead_lettered"))
                    >= 1);
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
    receiver.close();
    down.close();
  }

  @Test
  void everyMetricTheDashboardAndTheAlertsUseIsExposedWithTheLabelValuesTheyMatch()
      throws IOException {
    Map<String, List<Map<String, String>>> scrape = scrape();
    List<String> expressions = new ArrayList<>(alertExpressions());
    expressions.addAll(dashboardExpressions());

    Set<String> used = new TreeSet<>();
    for (String expr : expressions) {
      for (Selector s : selectors(expr)) {
        used.add(s.metric());
        assertThat(scrape)
            .as("metric %s in `%s` is exposed on /metrics", s.metric(), expr)
            .containsKey(s.metric());
        for (Map.Entry<String, String> m : s.matchers().entrySet()) {
          for (String wanted : literalValues(m.getValue())) {
            assertThat(scrape.get(s.metric()))
                .as(
                    "%s has a series with %s=\"%s\" (in `%s`)",
                    s.metric(), m.getKey(), wanted, expr)
                .anySatisfy(labels -> assertThat(labels).containsEntry(m.getKey(), wanted));
          }
          if (m.getValue().contains("$")) {
            assertThat(scrape.get(s.metric()))
                .as("%s has the label %s (in `%s`)", s.metric(), m.getKey(), expr)
                .allSatisfy(labels -> assertThat(labels).containsKey(m.getKey()));
          }
        }
      }
    }
    // Each alert of issue 14 is there, and the dashboard covers the same ground.
    assertThat(used)
        .contains(
            "idem_store_unavailable_total",
            "idem_evictions_before_ttl_total",
            "idem_outbox_depth",
            "idem_deliveries_total",
            "idem_store_seconds_bucket",
            "idem_delivery_seconds_bucket",
            "idem_decisions_total",
            "idem_http_requests_total");
  }

  @Test
  void theShortRunCountedWhatTheAlertsWatch() {
    Map<String, List<Map<String, String>>> scrape = scrape();

    assertThat(value(scrape, "idem_evictions_before_ttl_total", Map.of("pipeline", "orders")))
        .isGreaterThanOrEqualTo(1);
    assertThat(value(scrape, "idem_deliveries_total", Map.of("outcome", "failed"))).isEqualTo(1);
    assertThat(value(scrape, "idem_store_seconds_count", Map.of("pipeline", "orders")))
        .isEqualTo(5);
    assertThat(value(scrape, "idem_outbox_depth", Map.of("pipeline", "queued"))).isZero();
    assertThat(value(scrape, "idem_store_unavailable_total", Map.of())).isZero();
  }

  @Test
  void anEventTurnedAwayBecauseTheStoreIsDownIsCountedAsStoreUnavailable() {
    // given a pipeline whose store is down
    PipelineSettings settings =
        ConfigLoader.parse(
                "down.yaml",
                """
                pipelines:
                  - id: p
                    source: { webhook: { path: /p } }
                    dedup: { key: source.id }
                    deliver: { stdout: {} }
                """,
                n -> null)
            .pipelines()
            .get(0);
    SwitchableStore store = new SwitchableStore();
    IdemMetrics metrics = new IdemMetrics(new SimpleMeterRegistry());
    Pipeline pipeline =
        Pipeline.builder(settings)
            .keys(TestParts.idField())
            .dedup(Deduplicator.builder(store, Scope.of("p")).build(), store)
            .deliverer(TestParts.retrying(new RecordingSink(), 0))
            .meters(metrics.pipeline("p"))
            .build();
    store.down(true);

    // when an event arrives
    Answer answer =
        answer(
            pipeline,
            new InboundRequest("{\"id\":\"x\"}".getBytes(StandardCharsets.UTF_8), h -> null));

    // then it is answered 503 and counted
    assertThat(answer.status()).isEqualTo(503);
    assertThat(
            metrics.registry().get("idem_store_unavailable").tag("pipeline", "p").counter().count())
        .isEqualTo(1.0);
  }

  @Test
  void everyAlertSaysHowLongHowBadAndWhatToDo() throws IOException {
    JsonNode rules = new YAMLMapper().readTree(ALERTS.toFile());
    List<String> names = new ArrayList<>();
    for (JsonNode group : rules.path("groups")) {
      assertThat(group.path("name").asText()).isNotBlank();
      for (JsonNode rule : group.path("rules")) {
        String name = rule.path("alert").asText();
        names.add(name);
        assertThat(name).as("every rule is an alert with a name").isNotBlank();
        assertThat(rule.path("expr").asText()).as("%s: expr", name).isNotBlank();
        assertThat(rule.path("for").asText()).as("%s: for", name).matches("\\d+[smhdwy]");
        assertThat(rule.path("labels").path("severity").asText())
            .as("%s: labels.severity", name)
            .isIn("critical", "warning", "info");
        assertThat(rule.path("annotations").path("summary").asText())
            .as("%s: annotations.summary", name)
            .isNotBlank();
        assertThat(rule.path("annotations").path("description").asText())
            .as("%s: annotations.description says what to do", name)
            .isNotBlank();
      }
    }
    assertThat(names)
        .containsExactlyInAnyOrder(
            "IdemStoreUnavailable",
            "IdemEvictionsBeforeTtl",
            "IdemOutboxDepthGrowing",
            "IdemDeadLetters",
            "IdemDeliveryFailureRate",
            "IdemStoreLatencyP99High",
            "IdemDeliveryLatencyP99High");
  }

  @Test
  void theDashboardIsAGrafanaDashboardFilteredByPipeline() throws IOException {
    JsonNode dashboard = new ObjectMapper().readTree(DASHBOARD.toFile());

    assertThat(dashboard.path("schemaVersion").asInt()).isGreaterThanOrEqualTo(36);
    assertThat(dashboard.path("title").asText()).isEqualTo("Idem");
    List<String> variables = new ArrayList<>();
    dashboard.path("templating").path("list").forEach(v -> variables.add(v.path("name").asText()));
    assertThat(variables).contains("datasource", "pipeline");
    List<JsonNode> panels = panels(dashboard);
    assertThat(panels).hasSizeGreaterThanOrEqualTo(10);
    for (JsonNode p : panels) {
      assertThat(p.path("title").asText()).isNotBlank();
      assertThat(p.path("targets")).as("panel %s has queries", p.path("title")).isNotEmpty();
      for (JsonNode t : p.path("targets")) {
        String expr = t.path("expr").asText();
        for (Selector s : selectors(expr)) {
          if (s.metric().startsWith("idem_")) {
            assertThat(s.matchers())
                .as("%s in panel %s follows the pipeline variable", s.metric(), p.path("title"))
                .containsEntry("pipeline", "$pipeline");
          }
        }
      }
    }
  }

  @Test
  void theSelectorScannerFindsMetricsAndNotFunctionsLabelsOrVariables() {
    List<Selector> found =
        selectors(
            "histogram_quantile(0.99, sum by (instance, le) (rate(a_seconds_bucket{x=\"1\","
                + " p=~\"$pipeline\"}[$__rate_interval]))) / on (le) b_total offset 5m > 0.05"
                + " and deriv(c_depth[15m]) > 1e3");

    assertThat(found)
        .containsExactly(
            new Selector("a_seconds_bucket", Map.of("x", "1", "p", "$pipeline")),
            new Selector("b_total", Map.of()),
            new Selector("c_depth", Map.of()));
  }

  // --- reading the files -------------------------------------------------------------------------

  static List<String> alertExpressions() throws IOException {
    List<String> out = new ArrayList<>();
    for (JsonNode group : new YAMLMapper().readTree(ALERTS.toFile()).path("groups")) {
      group.path("rules").forEach(r -> out.add(r.path("expr").asText()));
    }
    return out;
  }

  static List<String> dashboardExpressions() throws IOException {
    JsonNode dashboard = new ObjectMapper().readTree(DASHBOARD.toFile());
    List<String> out = new ArrayList<>();
    for (JsonNode p : panels(dashboard)) {
      p.path("targets").forEach(t -> out.add(t.path("expr").asText()));
    }
    // label_values(metric, label) in the template variables names a metric too.
    Pattern labelValues = Pattern.compile("label_values\\(\\s*([a-zA-Z_:][\\w:]*)");
    for (JsonNode v : dashboard.path("templating").path("list")) {
      Matcher m = labelValues.matcher(v.path("definition").asText());
      if (m.find()) {
        out.add(m.group(1));
      }
    }
    return out;
  }

  static List<JsonNode> panels(JsonNode dashboard) {
    List<JsonNode> out = new ArrayList<>();
    for (JsonNode p : dashboard.path("panels")) {
      if (p.path("type").asText().equals("row")) {
        p.path("panels").forEach(out::add);
      } else {
        out.add(p);
      }
    }
    return out;
  }

  // --- a small PromQL selector scanner -----------------------------------------------------------

  /** A vector selector: a metric name and its label matchers (value as written, regex or not). */
  record Selector(String metric, Map<String, String> matchers) {}

  static final Set<String> KEYWORDS =
      Set.of(
          "by",
          "without",
          "on",
          "ignoring",
          "group_left",
          "group_right",
          "bool",
          "and",
          "or",
          "unless",
          "offset",
          "sum",
          "min",
          "max",
          "avg",
          "count",
          "stddev",
          "stdvar",
          "topk",
          "bottomk",
          "quantile",
          "count_values",
          "group",
          "inf",
          "nan");
  static final Set<String> LABEL_LISTS =
      Set.of("by", "without", "on", "ignoring", "group_left", "group_right");
  static final Pattern MATCHER =
      Pattern.compile("\\s*([a-zA-Z_]\\w*)\\s*(=~|!~|!=|=)\\s*\"((?:[^\"\\\\]|\\\\.)*)\"\\s*,?");

  /**
   * Returns the vector selectors of a PromQL expression: identifiers that are not functions (not
   * followed by a parenthesis), keywords or aggregations, outside strings, ranges and label lists.
   */
  static List<Selector> selectors(String expr) {
    List<Selector> out = new ArrayList<>();
    int i = 0;
    int n = expr.length();
    while (i < n) {
      char c = expr.charAt(i);
      if (c == '"') {
        i = skipString(expr, i);
      } else if (c == '[') {
        i = expr.indexOf(']', i) + 1;
      } else if (Character.isDigit(c)) {
        while (i < n && (Character.isLetterOrDigit(expr.charAt(i)) || expr.charAt(i) == '.')) {
          i++;
        }
      } else if (Character.isLetter(c) || c == '_' || c == ':') {
        int start = i;
        while (i < n
            && (Character.isLetterOrDigit(expr.charAt(i)) || "_:".indexOf(expr.charAt(i)) >= 0)) {
          i++;
        }
        String word = expr.substring(start, i);
        int next = skipSpaces(expr, i);
        boolean call = next < n && expr.charAt(next) == '(';
        if (LABEL_LISTS.contains(word) && call) {
          i = expr.indexOf(')', next) + 1;
        } else if (!call && !KEYWORDS.contains(word.toLowerCase(Locale.ROOT))) {
          Map<String, String> matchers = new LinkedHashMap<>();
          if (next < n && expr.charAt(next) == '{') {
            int close = closingBrace(expr, next);
            Matcher m = MATCHER.matcher(expr.substring(next + 1, close));
            while (m.lookingAt()) {
              matchers.put(m.group(1), m.group(3));
              m.region(m.end(), m.regionEnd());
            }
            assertThat(m.regionStart())
                .as("label matchers of %s parse in `%s`", word, expr)
                .isEqualTo(m.regionEnd());
            i = close + 1;
          }
          out.add(new Selector(word, matchers));
        }
      } else {
        i++;
      }
    }
    return out;
  }

  private static int skipString(String s, int quote) {
    int i = quote + 1;
    while (i < s.length() && s.charAt(i) != '"') {
      i += s.charAt(i) == '\\' ? 2 : 1;
    }
    return i + 1;
  }

  private static int skipSpaces(String s, int i) {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
    return i;
  }

  private static int closingBrace(String s, int open) {
    int i = open + 1;
    while (s.charAt(i) != '}') {
      i = s.charAt(i) == '"' ? skipString(s, i) : i + 1;
    }
    return i;
  }

  /** The values a matcher requires to exist: a literal, or each branch of a literal alternation. */
  static List<String> literalValues(String value) {
    return value.matches("[\\w|]+") ? List.of(value.split("\\|")) : List.of();
  }

  // --- reading /metrics --------------------------------------------------------------------------

  static final Pattern SAMPLE = Pattern.compile("([a-zA-Z_:][\\w:]*)(?:\\{(.*)})?\\s+(\\S+).*");
  static final Pattern LABEL = Pattern.compile("([a-zA-Z_]\\w*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

  /** Scrapes {@code /metrics}: each sample name with the label sets of its series. */
  static Map<String, List<Map<String, String>>> scrape() {
    var response = http.get("/metrics");
    assertThat(response.statusCode()).isEqualTo(200);
    Map<String, List<Map<String, String>>> out = new HashMap<>();
    for (String line : response.body().split("\n")) {
      Matcher m = SAMPLE.matcher(line);
      if (line.startsWith("#") || !m.matches()) {
        continue;
      }
      Map<String, String> labels = new HashMap<>();
      if (m.group(2) != null) {
        Matcher l = LABEL.matcher(m.group(2));
        while (l.find()) {
          labels.put(l.group(1), l.group(2));
        }
      }
      labels.put("__value__", m.group(3));
      out.computeIfAbsent(m.group(1), k -> new ArrayList<>()).add(labels);
    }
    return out;
  }

  /** The sum of a metric's series whose labels include {@code labels}. */
  static double value(
      Map<String, List<Map<String, String>>> scrape, String metric, Map<String, String> labels) {
    double sum = 0;
    for (Map<String, String> series : scrape.getOrDefault(metric, List.of())) {
      if (series.entrySet().containsAll(labels.entrySet())) {
        sum += Double.parseDouble(series.get("__value__"));
      }
    }
    return sum;
  }
}
