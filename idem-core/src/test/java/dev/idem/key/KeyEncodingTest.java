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
   * Format v2, pinned. These vectors were computed once from the format as documented in {@link
   * KeyEncoding}, by an independent script (not by this code: {@code
   * src/test/resources/key-encoding-v2-vectors.py}). If one fails, the format changed: every stored
   * key would be forgotten. Do not update them; bump the version instead. (Version 1 wrote a
   * field's value as bare text and numbers through a double; its keys cannot be told apart by type
   * or exact value, so no v1 vector is kept.)
   */
  @Nested
  class FixedVectors {
    private final byte[] bodyDigest =
        HEX.parseHex("5b5d82aaeb95ac2e6133766daebcd7700f60be6acd66dc096decd7b3f195f320");

    @Test
    void noComponents() {
      vector(
          List.of(),
          "49444b0200000000",
          "16ed02d95fac92196bb7ed5505c8d9e11a1471da0e2e92e04814897952bbe006");
    }

    @Test
    void text() {
      vector(
          List.of(KeyPart.text("ab")),
          "49444b020000000101000000026162",
          "3856e3f179ad53f9a6b41dcf13fcd51210eb423b3e8212f2b2e7a01786885906");
      vector(
          List.of(KeyPart.text("")),
          "49444b02000000010100000000",
          "1f9b06351ca00d2b3a99fea5127ceef93d72e49e5348bf9cc0782f319344407d");
      vector(
          List.of(KeyPart.text("1")),
          "49444b0200000001010000000131",
          "4936d5f6402e494e16e679509dbe60e037cd917bdceff44bb55672be05136174");
      vector(
          List.of(KeyPart.text("café \uD83D\uDE02")),
          "49444b0200000001010000000a636166c3a920f09f9882",
          "6ed7fa60875ed772b8117901818296d15e217c313afb88e67e8159ff4c9bd26d");
    }

    @Test
    void splitTextIsNotConcatenatedText() {
      vector(
          List.of(KeyPart.text("ab"), KeyPart.text("c")),
          "49444b020000000201000000026162010000000163",
          "0e4f54014973361480b53ed045cc4e1863db29c9ed28c4c239ac904c056fa6f4");
      vector(
          List.of(KeyPart.text("a"), KeyPart.text("bc")),
          "49444b020000000201000000016101000000026263",
          "d07d7702ef4c811f9fef800e79ad083d82eaeaeacdb4ffbbfd308dee76efcfa1");
    }

    @Test
    void integer() {
      vector(
          List.of(KeyPart.integer(1)),
          "49444b020000000103000000080000000000000001",
          "72281dba927d93325b431188a012720b3dbe514375ce9cc8a94582bfb829e823");
      vector(
          List.of(KeyPart.integer(Long.MIN_VALUE)),
          "49444b020000000103000000088000000000000000",
          "270b793cea652bf56b5d1d311c429abb1712a3351f4d95b358012098138adeaa");
    }

    @Test
    void bytes() {
      vector(
          List.of(KeyPart.bytes(new byte[] {0, 1, (byte) 0xfe, (byte) 0xff})),
          "49444b020000000102000000040001feff",
          "a33963850e8856fd5eafeee04f60952f357b2a17d832c0681934f01026b2354d");
    }

    @Test
    void json() {
      vector(
          List.of(KeyPart.json(utf8("null"))),
          "49444b020000000104000000046e756c6c",
          "3fde348825a4731f7a65ee447f87e199c2d40ffbf6c93c2c47f281951a7a2336");
      vector(
          List.of(KeyPart.json(utf8("{ \"b\": true, \"a\": [1.0, \"x\"] }"))),
          "49444b020000000104000000167b2261223a5b312c2278225d2c2262223a747275657d",
          "5baa9bc76c2f731f90cbb0abacf9221e98136caa438c8517f7d8ee8672a7a537");
    }

    @Test
    void principalChain() {
      vector(
          List.of(KeyPart.principalChain(List.of())),
          "49444b0200000001050000000400000000",
          "a1d805b42797c1eea11e022773cbeec91cbc2a75280b565c96b59d5aaa4016dc");
      vector(
          List.of(
              KeyPart.principalChain(
                  List.of(
                      new Principal("https://issuer.example", "user-1"),
                      new Principal("https://issuer.example", "svc-2")))),
          "49444b0200000001050000004b000000020000001668747470733a2f2f6973737565722e6578616d706c65"
              + "00000006757365722d310000001668747470733a2f2f6973737565722e6578616d706c6500000005"
              + "7376632d32",
          "a18fb24a6f4edbdcd6728d0a7757c1dcb98d4fd0036e5a59c47cf8bb04c25d02");
    }

    @Test
    void digest() {
      byte[] digest = new byte[32];
      for (int i = 0; i < 32; i++) {
        digest[i] = (byte) i;
      }
      vector(
          List.of(KeyPart.digest(digest)),
          "49444b02000000010600000020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e"
              + "1f",
          "8fa91e20c4e76c95b3b303acc3b3b306d1fb7b03c12582447409affdc5aa20ce");
    }

    @Test
    void fieldAndHeader() {
      // A field's payload is its canonical JSON: the string "order-1" keeps its quotes.
      vector(
          List.of(KeyPart.stringField("order-1"), KeyPart.header("order-1")),
          "49444b02000000020700000009226f726465722d312208000000076f726465722d31",
          "4298f347c11fe6b7837a10f75649ae003c0ddc86d2e4e6a0f5d5eb8fdf0154fb");
    }

    /** Issue 8: fields keep their JSON type and numbers their exact value. */
    @Test
    void fieldValuesKeepTypeAndExactValue() {
      vector(
          List.of(KeyPart.field(utf8("820982911946154508"))),
          "49444b02000000010700000012383230393832393131393436313534353038",
          "aafa741a602e56aa37e021a5937cc68e7f3af5e2c47ebe6ee6b7dd597678841e");
      vector(
          List.of(KeyPart.field(utf8("8209829119461545.09e2"))),
          "49444b02000000010700000012383230393832393131393436313534353039",
          "1084a54d85ce09fd727a6194d5c1316f247495b575ee8cbdb8de6388e920911c");
      vector(
          List.of(KeyPart.field(utf8("\"820982911946154508\""))),
          "49444b020000000107000000142238323039383239313139343631353435303822",
          "90edf98c77544c4a72fa52c09a02587b823c4221d18a17a11ee2ec9b24b6526a");
      vector(
          List.of(KeyPart.field(utf8("true"))),
          "49444b0200000001070000000474727565",
          "1cd77766524eb572d5ee5d625fd9b2b2e93dab5b01777a275d029e9d9c3b459d");
      vector(
          List.of(KeyPart.field(utf8("12345678901234567890123456789.000e71"))),
          "49444b02000000010700000022312e32333435363738393031323334353637383930313233343536373839652b3939",
          "0d4e2346da438a0ebcd3b551f079f24ebc304e7abe79b9cf8af988fb9da15e98");
    }

    /** Issue 8: the default key of a body with a 64-bit id keeps every digit of it. */
    @Test
    void defaultKeyOfA64BitId() {
      byte[] body = utf8("{\"total\":\"10.00\",\"id\":820982911946154508}");
      assertThat(CanonicalJson.sha256(body))
          .isEqualTo(
              HEX.parseHex("a0569113134e6560cc88abb67ad61b8363b74b746d64ad977e8078323aa5ec09"));
      assertThat(CanonicalJson.sha256(utf8("{\"total\":\"10.00\",\"id\":820982911946154509}")))
          .isEqualTo(
              HEX.parseHex("460d3576f07acb5d46c6e1e84dbdc4d290b53676fa3a22d934c4a6b1310089cf"));
      assertThat(KeyRule.defaultKey().derive(InboundEvent.of(body, Map.of())).toHex())
          .isEqualTo("6433260dfefceec57178c9a15b93d6bb120df735f141a3788494acc3507cc8ec");
    }

    @Test
    void defaultKeyShape() {
      // The default key of body {"id":"evt_1","amount":1999,"currency":"eur"}: its canonical form
      // {"amount":1999,"currency":"eur","id":"evt_1"} hashes to bodyDigest.
      byte[] body = utf8("{\"id\":\"evt_1\",\"amount\":1999,\"currency\":\"eur\"}");
      assertThat(CanonicalJson.sha256(body)).isEqualTo(bodyDigest);
      assertThat(KeyRule.defaultKey().derive(InboundEvent.of(body, Map.of())).toHex())
          .isEqualTo("7ae2fe859ca3a7ead0ba4af0de64db74d3212c96907bbcc3c7ddf9b179d97fa6");
      assertThat(
              KeyRule.defaultKey()
                  .derive(InboundEvent.builder().body(body).principal("iss", "alice").build())
                  .toHex())
          .isEqualTo("8a1acced502a3dbbec59602ec0dfae7be8bc09bf6d8b02edcbdc14f043c3a103");
      vector(
          List.of(KeyPart.principalChain(List.of()), KeyPart.digest(bodyDigest)),
          "49444b020000000205000000040000000006000000205b5d82aaeb95ac2e6133766daebcd7700f60be6acd"
              + "66dc096decd7b3f195f320",
          "7ae2fe859ca3a7ead0ba4af0de64db74d3212c96907bbcc3c7ddf9b179d97fa6");
    }

    @Test
    void ofStringIsOneTextPart() {
      assertThat(KeyEncoding.ofString("ab").toHex())
          .isEqualTo("3856e3f179ad53f9a6b41dcf13fcd51210eb423b3e8212f2b2e7a01786885906");
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
              List.of(KeyPart.field(utf8("1"))),
              List.of(KeyPart.stringField("1")),
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
      case 6 ->
          random.nextBoolean()
              ? KeyPart.stringField(randomText(random))
              : KeyPart.field(utf8(JSON[random.nextInt(JSON.length)]));
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

  /** Parses the v2 format exactly as the class Javadoc documents it. */
  static List<KeyPart> decode(byte[] encoded) {
    ByteBuffer in = ByteBuffer.wrap(encoded);
    byte[] magic = new byte[4];
    in.get(magic);
    assertThat(magic).isEqualTo(new byte[] {'I', 'D', 'K', 2});
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
            case 7 -> KeyPart.field(payload);
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
