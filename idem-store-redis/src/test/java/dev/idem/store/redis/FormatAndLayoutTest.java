package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.Fingerprint;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.StoredEntry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** The stable key layout and value format, pinned with fixed vectors. */
class FormatAndLayoutTest {

  @Test
  void keyLayoutIsStable() {
    KeyLayout layout = new KeyLayout("idem:");
    DedupKey key =
        DedupKey.parseHex("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");

    assertThat(KeyLayout.text(layout.key(Scope.of("shop-orders", "dedup"), key)))
        .isEqualTo(
            "idem:shop-orders/dedup:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
  }

  @Test
  void scanPatternEscapesGlobCharactersAndMatchesExactlyOneKeyLength() {
    KeyLayout layout = new KeyLayout("a*b?[c]\\:");

    String pattern = new String(layout.scanPattern(Scope.of("p", "s")), StandardCharsets.UTF_8);

    assertThat(pattern).isEqualTo("a\\*b\\?\\[c\\]\\\\:p/s:" + "?".repeat(64));
  }

  @Test
  void inFlightValueIsPackedV1() {
    Fingerprint fp = Fingerprint.ofDigest(new byte[32]);

    byte[] v = EntryFormat.inFlight(0x0102030405060708L, 1_000L, Long.MAX_VALUE, fp);

    assertThat(HexFormat.of().formatHex(v, 0, 27))
        .isEqualTo(
            "01" + "49" + "0102030405060708" + "00000000000003e8" + "7fffffffffffffff" + "01");
    assertThat(v).hasSize(59);
    StoredEntry e = EntryFormat.decode(v, "k");
    assertThat(e)
        .isEqualTo(
            new StoredEntry(
                StoredEntry.State.IN_FLIGHT, 0x0102030405060708L, 1000, Long.MAX_VALUE, fp, null));
  }

  @Test
  void committedValueWithResultDecodes() {
    byte[] v =
        HexFormat.of()
            .parseHex(
                "01"
                    + "43"
                    + "ffffffffffffffff"
                    + "0000000000000001"
                    + "0000000000000002"
                    + "02"
                    + "cafe");

    StoredEntry e = EntryFormat.decode(v, "k");

    assertThat(e.state()).isEqualTo(StoredEntry.State.COMMITTED);
    assertThat(e.token()).isEqualTo(-1L);
    assertThat(e.sinceMillis()).isEqualTo(1);
    assertThat(e.deadlineMillis()).isEqualTo(2);
    assertThat(e.fingerprint()).isNull();
    assertThat(e.result()).containsExactly(0xca, 0xfe);
  }

  @Test
  void foreignValuesAreRejected() {
    assertThatThrownBy(() -> EntryFormat.decode("hello".getBytes(), "idem:x/y:00"))
        .isInstanceOf(StoreException.class)
        .hasMessageContaining("idem:x/y:00");
    byte[] v2 = EntryFormat.inFlight(1, 1, 2, null);
    v2[0] = 2;
    assertThatThrownBy(() -> EntryFormat.decode(v2, "k")).isInstanceOf(StoreException.class);
    byte[] truncated = EntryFormat.inFlight(1, 1, 2, null);
    truncated[26] = 1; // claims a fingerprint it does not have
    assertThatThrownBy(() -> EntryFormat.decode(truncated, "k")).isInstanceOf(StoreException.class);
  }

  @Test
  void scriptsAreNamedByTheirSha1() {
    assertThat(LuaScripts.RESERVE.sha()).hasSize(40).matches("[0-9a-f]{40}");
    assertThat(LuaScripts.COMMIT.sha()).isNotEqualTo(LuaScripts.RESERVE.sha());
  }

  @Test
  void configIsValidated() {
    assertThat(RedisDedupStoreConfig.ofDefaults().prefix()).isEqualTo("idem:");
    assertThat(RedisDedupStoreConfig.ofDefaults().commandTimeout())
        .isEqualTo(Duration.ofSeconds(2));
    assertThatThrownBy(
            () -> new RedisDedupStoreConfig("", Duration.ofSeconds(1), Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("prefix");
    assertThatThrownBy(
            () -> new RedisDedupStoreConfig("x\n", Duration.ofSeconds(1), Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("control");
    assertThatThrownBy(
            () -> new RedisDedupStoreConfig("x", Duration.ofHours(1), Duration.ofSeconds(1)))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("commandTimeout");
    assertThatThrownBy(
            () -> new RedisDedupStoreConfig("x", Duration.ofSeconds(1), Duration.ofNanos(5)))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("connectTimeout");
  }
}
