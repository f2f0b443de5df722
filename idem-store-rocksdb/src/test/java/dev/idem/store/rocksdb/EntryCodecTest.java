package dev.idem.store.rocksdb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.spi.StoredEntry;
import dev.idem.spi.StoredEntry.State;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/** Pins the on-disk formats with fixed vectors: changing them needs a new format version. */
class EntryCodecTest {
  private static final HexFormat HEX = HexFormat.of();

  @Test
  void anInFlightEntryEncodesItsDeadlineAsAVarintDelta() {
    StoredEntry e = new StoredEntry(State.IN_FLIGHT, 0x0102030405060708L, 1000, 1300, null, null);

    byte[] encoded = EntryCodec.encode(e);

    assertThat(HEX.formatHex(encoded))
        .isEqualTo("01" + "00" + "0102030405060708" + "00000000000003e8" + "ac02");
    assertThat(EntryCodec.decode(encoded)).isEqualTo(e);
  }

  @Test
  void aCommittedEntryWithFingerprintAndResultRoundTrips() {
    Fingerprint fp = Fingerprint.parseHex("ab".repeat(32));
    StoredEntry e = new StoredEntry(State.COMMITTED, -1L, 5, 5 + 127, fp, new byte[] {7, 8});

    byte[] encoded = EntryCodec.encode(e);

    assertThat(HEX.formatHex(encoded))
        .isEqualTo(
            "01"
                + "07"
                + "ffffffffffffffff"
                + "0000000000000005"
                + "7f"
                + "ab".repeat(32)
                + "0708");
    StoredEntry decoded = EntryCodec.decode(encoded);
    assertThat(decoded.state()).isEqualTo(State.COMMITTED);
    assertThat(decoded.fingerprint()).isEqualTo(fp);
    assertThat(decoded.result()).containsExactly(7, 8);
    assertThat(decoded.deadlineMillis()).isEqualTo(132);
  }

  @Test
  void noDeadlineAndAnEmptyResultAreKeptApartFromAbsentOnes() {
    StoredEntry e = new StoredEntry(State.COMMITTED, 9, 5, Long.MAX_VALUE, null, new byte[0]);

    byte[] encoded = EntryCodec.encode(e);

    assertThat(HEX.formatHex(encoded))
        .isEqualTo("01" + "0d" + "0000000000000009" + "0000000000000005");
    StoredEntry decoded = EntryCodec.decode(encoded);
    assertThat(decoded.deadlineMillis()).isEqualTo(Long.MAX_VALUE);
    assertThat(decoded.result()).isEmpty();
  }

  @Test
  void aDeadlineBeforeSinceIsStoredAbsolute() {
    StoredEntry e = new StoredEntry(State.IN_FLIGHT, 9, 5000, 100, null, null);

    byte[] encoded = EntryCodec.encode(e);

    assertThat(encoded[1]).isEqualTo((byte) EntryCodec.ABSOLUTE_DEADLINE);
    assertThat(EntryCodec.decode(encoded)).isEqualTo(e);
  }

  @Test
  void otherVersionsTruncationAndUnknownFlagsAreRejected() {
    byte[] good = EntryCodec.encode(new StoredEntry(State.IN_FLIGHT, 1, 0, 300, null, null));
    byte[] newer = good.clone();
    newer[0] = 2;
    byte[] flags = good.clone();
    flags[1] = (byte) 0x80;

    assertThatThrownBy(() -> EntryCodec.decode(newer)).hasMessageContaining("format version 2");
    assertThatThrownBy(() -> EntryCodec.decode(flags)).hasMessageContaining("unknown flags");
    assertThatThrownBy(() -> EntryCodec.decode(new byte[] {1, 0}))
        .hasMessageContaining("too short");
    byte[] truncated = java.util.Arrays.copyOf(good, good.length - 1);
    truncated[good.length - 2] = (byte) 0x80;
    assertThatThrownBy(() -> EntryCodec.decode(truncated)).hasMessageContaining("truncated");
  }

  @Test
  void scopeKeysArePrefixFreeAndIndexKeysSortByDeadline() {
    ScopeKeys sk = new ScopeKeys(Scope.of("orders", "dedup"));

    assertThat(HEX.formatHex(sk.prefix)).isEqualTo("0c" + HEX.formatHex("orders/dedup".getBytes()));
    assertThat(HEX.formatHex(sk.indexFloor(1)))
        .isEqualTo(HEX.formatHex(sk.prefix) + "8000000000000001");
    assertThat(java.util.Arrays.compareUnsigned(sk.indexFloor(-5), sk.indexFloor(3))).isNegative();
    assertThat(java.util.Arrays.compareUnsigned(sk.indexFloor(3), sk.indexFloor(1L << 40)))
        .isNegative();
    assertThat(java.util.Arrays.compareUnsigned(sk.indexFloor(Long.MAX_VALUE), sk.upper))
        .isNegative();
  }

