package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class DeliveryCodecTest {
  private static final HexFormat HEX = HexFormat.of();

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void encodesTheSmallestDeliveryAsTheFixedVector() {
    Delivery d = new Delivery("p", "k", null, utf8("{}"), Map.of());

    assertThat(HEX.formatHex(DeliveryCodec.encode(d))).isEqualTo("010170016b0000027b7d");
  }

  @Test
  void encodesOrderingKeyAndSortedHeadersAsTheFixedVector() {
    Map<String, String> headers = new LinkedHashMap<>();
    headers.put("X-B", "2");
    headers.put("Content-Type", "application/json");
    Delivery d = new Delivery("shop-orders", "abc", "cust-1", utf8("{\"a\":1}"), headers);

    String expected =
        "01"
            + "0b"
            + "73686f702d6f7264657273" // shop-orders
            + "03"
            + "616263" // abc
            + "07"
            + "637573742d31" // cust-1, length + 1
            + "02" // two headers, sorted by name
            + "0c"
            + "436f6e74656e742d54797065" // Content-Type
            + "10"
            + "6170706c69636174696f6e2f6a736f6e" // application/json
            + "03"
            + "582d42" // X-B
            + "01"
            + "32" // 2
            + "07"
            + "7b2261223a317d"; // {"a":1}
    assertThat(HEX.formatHex(DeliveryCodec.encode(d))).isEqualTo(expected);
    assertThat(DeliveryCodec.decode(HEX.parseHex(expected)))
        .satisfies(
            back -> {
              assertThat(back.pipeline()).isEqualTo("shop-orders");
              assertThat(back.idempotencyKey()).isEqualTo("abc");
              assertThat(back.orderingKey()).isEqualTo("cust-1");
              assertThat(back.headers()).isEqualTo(headers);
              assertThat(back.body()).isEqualTo(utf8("{\"a\":1}"));
            });
  }

  @Test
  void roundTripsEmptyStringsUnicodeBinaryAndLongBodies() {
    Random random = new Random(42);
    byte[] binary = new byte[70_000]; // longer than a two-byte varint
    random.nextBytes(binary);
    Delivery[] cases = {
      new Delivery("p", "", "", new byte[0], Map.of()),
      new Delivery("pipé-日本", "ключ", "客户", utf8("{\"ü\":\"😀\"}"), Map.of("X-Ä", "ö")),
      new Delivery("p", "k", null, binary, Map.of("a", "", "b", "c")),
    };
    for (Delivery d : cases) {
      Delivery back = DeliveryCodec.decode(DeliveryCodec.encode(d));
      assertThat(back.pipeline()).isEqualTo(d.pipeline());
      assertThat(back.idempotencyKey()).isEqualTo(d.idempotencyKey());
      assertThat(back.orderingKey()).isEqualTo(d.orderingKey());
      assertThat(back.headers()).isEqualTo(d.headers());
      assertThat(back.body()).isEqualTo(d.body());
    }
  }

  @Test
  void anEmptyOrderingKeyIsNotTheSameAsNone() {
    assertThat(
            DeliveryCodec.decode(
                    DeliveryCodec.encode(new Delivery("p", "k", "", new byte[0], Map.of())))
                .orderingKey())
        .isEmpty();
    assertThat(
            DeliveryCodec.decode(
                    DeliveryCodec.encode(new Delivery("p", "k", null, new byte[0], Map.of())))
                .orderingKey())
        .isNull();
  }

  @Test
  void rejectsUnknownVersionsAndCorruptPayloads() {
    byte[] good = HEX.parseHex("010170016b0000027b7d");

    assertThatThrownBy(() -> DeliveryCodec.decode(HEX.parseHex("020170016b0000027b7d")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("version 2");
    assertThatThrownBy(() -> DeliveryCodec.decode(new byte[0]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ends early");
    for (int cut = 1; cut < good.length; cut++) {
      byte[] truncated = java.util.Arrays.copyOf(good, cut);
      assertThatThrownBy(() -> DeliveryCodec.decode(truncated))
          .as("cut at %d", cut)
          .isInstanceOf(IllegalArgumentException.class);
    }
    byte[] trailing = java.util.Arrays.copyOf(good, good.length + 1);
    assertThatThrownBy(() -> DeliveryCodec.decode(trailing))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("follow the body");
    assertThatThrownBy(() -> DeliveryCodec.decode(HEX.parseHex("01ffffffff7f")))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
