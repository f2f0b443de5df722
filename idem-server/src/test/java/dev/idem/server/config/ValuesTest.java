package dev.idem.server.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ValuesTest {
  @Test
  void durationsTakeEveryUnitAndPrintBackTheSame() {
    assertThat(Durations.parse("250ms")).isEqualTo(Duration.ofMillis(250));
    assertThat(Durations.parse("30s")).isEqualTo(Duration.ofSeconds(30));
    assertThat(Durations.parse("5m")).isEqualTo(Duration.ofMinutes(5));
    assertThat(Durations.parse("24h")).isEqualTo(Duration.ofHours(24));
    assertThat(Durations.parse("7d")).isEqualTo(Duration.ofDays(7));
    assertThat(Durations.format(Duration.ofHours(48))).isEqualTo("2d");
    assertThat(Durations.format(Duration.ofSeconds(90))).isEqualTo("90s");
    assertThat(Durations.format(Duration.ofMillis(1500))).isEqualTo("1500ms");
  }

  @Test
  void durationsWithoutAUnitOrWithAFractionAreRefused() {
    for (String bad : new String[] {"30", "1.5h", "h", "-5m", "5 min", "1w"}) {
      assertThatThrownBy(() -> Durations.parse(bad))
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("is not a duration");
    }
  }

  @Test
  void sizesTakeBinaryUnits() {
    assertThat(DataSizes.parse("512KiB")).isEqualTo(512 * 1024);
    assertThat(DataSizes.parse("1MiB")).isEqualTo(1 << 20);
    assertThat(DataSizes.parse("65536")).isEqualTo(65536);
    assertThat(DataSizes.format(1 << 20)).isEqualTo("1MiB");
    assertThatThrownBy(() -> DataSizes.parse("1MB")).hasMessageContaining("is not a size");
  }

  @Test
  void durationsAndSizesOverTheirBoundAreRefusedWithoutOverflowing() {
    // 106751991168d is just over Long.MAX_VALUE milliseconds
    assertThatThrownBy(() -> Durations.parse("106751991168d"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessage("must be at most 3650d, got 106751991168d; use a shorter one");
    assertThatThrownBy(() -> Durations.parse("25h", Duration.ofHours(24)))
        .hasMessageContaining("at most 1d");
    assertThat(Durations.parse("3650d")).isEqualTo(Durations.MAX);
    assertThat(Durations.parse("24h", Duration.ofHours(24))).isEqualTo(Duration.ofHours(24));
    assertThatThrownBy(() -> DataSizes.parse("999999999999GiB"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("at most 1024GiB");
    assertThatThrownBy(() -> DataSizes.parse("65MiB", 64L << 20))
        .hasMessageContaining("at most 64MiB");
    assertThat(DataSizes.parse("1024GiB")).isEqualTo(DataSizes.MAX);
  }

  @Test
  void secretsAreMaskedInUrlsAndHeaders() {
    assertThat(Masking.url("redis://:hunter2@127.0.0.1:6379"))
        .isEqualTo("redis://***@127.0.0.1:6379");
    assertThat(Masking.url("jdbc:postgresql://db/idem?user=u&password=hunter2"))
        .isEqualTo("jdbc:postgresql://db/idem?user=u&password=***");
    assertThat(Masking.url("http://127.0.0.1:9000/x")).isEqualTo("http://127.0.0.1:9000/x");
    assertThat(Masking.isSecretHeader("Authorization")).isTrue();
    assertThat(Masking.isSecretHeader("X-Api-Key")).isTrue();
    assertThat(Masking.isSecretHeader("X-Team")).isFalse();
  }

  @Test
  void settingsPrintWithoutSecrets() {
    ServerSettings s =
        new ServerSettings(
            "0.0.0.0", 8080, "very-secret-admin-token", 200, Duration.ofSeconds(1), null);
    StoreSettings st =
        new StoreSettings(
            StoreType.JDBC, null, null, "jdbc:postgresql://h/db", null, "u", "pw-123", null);

    assertThat(s.toString()).doesNotContain("very-secret-admin-token");
    assertThat(st.toString()).doesNotContain("pw-123");
  }
}
