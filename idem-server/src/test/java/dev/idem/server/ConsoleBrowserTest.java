package dev.idem.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.TimeSource;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.support.Http;
import dev.idem.server.support.Receiver;
import dev.idem.tck.ExternalService;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The web console in a real browser (headless Chromium driven by Selenium, the Debian packages
 * {@code chromium} and {@code chromium-driver}): log in, watch a pipeline's counts move as events
 * arrive, requeue a dead letter and see a test receiver get it, purge another, and explain why an
 * event was dropped. The service runs in-process; the browser loads nothing but the service's own
 * files. Skipped with a message when Chromium is missing, unless {@code CI=true}.
 */
class ConsoleBrowserTest {
  static final String TOKEN = "console-browser-test-token";
  static final ObjectMapper JSON = new ObjectMapper();
  static final Duration WAIT = Duration.ofSeconds(20);

  @TempDir Path dir;
  Receiver receiver;
  IdemServer server;
  Http http;
  WebDriver browser;

  static String executable(String env, String... candidates) {
    String configured = System.getenv(env);
    if (configured != null && !configured.isBlank()) {
      return Files.isExecutable(Path.of(configured)) ? configured : null;
    }
    for (String c : candidates) {
      if (Files.isExecutable(Path.of(c))) {
        return c;
      }
    }
    return null;
  }

  @BeforeEach
  void start() {
    String chromium = executable("IDEM_CHROMIUM", "/usr/bin/chromium", "/usr/bin/chromium-browser");
    String driver = executable("IDEM_CHROMEDRIVER", "/usr/bin/chromedriver");
    if (chromium == null || driver == null) {
      String message =
          "Chromium or chromedriver is missing (looked for /usr/bin/chromium and"
              + " /usr/bin/chromedriver, or $IDEM_CHROMIUM and $IDEM_CHROMEDRIVER); install them"
              + " with: apt-get update && apt-get install -y chromium chromium-driver";
      if (ExternalService.isCi()) {
        Assertions.fail("CI=true and " + message);
      }
      Assumptions.abort("skipped: " + message);
    }
    receiver = new Receiver();
    IdemConfig c =
        ConfigLoader.parse(
            "console.yaml",
            """
            server: { host: 127.0.0.1, port: 0, admin_token: %s }
            store: { type: memory }
            pipelines:
              - id: orders
                source: { webhook: { path: /hooks/orders } }
                dedup: { key: source.id }
                deliver:
                  mode: async
                  retries: 0
                  http: { url: "%s", timeout: 2s }
            """
                .formatted(TOKEN, receiver.uri("/orders")),
            n -> null);
    server =
        IdemServer.start(
            c.server(), ServiceAssembly.assemble(c, new DefaultEdge(), TimeSource.system()));
    http = new Http(server.uri());

    ChromeOptions options = new ChromeOptions();
    options.setBinary(chromium);
    options.addArguments(
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--no-first-run",
        "--window-size=1280,1000",
        "--user-data-dir=" + dir.resolve("chromium-profile"));
    ChromeDriverService service =
        new ChromeDriverService.Builder()
            .usingDriverExecutable(new File(driver))
            .usingAnyFreePort()
            .build();
    browser = new ChromeDriver(service, options);
  }

  @AfterEach
  void stop() {
    if (browser != null) {
      browser.quit();
    }
    if (server != null) {
      server.close();
    }
    if (receiver != null) {
      receiver.close();
    }
  }

  WebDriverWait waiting() {
    return new WebDriverWait(browser, WAIT);
  }

  /** With -Didem.console.screenshots=DIR, saves what the browser shows, to look at by eye. */
  void screenshot(String name) throws Exception {
    String to = System.getProperty("idem.console.screenshots");
    if (to != null) {
      byte[] png =
          ((org.openqa.selenium.TakesScreenshot) browser)
              .getScreenshotAs(org.openqa.selenium.OutputType.BYTES);
      Files.createDirectories(Path.of(to));
      Files.write(Path.of(to, name + ".png"), png);
    }
  }

  String text(String css) {
    return browser.findElement(By.cssSelector(css)).getText();
  }

  void textBecomes(String css, String expected) {
    waiting().until(ExpectedConditions.textToBe(By.cssSelector(css), expected));
  }

  JsonNode deadLetters() throws Exception {
    return JSON.readTree(
            http.get("/admin/pipelines/orders/dead-letters", "Authorization", "Bearer " + TOKEN)
                .body())
        .get("dead_letters");
  }

  long deadLetterOf(String eventId) throws Exception {
    for (JsonNode d : deadLetters()) {
      if (d.get("body").get("id").asText().equals(eventId)) {
        return d.get("id").asLong();
      }
    }
    throw new AssertionError("no dead letter for " + eventId + " in " + deadLetters());
  }

