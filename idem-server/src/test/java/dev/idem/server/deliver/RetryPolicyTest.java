package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {
  private final RetryPolicy policy =
      new RetryPolicy(8, Duration.ofMillis(500), Duration.ofSeconds(10));

  @Test
  void theCeilingDoublesPerAttemptUpToTheMaximum() {
    assertThat(policy.backoffCeiling(1)).isEqualTo(Duration.ofMillis(500));
    assertThat(policy.backoffCeiling(2)).isEqualTo(Duration.ofMillis(1000));
    assertThat(policy.backoffCeiling(3)).isEqualTo(Duration.ofMillis(2000));
    assertThat(policy.backoffCeiling(5)).isEqualTo(Duration.ofMillis(8000));
    assertThat(policy.backoffCeiling(6)).isEqualTo(Duration.ofSeconds(10));
    assertThat(policy.backoffCeiling(100)).isEqualTo(Duration.ofSeconds(10));
    assertThat(policy.maxAttempts()).isEqualTo(9);
  }

  @Test
  void fullJitterSpreadsTheWaitFromZeroToTheCeiling() {
    assertThat(policy.backoff(3, 0.0, null)).isEqualTo(Duration.ZERO);
    assertThat(policy.backoff(3, 0.25, null)).isEqualTo(Duration.ofMillis(500));
    assertThat(policy.backoff(3, 0.999, null)).isEqualTo(Duration.ofMillis(1998));
  }

  @Test
  void retryAfterIsAFloorCappedAtTheMaximum() {
    assertThat(policy.backoff(1, 0.5, Duration.ofSeconds(3))).isEqualTo(Duration.ofSeconds(3));
    assertThat(policy.backoff(5, 0.999, Duration.ofSeconds(1))).isEqualTo(Duration.ofMillis(7992));
    assertThat(policy.backoff(1, 0.5, Duration.ofHours(1))).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void validatesItsFields() {
    assertThatThrownBy(() -> new RetryPolicy(-1, Duration.ofSeconds(1), Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> new RetryPolicy(1, Duration.ZERO, Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> new RetryPolicy(1, Duration.ofSeconds(2), Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class);
  }
}