  @Test
  void outboxValuesRoundTrip() {
    var key = Fixtures.key("x");
    var entry = new OutboxCodec.Entry(3, 10, 20, key, "HTTP 503", new byte[] {1, 2, 3});

    var decoded = OutboxCodec.decode(OutboxCodec.encode(entry));
    var dead = OutboxCodec.decodeDead(7, "q", OutboxCodec.encodeDead(entry, 30, "gave up"));

    assertThat(decoded.attempts()).isEqualTo(3);
    assertThat(decoded.lastError()).isEqualTo("HTTP 503");
    assertThat(decoded.payload()).containsExactly(1, 2, 3);
    assertThat(decoded.key()).isEqualTo(key);
    assertThat(dead.reason()).isEqualTo("gave up");
    assertThat(dead.deadAtMillis()).isEqualTo(30);
    assertThat(dead.payload()).containsExactly(1, 2, 3);
    assertThat(HEX.formatHex(OutboxCodec.key(OutboxCodec.queuePrefix("q"), 258)))
        .isEqualTo("0001" + "71" + "0000000000000102");
  }

  @Test
  void outboxValuesCarryTheOrderingKeyAndOlderValuesReadAsHavingNone() {
    var key = Fixtures.key("x");
    var keyed = new OutboxCodec.Entry(2, 10, 20, key, "HTTP 503", new byte[] {9}, true, "cust-7");
    byte[] encoded = OutboxCodec.encode(keyed);
    byte[] withoutError =
        OutboxCodec.encode(new OutboxCodec.Entry(0, 10, 0, key, null, new byte[] {8}, false, "k"));
    byte[] older = OutboxCodec.encode(new OutboxCodec.Entry(0, 10, 0, key, null, new byte[] {8}));

    var decoded = OutboxCodec.decode(encoded);
    assertThat(decoded.orderingKey()).isEqualTo("cust-7");
    assertThat(decoded.lastError()).isEqualTo("HTTP 503");
    assertThat(decoded.payload()).containsExactly(9);
    assertThat(decoded.claimed()).isTrue();
    assertThat(OutboxCodec.orderingKey(encoded)).isEqualTo("cust-7");
    assertThat(OutboxCodec.orderingKey(withoutError)).isEqualTo("k");
    assertThat(OutboxCodec.decode(withoutError).payload()).containsExactly(8);
    assertThat(OutboxCodec.orderingKey(older)).isNull();
    assertThat(OutboxCodec.decode(older).orderingKey()).isNull();
    assertThat(OutboxCodec.claimedPast(encoded, 19)).isTrue();
    assertThat(OutboxCodec.claimedPast(encoded, 20)).isFalse();
    assertThat(decoded.availableAt(5, "e").claimed()).isFalse();
    assertThat(decoded.availableAt(5, "e").orderingKey()).isEqualTo("cust-7");
  }

  @Test
  void deadLettersKeepTheOrderingKeyAndOnesWithoutOneKeepFormatVersion1() {
    var key = Fixtures.key("x");
    var keyed = new OutboxCodec.Entry(2, 10, 20, key, null, new byte[] {9}, true, "c7");
    var plain = new OutboxCodec.Entry(2, 10, 20, key, null, new byte[] {9});

    byte[] withKey = OutboxCodec.encodeDead(keyed, 30, "why");
    byte[] without = OutboxCodec.encodeDead(plain, 30, "why");

    // version 2: the ordering key's length and text sit between the reason and the payload
    String head =
        "00000002" + "000000000000000a" + "000000000000001e" + HEX.formatHex(key.toBytes());
    assertThat(HEX.formatHex(withKey))
        .isEqualTo("02" + head + "00000003" + "776879" + "00000002" + "6337" + "09");
    assertThat(HEX.formatHex(without)).isEqualTo("01" + head + "00000003" + "776879" + "09");
    assertThat(OutboxCodec.deadOrderingKey(withKey)).isEqualTo("c7");
    assertThat(OutboxCodec.deadOrderingKey(without)).isNull();
    for (byte[] value : new byte[][] {withKey, without}) {
      var dead = OutboxCodec.decodeDead(7, "q", value);
      assertThat(dead.reason()).isEqualTo("why");
      assertThat(dead.payload()).containsExactly(9);
      assertThat(dead.attempts()).isEqualTo(2);
      assertThat(dead.enqueuedAtMillis()).isEqualTo(10);
      assertThat(dead.deadAtMillis()).isEqualTo(30);
      assertThat(dead.key()).isEqualTo(key);
    }
  }
}
