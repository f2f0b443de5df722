package dev.idem.server.source.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.server.config.RabbitMqSourceSettings;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RequeueDelayTest {

  @Test
  void theDelayDoublesPerRoundOfRetriesUpToTheMaximum() {
    RabbitMqSourceSettings s =
        new RabbitMqSourceSettings(
            URI.create("amqp://h"),
            "q",
            10,
            1,
            5,
            Duration.ofMillis(100),
            Duration.ofSeconds(1),
            1024,
            64);

    assertThat(RabbitMqSource.delay(s, 0)).isEqualTo(Duration.ofMillis(100));
    assertThat(RabbitMqSource.delay(s, 1)).isEqualTo(Duration.ofMillis(200));
    assertThat(RabbitMqSource.delay(s, 3)).isEqualTo(Duration.ofMillis(800));
    assertThat(RabbitMqSource.delay(s, 4)).isEqualTo(Duration.ofSeconds(1));
    assertThat(RabbitMqSource.delay(s, 1_000)).isEqualTo(Duration.ofSeconds(1));
  }
}
