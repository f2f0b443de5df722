package dev.idem.ordering;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class OrderingConfigTest {

  @Test
  void defaultsAreStrictWithSixtySecondLockTtl() {
    // when
    OrderingConfig config = OrderingConfig.ofDefaults();

    // then
    assertThat(config.mode()).isEqualTo(OrderingMode.STRICT);
    assertThat(config.lockTtl()).isEqualTo(Duration.ofSeconds(60));
    assertThat(OrderingConfig.custom().build()).isEqualTo(config);
  }

  @Test
  void builderSetsEveryField() {
    // when
    OrderingConfig config =
        OrderingConfig.custom()
            .mode(OrderingMode.BEST_EFFORT)
            .lockTtl(Duration.ofSeconds(30))
            .build();

    // then
    assertThat(config)
        .isEqualTo(new OrderingConfig(OrderingMode.BEST_EFFORT, Duration.ofSeconds(30)));
  }

  @Test
  void fromCopiesThePrototypeAndLeavesItUnchanged() {
    // given
    OrderingConfig prototype = new OrderingConfig(OrderingMode.BEST_EFFORT, Duration.ofSeconds(10));

    // when
    OrderingConfig changed = OrderingConfig.from(prototype).lockTtl(Duration.ofSeconds(20)).build();

    // then
    assertThat(changed.mode()).isEqualTo(OrderingMode.BEST_EFFORT);
    assertThat(changed.lockTtl()).isEqualTo(Duration.ofSeconds(20));
    assertThat(prototype.lockTtl()).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void oneMillisecondIsTheShortestLockTtl() {
    assertThat(OrderingConfig.custom().lockTtl(Duration.ofMillis(1)).build().lockTtl())
        .isEqualTo(Duration.ofMillis(1));
  }

  @Test
  void rejectsLockTtlBelowOneMillisecondNamingTheFieldAndWhatIsAllowed() {
    for (Duration bad :
        new Duration[] {Duration.ZERO, Duration.ofSeconds(-1), Duration.ofNanos(999_999)}) {
      assertThatThrownBy(() -> OrderingConfig.custom().lockTtl(bad).build())
          .isInstanceOf(IdemConfigException.class)
          .hasMessageContaining("lockTtl (ordering.lock_ttl)")
          .hasMessageContaining("at least 1ms")
          .hasMessageContaining(bad.toString());
    }
  }

  @Test
  void rejectsNulls() {
    assertThatThrownBy(() -> new OrderingConfig(null, Duration.ofSeconds(1)))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("mode");
    assertThatThrownBy(() -> new OrderingConfig(OrderingMode.STRICT, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("lockTtl");
    assertThatThrownBy(() -> OrderingConfig.custom().mode(null))
        .isInstanceOf(NullPointerException.class);
  }
}
