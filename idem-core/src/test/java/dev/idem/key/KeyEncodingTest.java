package dev.idem.key;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.KeyDerivationException;
import dev.idem.internal.Sha256Words;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class KeyEncodingTest {
  private static final HexFormat HEX = HexFormat.of();

  /**
   * Format v1, pinned. These vectors were computed once from the format as documented in {@link
   * KeyEncoding}, by an independent script (not by this code). If one fails, the format changed:
   * every stored key would be forgotten. Do not update them; bump the version instead.
   */
  @Nested
  class FixedVectors {
    private final byte[] bodyDigest =
        HEX.parseHex("5b5d82aaeb95ac2e6133766daebcd7700f60be6acd66dc096decd7b3f195f320");

    @Test
    void noComponents() {
      vector(
          List.of(),
          "49444b0100000000",
          "3cb36be45f63562c7c06d36c596cafe6510d5f9573368148918b9106b58e5614");
    }

    @Test
    void text() {
      vector(
          List.of(KeyPart.text("ab")),
          "49444b010000000101000000026162",
          "76e68250218efcd7a64e90e4b4e86c14e7592fdf828f15800e3d79ad6852d303");
      vector(
          List.of(KeyPart.text("")),
          "49444b01000000010100000000",
          "be55d5db80c97b6cecffe04706322b5cf5e181129d6d86318e004fda81b07600");
      vector(
          List.of(KeyPart.text("1")),
          "49444b0100000001010000000131",
          "78667118db3434c35477c5b4ff756a6e216ab6eee292e1839e838e98e885c987");
      vector(
          List.of(KeyPart.text("café \uD83D\uDE02")),
          "49444b0100000001010000000a636166c3a920f09f9882",
          "abd1c87ed0945f84ecc3c1b6a9c30edf6063588203ab1a6b236c59ba5455b542");
    }

    @Test
    void splitTextIsNotConcatenatedText() {
      vector(
          List.of(KeyPart.text("ab"), KeyPart.text("c")),
          "49444b010000000201000000026162010000000163",
          "f4c87aae7c06cf4e9049bb0baddc551476804bf1e364458312585ba143819ac0");
      vector(
          List.of(KeyPart.text("a"), KeyPart.text("bc")),
          "49444b010000000201000000016101000000026263",
          "22a78b0c8c46c1387079bd54d4a1e5679d6e03a76e1bfe6e416c9d85f4d8fe14");
    }

    @Test
    void integer() {
      vector(
          List.of(KeyPart.integer(1)),
          "49444b010000000103000000080000000000000001",
          "ecc17c335fb5d4e8eddef3f77b9a739c261c219d0af286fe35910285d3b49e4e");
      vector(
          List.of(KeyPart.integer(Long.MIN_VALUE)),
          "49444b010000000103000000088000000000000000",
          "485049abf644ee64e96e34ee31381dad55338624c73923cd687a9ef3363157c1");
    }

    @Test
    void bytes() {
      vector(
          List.of(KeyPart.bytes(new byte[] {0, 1, (byte) 0xfe, (byte) 0xff})),
          "49444b010000000102000000040001feff",
          "d39cb4fecbb2e57ec0b36c1a61aa4e4b0cf02e59c75b1a82b2cb67a64be51cf9");
    }

    @Test
    void json() {
      vector(
          List.of(KeyPart.json(utf8("null"))),
          "49444b010000000104000000046e756c6c",
          "92ef73fab150830e02c76274205fa9c9e4716af234e3bd0cee7b5106be38e8c5");
      vector(
          List.of(KeyPart.json(utf8("{ \"b\": true, \"a\": [1.0, \"x\"] }"))),
          "49444b010000000104000000167b2261223a5b312c2278225d2c2262223a747275657d",
          "703c5e9947ef7f2dd4a10eb18168656d75c63feeb06403464f7375a789080809");
    }

    @Test
    void principalChain() {
      vector(
          List.of(KeyPart.principalChain(List.of())),
          "49444b0100000001050000000400000000",
          "110b1cbae4bca4c870563b3253f92dd8165b4780ca73c8ca4b61aff07b11980b");
      vector(
          List.of(
              KeyPart.principalChain(
                  List.of(
                      new Principal("https://issuer.example", "user-1"),
                      new Principal("https://issuer.example", "svc-2")))),
          "49444b0100000001050000004b000000020000001668747470733a2f2f6973737565722e6578616d706c65"
              + "00000006757365722d310000001668747470733a2f2f6973737565722e6578616d706c6500000005"
              + "7376632d32",
          "c009d8cf50e46f331befa4a8c39c36c7c3890b544628f3e8acff6fefc5787a10");
    }

    @Test
    void digest() {
      byte[] digest = new byte[32];
      for (int i = 0; i < 32; i++) {
        digest[i] = (byte) i;
      }
      vector(
          List.of(KeyPart.digest(digest)),
          "49444b01000000010600000020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e"
              + "1f",
          "acc7528adb912fdf91b073ec53eaeb4305e6b4e54d2f921b140e99286be19255");
    }

    @Test
    void fieldAndHeader() {
      vector(
          List.of(KeyPart.field("order-1"), KeyPart.header("order-1")),
          "49444b010000000207000000076f726465722d3108000000076f726465722d31",
          "5e0333135b482df85e4046d2b0ca81b5fa29e15396f6a414aa2e09d29ebb1b09");
    }

    @Test
    void defaultKeyShape() {
      // The default key of body {"id":"evt_1","amount":1999,"currency":"eur"}: its canonical form
      // {"amount":1999,"currency":"eur","id":"evt_1"} hashes to bodyDigest.
      byte[] body = utf8("{\"id\":\"evt_1\",\"amount\":1999,\"currency\":\"eur\"}");
      assertThat(CanonicalJson.sha256(body)).isEqualTo(bodyDigest);
      assertThat(KeyRule.defaultKey().derive(InboundEvent.of(body, Map.of())).toHex())
          .isEqualTo("32281003bf2de8cd84a9f8f49e4cd4a3948f376c73eed9e00920d3129c349f8a");
      assertThat(
              KeyRule.defaultKey()
                  .derive(InboundEvent.builder().body(body).principal("iss", "alice").build())
                  .toHex())
          .isEqualTo("cc47efe29306e745e5987b1ef50881b4b30a4ea25335ab96a23e3056d4bbd221");
      vector(
          List.of(KeyPart.principalChain(List.of()), KeyPart.digest(bodyDigest)),
          "49444b010000000205000000040000000006000000205b5d82aaeb95ac2e6133766daebcd7700f60be6acd"
              + "66dc096decd7b3f195f320",
          "32281003bf2de8cd84a9f8f49e4cd4a3948f376c73eed9e00920d3129c349f8a");
    }

    @Test
    void ofStringIsOneTextPart() {
      assertThat(KeyEncoding.ofString("ab").toHex())
          .isEqualTo("76e68250218efcd7a64e90e4b4e86c14e7592fdf828f15800e3d79ad6852d303");
    }

    private void vector(List<KeyPart> parts, String encodedHex, String keyHex) {
      assertThat(HEX.formatHex(KeyEncoding.encode(parts))).isEqualTo(encodedHex);
      assertThat(KeyEncoding.of(parts).toHex()).isEqualTo(keyHex);
      assertThat(KeyEncoding.of(parts.toArray(KeyPart[]::new)))
          .isEqualTo(DedupKey.parseHex(keyHex));
    }
  }

  @Nested
  class Unambiguous {
    @Test
    void typesNeverEncodeAlike() {
      List<List<KeyPart>> inputs =
          List.of(
              List.of(),
              List.of(KeyPart.text("")),
              List.of(KeyPart.bytes(new byte[0])),
              List.of(KeyPart.json(utf8("null"))),
              List.of(KeyPart.text("1")),
              List.of(KeyPart.integer(1)),
              List.of(KeyPart.json(utf8("1"))),
              List.of(KeyPart.field("1")),
              List.of(KeyPart.header("1")),
              List.of(KeyPart.bytes(utf8("1"))),
              List.of(KeyPart.text(""), KeyPart.text("")),
              List.of(KeyPart.principalChain(List.of())),
              List.of(KeyPart.principalChain(List.of(new Principal("", "1")))));
      Map<ByteBuffer, List<KeyPart>> seen = new HashMap<>();
      for (List<KeyPart> input : inputs) {
        List<KeyPart> previous = seen.put(ByteBuffer.wrap(KeyEncoding.encode(input)), input);
        assertThat(previous).as("same bytes as %s", input).isNull();
      }
    }

    @Test
    void principalLinksDoNotShiftIntoEachOther() {
      assertThat(
              KeyEncoding.of(
                  KeyPart.principalChain(
                      List.of(new Principal("ab", "c"), new Principal("d", "e")))))
          .isNotEqualTo(
              KeyEncoding.of(
                  KeyPart.principalChain(
                      List.of(new Principal("a", "bc"), new Principal("d", "e")))));
      assertThat(KeyEncoding.of(KeyPart.principalChain(List.of(new Principal("a", "b")))))
          .isNotEqualTo(KeyEncoding.of(KeyPart.principalChain(List.of(new Principal("b", "a")))));
    }

    /**
     * Random lists over tiny alphabets, so that near-collisions (split points, empty parts, equal
     * payloads under different types) are common. Different lists must give different bytes, and
     * the bytes must parse back (by the documented format) to the list.
     */
    @Test
    void randomComponentListsEncodeInjectively() {
      long seed = new SplittableRandom().nextLong();
      SplittableRandom random = new SplittableRandom(seed);
      Map<ByteBuffer, List<KeyPart>> seen = new HashMap<>();
      for (int i = 0; i < 100_000; i++) {
        List<KeyPart> parts = randomParts(random);
        byte[] encoded = KeyEncoding.encode(parts);
        assertThat(decode(encoded)).as("seed %d: decode(encode(%s))", seed, parts).isEqualTo(parts);
        List<KeyPart> previous = seen.putIfAbsent(ByteBuffer.wrap(encoded), parts);
        if (previous != null) {
          assertThat(previous)
              .as("seed %d: %s encodes like %s", seed, parts, previous)
              .isEqualTo(parts);
        }
      }
      assertThat(seen.size())
          .as("seed %d: the generator must produce variety", seed)
          .isGreaterThan(1000);
    }

    @Test
    void hashingEqualsSha256OfTheEncodingAlsoForLargePayloads() {
      long seed = new SplittableRandom().nextLong();
      SplittableRandom random = new SplittableRandom(seed);
      for (int i = 0; i < 2_000; i++) {
        List<KeyPart> parts = new ArrayList<>(randomParts(random));
        byte[] large = new byte[random.nextInt(2000)];
        random.nextBytes(large);
        parts.add(random.nextInt(parts.size() + 1), KeyPart.bytes(large));
        byte[] sha = Sha256Words.newDigest().digest(KeyEncoding.encode(parts));
        assertThat(KeyEncoding.of(parts))
            .as("seed %d: %s", seed, parts)
            .isEqualTo(DedupKey.ofDigest(sha));
      }
    }
  }

  @Nested
  class Validation {
    @Test
    void ofStringRejectsBlankKeys() {
      for (String blank : List.of("", " ", "\t\n")) {
        assertThatThrownBy(() -> KeyEncoding.ofString(blank))
            .isInstanceOf(KeyDerivationException.class)
            .hasMessageContaining("blank key");
      }
    }

    @Test
    void loneSurrogatesAreRejectedNotReplaced() {
      // String.getBytes would turn both into "?", making them one key.
      assertThatThrownBy(() -> KeyEncoding.ofString("a\uD800"))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessageContaining("lone surrogate at index 1");
      assertThatThrownBy(() -> KeyPart.text("\uDC00x"))
          .isInstanceOf(KeyDerivationException.class)
          .hasMessageContaining("lone surrogate at index 0");
      assertThatThrownBy(() -> KeyPart.principalChain(List.of(new Principal("i", "\uD83D"))))
          .isInstanceOf(KeyDerivationException.class);
      assertThat(KeyEncoding.ofString("\uD83D\uDE02"))
          .isEqualTo(KeyEncoding.of(KeyPart.text("😂")));
    }

    @Test
    void digestPartsAre32Bytes() {
      assertThatThrownBy(() -> KeyPart.digest(new byte[31]))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("32-byte");
    }

    @Test
    void partsCopyTheirArrays() {
      byte[] bytes = {1, 2, 3};
      KeyPart.Bytes part = KeyPart.bytes(bytes);
      DedupKey before = KeyEncoding.of(part);
      bytes[0] = 9;
      part.value()[1] = 9;
      assertThat(KeyEncoding.of(part)).isEqualTo(before);
      assertThat(part).isEqualTo(KeyPart.bytes(new byte[] {1, 2, 3}));
    }

    @Test
    void jsonPartsAreCanonical() {
      assertThat(KeyPart.json(utf8("{\"b\":1,\"a\":1e0}")))
          .isEqualTo(KeyPart.json(utf8("{ \"a\": 1, \"b\": 1.0 }")));
      assertThatThrownBy(() -> KeyPart.json(utf8("{"))).isInstanceOf(InvalidJsonException.class);
    }
  }

  private static List<KeyPart> randomParts(SplittableRandom random) {
    int n = random.nextInt(5);
    List<KeyPart> parts = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      parts.add(randomPart(random));
    }
    return parts;
  }

  private static final String[] JSON = {"null", "1", "\"1\"", "[]", "{}", "[1]", "\"\"", "true"};

  private static KeyPart randomPart(SplittableRandom random) {
    return switch (random.nextInt(8)) {
      case 0 -> KeyPart.text(randomText(random));
      case 1 -> KeyPart.bytes(utf8(randomText(random)));
      case 2 -> KeyPart.integer(random.nextInt(-2, 3) * (random.nextBoolean() ? 1 : 0x61626364L));
      case 3 -> KeyPart.json(utf8(JSON[random.nextInt(JSON.length)]));
      case 4 -> {
        List<Principal> chain = new ArrayList<>();
        for (int i = random.nextInt(3); i > 0; i--) {
          chain.add(new Principal(randomText(random), "s" + randomText(random)));
        }
        yield KeyPart.principalChain(chain);
      }
      case 5 -> {
        byte[] d = new byte[32];
        d[0] = (byte) random.nextInt(2);
        yield KeyPart.digest(d);
      }
      case 6 -> KeyPart.field(randomText(random));
      default -> KeyPart.header(randomText(random));
    };
  }

  private static String randomText(SplittableRandom random) {
    String alphabet = "ab\u0000\u00e9\u0001";
    StringBuilder sb = new StringBuilder();
    for (int i = random.nextInt(4); i > 0; i--) {
      sb.append(alphabet.charAt(random.nextInt(alphabet.length())));
    }
    return sb.toString();
  }

  /** Parses the v1 format exactly as the class Javadoc documents it. */
  static List<KeyPart> decode(byte[] encoded) {
    ByteBuffer in = ByteBuffer.wrap(encoded);
    byte[] magic = new byte[4];
    in.get(magic);
    assertThat(magic).isEqualTo(new byte[] {'I', 'D', 'K', 1});
    int count = in.getInt();
    List<KeyPart> parts = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      int tag = in.get();
      byte[] payload = new byte[in.getInt()];
      in.get(payload);
      String text = new String(payload, StandardCharsets.UTF_8);
      parts.add(
          switch (tag) {
            case 1 -> KeyPart.text(text);
            case 2 -> KeyPart.bytes(payload);
            case 3 -> KeyPart.integer(ByteBuffer.wrap(payload).getLong());
            case 4 -> KeyPart.json(payload);
            case 5 -> {
              ByteBuffer chain = ByteBuffer.wrap(payload);
              List<Principal> links = new ArrayList<>();
              for (int l = chain.getInt(); l > 0; l--) {
                links.add(new Principal(string(chain), string(chain)));
              }
              assertThat(chain.hasRemaining()).isFalse();
              yield KeyPart.principalChain(links);
            }
            case 6 -> KeyPart.digest(payload);
            case 7 -> KeyPart.field(text);
            case 8 -> KeyPart.header(text);
            default -> throw new AssertionError("unknown tag " + tag);
          });
    }
    assertThat(in.hasRemaining()).as("trailing bytes").isFalse();
    return parts;
  }

  private static String string(ByteBuffer in) {
    byte[] b = new byte[in.getInt()];
    in.get(b);
    return new String(b, StandardCharsets.UTF_8);
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
