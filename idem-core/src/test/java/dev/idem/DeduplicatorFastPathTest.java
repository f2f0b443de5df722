package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.KeyState;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.StoreCapabilities;
import dev.idem.store.memory.MemoryDedupStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The facade over the memory store takes the store's scope-bound fast path ({@code
 * dev.idem.internal.ScopedFastPath}); these tests pin that it decides exactly as the store's SPI
 * does: the same seeded run of reserves, commits, releases, clock steps, forgets and clears goes
 * once through a facade on a memory store and once through a facade on an identical memory store
 * seen only through {@link DedupStore} (which has no fast path), and every decision, settlement and
 * listener event must match.
 */
class DeduplicatorFastPathTest {
  private static final Scope SCOPE = Scope.of("fast-path");

  /** A memory store seen only through the SPI, so the facade cannot bind its fast path. */
  private static final class SpiOnly implements DedupStore {
    private final DedupStore d;

    SpiOnly(DedupStore d) {
      this.d = d;
    }

    @Override
    public ReserveResult reserve(ReserveRequest request) {
      return d.reserve(request);
    }

    @Override
    public SettleResult commit(CommitRequest request) {
      return d.commit(request);
    }

    @Override
    public SettleResult release(ReleaseRequest request) {
      return d.release(request);
    }

    @Override
    public SettleResult extend(ExtendRequest request) {
      return d.extend(request);
    }

    @Override
    public KeyState inspect(Scope scope, DedupKey key, long nowMillis) {
      return d.inspect(scope, key, nowMillis);
    }

    @Override
    public boolean forget(Scope scope, DedupKey key) {
      return d.forget(scope, key);
    }

    @Override
    public long clear(Scope scope) {
      return d.clear(scope);
    }

    @Override
    public StoreCapabilities capabilities() {
      return d.capabilities();
    }

    @Override
    public String describe() {
      return d.describe();
    }

    @Override
    public void close() {
      d.close();
    }
  }

  /** One side of the comparison: a facade, its store, its clock and what its listeners saw. */
  private static final class Side {
    final ManualTimeSource time = new ManualTimeSource();
    final RecordingListener facadeEvents = new RecordingListener();
    final RecordingListener storeEvents = new RecordingListener();
    final MemoryDedupStore memory;
    final Deduplicator dedup;
    final List<Reservation> open = new ArrayList<>();
    final List<String> log = new ArrayList<>();

    Side(boolean spiOnly, DedupConfig config, int maxKeys) {
      memory = MemoryDedupStore.builder().maxKeysPerScope(maxKeys).listener(storeEvents).build();
      DedupStore store = spiOnly ? new SpiOnly(memory) : memory;
      dedup =
          Deduplicator.builder(store, SCOPE)
              .config(config)
              .timeSource(time)
              .listener(facadeEvents)
              .build();
    }

    void reserve(DedupKey key, Fingerprint fingerprint) {
      Decision d;
      try {
        d = dedup.reserve(key, fingerprint);
      } catch (StoreException full) { // every entry in flight: an answer both paths must give
        log.add("full " + full.getMessage());
        return;
      }
      if (d instanceof Decision.Acquired a) {
        open.add(a.reservation());
        log.add("acquired " + a.reservation().leaseUntil());
      } else if (d instanceof Decision.Duplicate dup) {
        log.add("duplicate " + Arrays.toString(dup.result()));
      } else if (d instanceof Decision.InFlight f) {
        log.add("inFlight " + f.leaseUntilMillis());
      } else {
        log.add("conflict");
      }
      log.add("state " + describe(dedup.inspect(key)));
    }

    void settle(int which, int how) {
      if (open.isEmpty()) {
        return;
      }
      Reservation r = open.remove(which % open.size());
      Settlement s =
          switch (how) {
            case 0 -> r.commit();
            case 1 -> r.commit(new byte[] {(byte) which});
            default -> r.release();
          };
      log.add("settled " + s + " " + describe(dedup.inspect(r.key())));
    }

