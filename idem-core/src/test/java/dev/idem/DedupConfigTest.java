package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.Ttl;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Defaults, builders and validation of a dedup step's config. */
class DedupConfigTest {

  @Test
  void theDefaultsAreA24HourSlidingWindowAndAFiveMinuteLease() {
    DedupConfig c = DedupConfig.ofDefaults();

    assertThat(c.ttl()).isEqualTo(Duration.ofHours(24)).isEqualTo(DedupConfig.DEFAULT_TTL);
    assertThat(c.expiry()).isEqualTo(Expiry.SLIDING);
    assertThat(c.lease()).isEqualTo(Duration.ofMinutes(5)).isEqualTo(DedupConfig.DEFAULT_LEASE);
    assertThat(c.ttlIfAny()).contains(Duration.ofHours(24));
    assertThat(c.storeTtl()).isEqualTo(new Ttl(86_400_000, Expiry.SLIDING));
    assertThat(DedupConfig.custom().build()).isEqualTo(c);
  }

  @Test
  void theBuilderSetsEveryField() {
    DedupConfig c =
        DedupConfig.custom()
            .ttl(Duration.ofMinutes(90))
            .expiry(Expiry.FIXED)
            .lease(Duration.ofSeconds(45))
            .build();

    assertThat(c)
        .isEqualTo(new DedupConfig(Duration.ofMinutes(90), Expiry.FIXED, Duration.ofSeconds(45)));
    assertThat(c.storeTtl()).isEqualTo(new Ttl(5_400_000, Expiry.FIXED));
  }

  @Test
  void noTtlKeepsKeysUntilEvictedOrForgotten() {
    DedupConfig c = DedupConfig.custom().noTtl().build();

    assertThat(c.ttl()).isNull();
    assertThat(c.ttlIfAny()).isEmpty();
    assertThat(c.storeTtl()).isEqualTo(Ttl.NONE);
    assertThat(c.storeTtl().expires()).isFalse();
  }

  @Test
  void fromCopiesAPrototypeAndLeavesItUnchanged() {
    DedupConfig prototype =
        DedupConfig.custom().ttl(Duration.ofHours(2)).expiry(Expiry.FIXED).build();

    DedupConfig derived = DedupConfig.from(prototype).lease(Duration.ofSeconds(10)).build();

    assertThat(derived)
        .isEqualTo(new DedupConfig(Duration.ofHours(2), Expiry.FIXED, Duration.ofSeconds(10)));
    assertThat(prototype.lease()).isEqualTo(DedupConfig.DEFAULT_LEASE);
    assertThat(DedupConfig.from(DedupConfig.custom().noTtl().build()).build().ttl()).isNull();
  }

  @Test
  void aBuilderUsedAgainAfterBuildDoesNotChangeWhatItBuilt() {
    DedupConfig.Builder b = DedupConfig.custom().ttl(Duration.ofMinutes(1));
    DedupConfig first = b.build();

    b.ttl(Duration.ofMinutes(2)).expiry(Expiry.FIXED);

    assertThat(first.ttl()).isEqualTo(Duration.ofMinutes(1));
    assertThat(first.expiry()).isEqualTo(Expiry.SLIDING);
    assertThat(b.build().ttl()).isEqualTo(Duration.ofMinutes(2));
  }

  @Test
  void aTtlUnderOneMillisecondIsRejectedWithTheFix() {
    assertThatThrownBy(() -> DedupConfig.custom().ttl(Duration.ZERO).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("ttl (window) must be at least 1ms, got PT0S")
        .hasMessageContaining("omit it for no TTL");
    assertThatThrownBy(() -> DedupConfig.custom().ttl(Duration.ofNanos(999_999)).build())
        .isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> DedupConfig.custom().ttl(Duration.ofSeconds(-5)).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("PT-5S");
    assertThat(DedupConfig.custom().ttl(Duration.ofMillis(1)).build().storeTtl().millis())
        .isEqualTo(1);
  }

  @Test
  void aLeaseUnderOneMillisecondIsRejected() {
    assertThatThrownBy(() -> DedupConfig.custom().lease(Duration.ZERO).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("lease must be at least 1ms, got PT0S");
    assertThatThrownBy(() -> new DedupConfig(null, Expiry.SLIDING, Duration.ofMillis(-1)))
        .isInstanceOf(IdemConfigException.class);
  }

  @Test
  void aTtlTooLargeForMillisecondsIsAConfigErrorNotAnArithmeticException() {
    assertThatThrownBy(() -> DedupConfig.custom().ttl(Duration.ofSeconds(Long.MAX_VALUE)).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("ttl");
    assertThatThrownBy(() -> DedupConfig.custom().lease(Duration.ofSeconds(Long.MAX_VALUE)).build())
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("lease");
  }

  @Test
  void nullsAreRejected() {
    assertThatThrownBy(() -> DedupConfig.custom().ttl(null))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> DedupConfig.custom().expiry(null))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> DedupConfig.custom().lease(null))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new DedupConfig(null, null, Duration.ofSeconds(1)))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("expiry");
  }
}
