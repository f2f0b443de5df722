package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.LettuceVersion;
import org.junit.jupiter.api.Test;

/**
 * Pins which Lettuce line the tests run on: the default run uses 7.x; a second run (and the {@code
 * lettuce6} profile) uses 6.8, the line Spring Boot 4 pins. Without this check a build change could
 * silently run both on the same line.
 */
class LettuceLineTest {

  @Test
  void theTestsRunOnTheLettuceLineTheBuildAskedFor() {
    String expected = System.getProperty("idem.expect.lettuce");

    assertThat(expected).as("system property idem.expect.lettuce set by the build").isNotBlank();
    assertThat(LettuceVersion.getVersion()).startsWith(expected);
  }
}
