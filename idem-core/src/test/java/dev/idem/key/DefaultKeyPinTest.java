package dev.idem.key;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Pins the default key of the two 1 KiB bodies that {@code KeyDerivationBenchmark} measures, so
 * that a change made for speed (the number fast paths, the wide-object sort) cannot change a key's
 * value: the values were taken from the build before those changes (key format v2, exact numbers).
 */
class DefaultKeyPinTest {
  /** {@code KeyDerivationBenchmark.BODY}: an order webhook, members unsorted. */
  static final String ORDER =
      "{\"id\":5935178948745,"
          + "\"created_at\":\"2026-11-30T09:12:44-05:00\",\"currency\":\"EUR\",\"total_price\":"
          + "129.95,\"subtotal_price\":119.96,\"total_tax\":20.74,\"taxes_included\":true,"
          + "\"financial_status\":\"paid\",\"fulfillment_status\":null,\"confirmed\":true,"
          + "\"email\":\"zoë.müller@example.com\",\"note\":\"Bitte an der Tür abstellen \\u2013"
          + " danke!\",\"tags\":[\"vip\",\"wholesale\",\"🎁 gift\"],\"customer\":{\"id\":"
          + "7134568923,\"first_name\":\"Zoë\",\"last_name\":\"Müller\",\"orders_count\":1700,"
          + "\"verified_email\":true,\"accepts_marketing\":false},\"shipping_address\":{"
          + "\"address1\":\"Hauptstraße 5\",\"city\":\"München\",\"zip\":\"D-80331\",\"country_code\":"
          + "\"DE\",\"latitude\":48.1371079,\"longitude\":11.5753822},\"line_items\":[{\"id\":"
          + "13648093528201,\"sku\":\"TEE-BLK-M\",\"title\":\"T-Shirts \\\"Classic\\\"\","
          + "\"quantity\":2,\"price\":29.99,\"taxable\":true,\"properties\":[]},{\"id\":"
          + "13648093560969,\"sku\":\"MUG-01\",\"title\":\"Tasse – 350 ml\",\"quantity\":1,"
          + "\"price\":59.98,\"grams\":420,\"taxable\":true,\"discount_allocations\":[{\"amount\":"
          + "5.0,\"discount_application_index\":0}]}],\"shipping_lines\":[{\"code\":\"DHL\","
          + "\"price\":9.99}]}";

  /** {@code KeyDerivationBenchmark.NUMBERS}. */
  private static final String[] NUMBERS = {
    "820982911946154508", "5935178948745", "-12.50", "1.0E3", "0.000001", "129.95", "1e-7",
    "3.14159265358979323846", "2.5e+2", "100", "0.10", "-0", "18446744073709551615",
        "6.02214076e23",
    "1.7976931348623157e308", "42", "0.000012300", "7E-10", "-98765.4321000", "1e21"
  };

  /** {@code KeyDerivationBenchmark.numbersBody()}: 59 numbers (wider than 32 members) and a pad. */
  static String numbersBody() {
    StringBuilder sb = new StringBuilder("{");
    for (int i = 0; sb.length() < 1024 - 60; i++) {
      sb.append('"').append('n').append(i).append("\":").append(NUMBERS[i % NUMBERS.length]);
      sb.append(',');
    }
    sb.append("\"pad\":\"");
    while (sb.length() < 1024 - 2) {
      sb.append('x');
    }
    return sb.append("\"}").toString();
  }

  private static String key(String body, boolean principal) {
    InboundEvent.Builder b = InboundEvent.builder().body(body.getBytes(StandardCharsets.UTF_8));
    if (principal) {
      b.principal("https://auth.example", "shop-42");
    }
    return KeyRule.defaultKey().derive(b.build()).toHex();
  }

  @Test
  void theOrderBodysKeyIsPinned() {
    assertThat(ORDER.getBytes(StandardCharsets.UTF_8)).hasSize(1024);
    assertThat(key(ORDER, true))
        .isEqualTo("c3363a7a5eff731a10afd10292e6e4306c263ffc9332e9f552252386186d3510");
    assertThat(key(ORDER, false))
        .isEqualTo("c71fce37f6138d0ef2c643c988d79d6f4a09176a7869728e13b7b07cd601a305");
  }