    private static String describe(KeyState state) {
      if (state instanceof KeyState.Committed c) {
        return "committed " + c.expiresAtMillis() + " " + Arrays.toString(c.result());
      }
      if (state instanceof KeyState.InFlight f) {
        return "inFlight " + f.leaseUntilMillis();
      }
      return "absent";
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"sliding", "fixed", "none"})
  void decides_as_the_store_spi_over_a_seeded_run(String expiry) {
    DedupConfig.Builder config = DedupConfig.custom().lease(Duration.ofMillis(40));
    switch (expiry) {
      case "sliding" -> config.ttl(Duration.ofMillis(60)).expiry(Expiry.SLIDING);
      case "fixed" -> config.ttl(Duration.ofMillis(60)).expiry(Expiry.FIXED);
      default -> config.noTtl();
    }
    List<String> seen = new ArrayList<>();
    for (long seed = 1; seed <= 20; seed++) {
      // Given two facades on identical stores, one of them only through the SPI
      Side fast = new Side(false, config.build(), 12);
      Side spi = new Side(true, config.build(), 12);
      DedupKey[] keys = new DedupKey[30];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = DedupKey.ofWords(i * 0x0100_0000_0000_0000L + seed, i, i * 31L, ~i);
      }
      Fingerprint[] prints = {
        null, Fingerprint.ofDigest(new byte[32]), Fingerprint.ofDigest(filled((byte) 1))
      };
      Random random = new Random(seed);
      // When both run the same operations
      for (int step = 0; step < 2_000; step++) {
        int op = random.nextInt(100);
        int a = random.nextInt(1 << 20);
        int b = random.nextInt(3);
        for (Side side : List.of(fast, spi)) {
          if (op < 50) {
            side.reserve(keys[a % keys.length], prints[b]);
          } else if (op < 80) {
            side.settle(a, b);
          } else if (op < 95) {
            side.time.advanceMillis(1 + a % 25);
          } else if (op < 98) {
            side.log.add("forget " + side.dedup.forget(keys[a % keys.length]));
          } else {
            side.log.add("clear " + side.dedup.clear());
          }
        }
      }
      // Then every answer and every event is the same
      assertThat(fast.log).as("seed %d", seed).isEqualTo(spi.log);
      assertThat(fast.facadeEvents.events).as("seed %d", seed).isEqualTo(spi.facadeEvents.events);
      assertThat(fast.storeEvents.events).as("seed %d", seed).isEqualTo(spi.storeEvents.events);
      seen.addAll(fast.facadeEvents.events);
      seen.addAll(fast.storeEvents.events);
    }
    // And the runs reached every kind of answer the fast path gives
    assertThat(seen)
        .anyMatch(e -> e.startsWith("leaseExpired"))
        .anyMatch(e -> e.startsWith("duplicate"))
        .anyMatch(e -> e.startsWith("inFlight"))
        .anyMatch(e -> e.startsWith("leaseLost"))
        .anyMatch(e -> e.startsWith("evicted"));
    if (!expiry.equals("none")) {
      assertThat(seen).anyMatch(e -> e.startsWith("keyExpired"));
    }
  }

  @Test
  void a_cleared_scope_is_used_again_through_the_bound_path() {
    // Given a facade that has reserved and committed a key
    Side side = new Side(false, DedupConfig.ofDefaults(), 10_000);
    DedupKey key = DedupKey.ofWords(1, 2, 3, 4);
    side.reserve(key, null);
    side.settle(0, 0);
    // When the scope is cleared (its stripes are retired) and the key comes again
    assertThat(side.dedup.clear()).isEqualTo(1);
    Decision again = side.dedup.reserve(key);
    // Then it is new, and the new stripes hold it
    assertThat(again).isInstanceOf(Decision.Acquired.class);
    assertThat(((Decision.Acquired) again).reservation().commit()).isEqualTo(Settlement.COMMITTED);
    assertThat(side.dedup.reserve(key)).isInstanceOf(Decision.Duplicate.class);
    assertThat(side.memory.inspect(SCOPE, key, side.time.wallMillis()))
        .isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void a_closed_store_fails_the_bound_path_as_it_fails_the_spi() {
    // Given a facade with an open reservation on a store that is then closed
    Side side = new Side(false, DedupConfig.ofDefaults(), 10_000);
    Reservation held =
        ((Decision.Acquired) side.dedup.reserve(DedupKey.ofWords(5, 6, 7, 8))).reservation();
    side.memory.close();
    // Then reserve and commit fail as the store's own methods do, and the reservation stays open
    assertThatThrownBy(() -> side.dedup.reserve(DedupKey.ofWords(9, 9, 9, 9)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    assertThatThrownBy(held::commit)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    assertThat(held.settlement()).isNull();
  }

  private static byte[] filled(byte b) {
    byte[] bytes = new byte[32];
    Arrays.fill(bytes, b);
    return bytes;
  }
}