  @Test
  void anOperatorSeesCountsMoveRequeuesAndPurgesDeadLettersAndExplainsADrop() throws Exception {
    // given a downstream that refuses every event for good, so each becomes a dead letter
    receiver.respond(400, "{\"error\":\"rejected\"}");

    // when the operator opens the console, it asks for the token
    browser.get(server.uri() + "/admin/ui/");
    waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("token")));
    browser.findElement(By.id("token")).sendKeys(TOKEN);
    browser.findElement(By.id("login")).click();

    // then the pipelines page shows the pipeline with no decisions yet
    String card = "[data-pipeline='orders'] ";
    waiting()
        .until(ExpectedConditions.presenceOfElementLocated(By.cssSelector(card + ".count-pass")));
    assertThat(text(card + ".count-pass")).isEqualTo("0");
    assertThat(text(card + "h3 a")).isEqualTo("orders");
    assertThat(browser.findElements(By.cssSelector(card + "svg.chart"))).hasSize(1);
    assertThat(browser.getCurrentUrl()).doesNotContain(TOKEN);

    // when events arrive, one of them twice
    assertThat(http.post("/hooks/orders", "{\"id\":\"b-1\"}").statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/orders", "{\"id\":\"b-2\"}").statusCode()).isEqualTo(202);
    assertThat(http.post("/hooks/orders", "{\"id\":\"b-1\"}").statusCode()).isEqualTo(200);

    // then the page's counts move by themselves
    textBecomes(card + ".count-pass", "2");
    textBecomes(card + ".count-duplicate", "1");
    textBecomes(card + ".count-dead_lettered", "2");
    textBecomes(card + ".dead-letter-count", "2");
    screenshot("1-pipelines");

    // when the downstream is fixed and the operator requeues b-1's dead letter
    receiver.respond(200, "{\"ok\":true}");
    int before = receiver.received().size(); // the receiver also recorded the refused attempts
    long requeued = deadLetterOf("b-1");
    long purged = deadLetterOf("b-2");
    browser.findElement(By.cssSelector(card + "h3 a")).click();
    waiting().until(ExpectedConditions.elementToBeClickable(By.id("tab-dead-letters"))).click();
    String row = "tr[data-dead-letter='" + requeued + "'] ";
    waiting()
        .until(ExpectedConditions.elementToBeClickable(By.cssSelector(row + "button.requeue")))
        .click();
    screenshot("2-dead-letters");

    // then the page says so, and the receiver gets the event, with its Idempotency-Key
    waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("flash"), "Requeued"));
    await()
        .atMost(WAIT)
        .until(
            () ->
                receiver.received().stream().skip(before).anyMatch(r -> r.body().contains("b-1")));
    assertThat(receiver.received().subList(before, receiver.received().size()))
        .filteredOn(r -> r.body().contains("b-1"))
        .singleElement()
        .satisfies(r -> assertThat(r.idempotencyKey()).startsWith("orders:"));

    // when the operator purges the other one
    waiting()
        .until(
            ExpectedConditions.elementToBeClickable(
                By.cssSelector("tr[data-dead-letter='" + purged + "'] button.purge")))
        .click();

    // then it is gone from the page and from the store
    waiting().until(ExpectedConditions.presenceOfElementLocated(By.id("no-dead-letters")));
    assertThat(deadLetters()).isEmpty();

    // and "why was b-1 dropped when the sender sent it again?" is answered by the explain form
    browser.findElement(By.id("tab-explain")).click();
    waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("explain-body")));
    browser.findElement(By.id("explain-body")).sendKeys("{\"id\":\"b-1\"}");
    browser.findElement(By.id("explain-submit")).click();
    textBecomes("#explain-decision", "duplicate");
    assertThat(text("#explain-why")).contains("duplicate").contains("accepted at");
    assertThat(text("#explain-state")).isEqualTo("committed");
    screenshot("3-explain");

    // and the recent decisions list the pass and the duplicate
    browser.findElement(By.id("tab-decisions")).click();
    waiting().until(ExpectedConditions.presenceOfElementLocated(By.id("decisions")));
    List<WebElement> decisions = browser.findElements(By.cssSelector("#decisions td.decision"));
    assertThat(decisions).extracting(WebElement::getText).contains("pass", "duplicate");
    screenshot("4-decisions");
  }

  @Test
  void theConsoleFilesAreServedWithoutTheTokenButTheApiIsNot() {
    assertThat(http.get("/admin/ui/").statusCode()).isEqualTo(200);
    assertThat(http.get("/admin/ui/").headers().firstValue("Content-Security-Policy"))
        .hasValueSatisfying(v -> assertThat(v).contains("script-src 'self'"));
    assertThat(http.get("/admin/ui/console.js").body()).contains("sessionStorage");
    assertThat(http.get("/admin/ui/nothing.js").statusCode()).isEqualTo(404);
    assertThat(http.get("/admin/pipelines").statusCode()).isEqualTo(401);
  }
}