  @Test
  void theNumbersBodysCanonicalFormAndKeyArePinned() {
    String body = numbersBody();
    assertThat(body.getBytes(StandardCharsets.UTF_8)).hasSize(1024);
    assertThat(
            new String(
                CanonicalJson.canonicalize(body.getBytes(StandardCharsets.UTF_8)),
                StandardCharsets.UTF_8))
        .isEqualTo(
            "{\"n0\":820982911946154508,\"n1\":5935178948745,\"n10\":0.1,\"n11\":0,\"n12\":184467440737"
                + "09551615,\"n13\":6.02214076e+23,\"n14\":1.7976931348623157e+308,\"n15\":42,\"n16\":0.000"
                + "0123,\"n17\":7e-10,\"n18\":-98765.4321,\"n19\":1e+21,\"n2\":-12.5,\"n20\":8209829119461545"
                + "08,\"n21\":5935178948745,\"n22\":-12.5,\"n23\":1000,\"n24\":0.000001,\"n25\":129.95,\"n26\":"
                + "1e-7,\"n27\":3.14159265358979323846,\"n28\":250,\"n29\":100,\"n3\":1000,\"n30\":0.1,\"n31\":"
                + "0,\"n32\":18446744073709551615,\"n33\":6.02214076e+23,\"n34\":1.7976931348623157e+308,"
                + "\"n35\":42,\"n36\":0.0000123,\"n37\":7e-10,\"n38\":-98765.4321,\"n39\":1e+21,\"n4\":0.000001"
                + ",\"n40\":820982911946154508,\"n41\":5935178948745,\"n42\":-12.5,\"n43\":1000,\"n44\":0.000"
                + "001,\"n45\":129.95,\"n46\":1e-7,\"n47\":3.14159265358979323846,\"n48\":250,\"n49\":100,\"n5"
                + "\":129.95,\"n50\":0.1,\"n51\":0,\"n52\":18446744073709551615,\"n53\":6.02214076e+23,\"n54\""
                + ":1.7976931348623157e+308,\"n55\":42,\"n56\":0.0000123,\"n57\":7e-10,\"n58\":-98765.4321,"
                + "\"n6\":1e-7,\"n7\":3.14159265358979323846,\"n8\":250,\"n9\":100,\"pad\":\"xxxxxxxxxxxxxxxxx"
                + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}");
    assertThat(key(body, true))
        .isEqualTo("abb283eccf6541f42deb537f25732b6c05869e6e4512dfebeca98334f6643d13");
    assertThat(key(body, false))
        .isEqualTo("6d206a623b3186c3929319ac77663626290c950f225c19cc395cb9e47fe4c22e");
  }

  /**
   * The no-copy path for decimals whose trailing fraction zeros are cut, at its edges, against the
   * BigDecimal oracle.
   */
  @Test
  void trailingZeroDecimalsAreCutToTheExactForm() {
    String[] texts = {
      "-12.50",
      "100.00",
      "7.0",
      "-7.000",
      "0.10",
      "-0.10",
      "0.0",
      "-0.000",
      "0.0000010",
      "0.00000010",
      "0.000000",
      "123456789012345678901.000",
      "1234567890123456789012.0",
      "999999999999999999999.9990",
      "0.000001000",
      "-0.0000001000",
      "5.05050",
      "10.10"
    };
    for (String text : texts) {
      String canonical =
          new String(
              CanonicalJson.canonicalize(("[" + text + "]").getBytes(StandardCharsets.UTF_8)),
              StandardCharsets.UTF_8);
      assertThat(canonical)
          .as(text)
          .isEqualTo("[" + ExactNumberOracle.canonical(new BigDecimal(text)) + "]");
    }
  }

  /**
   * Objects wider than 32 members sort on their name prefixes with a merge sort; names that share
   * their first eight bytes fall back to the whole-name comparison there, and a duplicate among
   * them is still found.
   */
  @Test
  void wideObjectsWithSharedPrefixesSortByWholeNamesAndFindDuplicates() {
    long seed = new Random().nextLong();
    Random random = new Random(seed);
    for (int round = 0; round < 200; round++) {
      int n = 33 + random.nextInt(200);
      TreeMap<String, Integer> sorted = new TreeMap<>(); // String order is UTF-16 code unit order
      while (sorted.size() < n) {
        String name =
            switch (random.nextInt(3)) {
              case 0 -> "shipping_" + random.nextInt(1000);
              case 1 -> "n" + random.nextInt(1000);
              default -> "shipping_address_line_" + random.nextInt(1000);
            };
        sorted.put(name, random.nextInt(100));
      }
      List<String> members = new ArrayList<>();
      sorted.forEach((k, v) -> members.add("\"" + k + "\":" + v));
      String expected = "{" + String.join(",", members) + "}";
      Collections.shuffle(members, random);
      String shuffled = "{" + String.join(",", members) + "}";
      assertThat(
              new String(
                  CanonicalJson.canonicalize(shuffled.getBytes(StandardCharsets.UTF_8)),
                  StandardCharsets.UTF_8))
          .as("seed %d", seed)
          .isEqualTo(expected);
      members.add(random.nextInt(members.size()), members.get(random.nextInt(members.size())));
      String withDuplicate = "{" + String.join(",", members) + "}";
      assertThatThrownBy(
              () -> CanonicalJson.canonicalize(withDuplicate.getBytes(StandardCharsets.UTF_8)))
          .as("seed %d", seed)
          .hasMessageContaining("duplicate member name");
    }
  }
}
