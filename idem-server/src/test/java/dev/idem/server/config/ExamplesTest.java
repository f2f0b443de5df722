package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.server.support.TestCertificates;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Every file in examples/ is a valid config, as `idem check-config` would say. */
class ExamplesTest {
  static final Path EXAMPLES = Path.of("..", "examples");

  /** The TLS files examples/mtls.yaml reads (made for the test, in IDEM_TLS_DIR). */
  static final Path TLS_DIR = tlsDir();

  private static Path tlsDir() {
    try {
      Path dir = Files.createTempDirectory("idem-examples-tls");
      dir.toFile().deleteOnExit();
      TestCertificates.writeServerFiles(dir);
      for (String f : new String[] {"server.pem", "server-key.pem", "clients-ca.pem"}) {
        dir.resolve(f).toFile().deleteOnExit();
      }
      return dir;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** The secrets the examples require from the environment. */
  static final Map<String, String> ENV =
      Map.of(
          "IDEM_TLS_DIR", TLS_DIR.toString(),
          "STRIPE_WEBHOOK_SECRET", "whsec_dGVzdHNlY3JldA==",
          "GITHUB_WEBHOOK_SECRET", "github-secret",
          "SHOP_SECRET", "shop-secret",
          "SVIX_WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");

  static List<Path> examples() throws IOException {
    try (Stream<Path> files = Files.list(EXAMPLES)) {
      return files.filter(f -> f.toString().endsWith(".yaml")).sorted().toList();
    }
  }

  @ParameterizedTest
  @MethodSource("examples")
  void parses(Path example) {
    IdemConfig config = ConfigLoader.load(example, ENV::get);

    assertThat(config.pipelines()).isNotEmpty();
    // The printed effective config is itself a loadable config (secrets aside).
    String printed = ConfigPrinter.toYaml(config);
    assertThat(printed).doesNotContain("shop-secret", "github-secret", "whsec_");
    IdemConfig again =
        ConfigLoader.parse(
            "printed.yaml",
            printed.replace("\"***\"", "0123456789abcdef").replace("***", "0123456789abcdef"),
            ENV::get);
    assertThat(again.pipelines()).hasSameSizeAs(config.pipelines());
  }

  @ParameterizedTest
  @MethodSource("examples")
  void theQuickstartNeedsNoExternalService(Path example) {
    if (!example.getFileName().toString().equals("quickstart.yaml")) {
      return;
    }
    IdemConfig config = ConfigLoader.load(example, name -> null);

    assertThat(config.store().type()).isEqualTo(StoreType.ROCKSDB);
    assertThat(config.server().port()).isEqualTo(8080);
    assertThat(config.pipelines())
        .singleElement()
        .satisfies(p -> assertThat(p.deliver().sink()).isEqualTo(new SinkSettings.Stdout()));
  }
}
