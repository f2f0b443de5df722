package dev.idem.server.source.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.impl.LongStringHelper;
import java.nio.charset.StandardCharsets;
import java.util.Date;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AmqpHeadersTest {

  @Test
  void readsTableValuesAsTextAndTheMessageIdUnderItsOwnName() {
    AMQP.BasicProperties props =
        new AMQP.BasicProperties.Builder()
            .messageId("msg-1")
            .headers(
                Map.of(
                    "X-Order-Id",
                    LongStringHelper.asLongString("o-ü"),
                    "X-Bytes",
                    "b".getBytes(StandardCharsets.UTF_8),
                    "X-Count",
                    42L,
                    "X-Flag",
                    true,
                    "X-Time",
                    new Date(1_700_000_000_000L),
                    "X-List",
                    List.of("a")))
            .build();

    AmqpHeaders h = AmqpHeaders.of(props);

    assertThat(h.apply("amqp-message-id")).isEqualTo("msg-1");
    assertThat(h.apply("AMQP-Message-Id")).isEqualTo("msg-1");
    assertThat(h.apply("x-order-id")).isEqualTo("o-ü");
    assertThat(h.apply("X-Bytes")).isEqualTo("b");
    assertThat(h.apply("X-Count")).isEqualTo("42");
    assertThat(h.apply("X-Flag")).isEqualTo("true");
    assertThat(h.apply("X-Time")).isEqualTo("1700000000");
    assertThat(h.apply("X-List")).isNull();
    assertThat(h.apply("X-Missing")).isNull();
    assertThat(h.number("X-Count")).isEqualTo(42);
  }

  @Test
  void aMessageWithoutPropertiesHasNoHeaders() {
    AmqpHeaders h = AmqpHeaders.of(null);

    assertThat(h.apply("amqp-message-id")).isNull();
    assertThat(h.apply("X-Any")).isNull();
  }
}
