package dev.idem.server.tenant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.IdemConfigException;
import dev.idem.KeyDerivationException;
import dev.idem.Scope;
import dev.idem.key.KeyEncoding;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.spi.OutboxStore;
import dev.idem.store.memory.MemoryDedupStore;
import dev.idem.store.rocksdb.RocksDbDedupStore;
import dev.idem.tck.ExternalService;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The tenant key format, and the per-tenant scopes of {@link TenantScopedStore} on real stores. */
class TenantScopedStoreTest {
  @TempDir Path dir;

  @Test
  void theTenantKeyFormatIsPinned() {
    DedupKey inner = KeyEncoding.ofString("order-42");

    DedupKey acme = TenantKeys.key("acme", inner);

    // Fixed vectors, computed apart from Idem's code from the format in TenantKeys' Javadoc: a
    // change here changes every stored tenant key.
    assertThat(acme.toHex())
        .isEqualTo("f36ad96310717f9b1631bf3bd352072169eac5b17995436d574407db07c37311");
    assertThat(TenantKeys.scopeOf("orders", "acme").toString())
        .isEqualTo("orders/tenant-574407db07c37311");
    assertThat(TenantKeys.scopeOf("orders", acme)).isEqualTo(TenantKeys.scopeOf("orders", "acme"));
  }

  @Test
  void theSameKeyInTwoTenantsIsTwoKeysInTwoScopes() {
    DedupKey inner = KeyEncoding.ofString("order-42");

    DedupKey a = TenantKeys.key("acme", inner);
    DedupKey b = TenantKeys.key("globex", inner);

    assertThat(a).isNotEqualTo(b).isNotEqualTo(inner);
    assertThat(TenantKeys.scopeOf("orders", a)).isNotEqualTo(TenantKeys.scopeOf("orders", b));
    assertThat(TenantKeys.scopeOf("orders", a).step()).matches("tenant-[0-9a-f]{16}");
    assertThatThrownBy(() -> TenantKeys.key(" ", inner)).isInstanceOf(KeyDerivationException.class);
  }

  @Test
  void clearingOneTenantTouchesNoOtherTenantNorScopeOnMemory() {
    try (MemoryDedupStore store = MemoryDedupStore.builder().build()) {
      clearingOneTenant(store);
    }
  }

  @Test
  void clearingOneTenantTouchesNoOtherTenantNorScopeOnRocksDb() {
    try (RocksDbDedupStore store = RocksDbDedupStore.builder(dir.resolve("rocks")).build()) {
      clearingOneTenant(store);
    }
  }

  @Test
  void clearingOneTenantTouchesNoOtherTenantNorScopeOnRedis() {
    ExternalService redis =
        ExternalService.require(
            "Redis", "IDEM_REDIS_URL", "redis://127.0.0.1:6379", 6379, "redis-server --port 6379");
    try (DedupStore store =
        openStore(
            "{ type: redis, url: \""
                + redis.url()
                + "\", prefix: \""
                + uniquePrefix(":")
                + "\" }")) {
      clearingOneTenant(store);
    }
  }

  @Test
  void clearingOneTenantTouchesNoOtherTenantNorScopeOnPostgreSql() {
    ExternalService pg =
        ExternalService.require(
            "PostgreSQL",
            "IDEM_PG_URL",
            "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres",
            5432,
            "pg_ctlcluster 15 main start");
    try (DedupStore store =
        openStore("{ type: jdbc, url: \"" + pg.url() + "\", prefix: " + uniquePrefix("_") + " }")) {
      clearingOneTenant(store);
    }
  }

  private static String uniquePrefix(String end) {
    return "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 10) + end;
  }

  private static DedupStore openStore(String store) {
    IdemConfig c =
        ConfigLoader.parse(
            "store.yaml",
            """
            store: %s
            pipelines:
              - id: orders
                source: { webhook: { path: /in } }
                dedup: {}
                deliver: { stdout: {} }
            """
                .formatted(store),
            n -> null);
    return ServiceAssembly.openStore(c.store());
  }

  private static void clearingOneTenant(DedupStore store) {
    Scope base = Scope.of("orders");
    TenantScopedStore view = new TenantScopedStore(store, base);
    Deduplicator tenanted = Deduplicator.builder(view, base).build();
    Deduplicator plain = Deduplicator.builder(store, Scope.of("other")).build();
    List<DedupKey> acme = new ArrayList<>();
    List<DedupKey> globex = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      acme.add(TenantKeys.key("acme", KeyEncoding.ofString("k" + i)));
      globex.add(TenantKeys.key("globex", KeyEncoding.ofString("k" + i)));
    }
    DedupKey otherKey = KeyEncoding.ofString("k0");
    for (DedupKey k : concat(acme, globex)) {
      commit(tenanted, k);
    }
    commit(plain, otherKey);
    // Each tenant's keys are in its own scope of the store itself.
    assertThat(store.inspect(TenantKeys.scopeOf("orders", "acme"), acme.get(0), now()))
        .isInstanceOf(KeyState.Committed.class);
    assertThat(store.inspect(base, acme.get(0), now())).isEqualTo(KeyState.ABSENT);

    long removed = view.clearTenant("acme");

    assertThat(removed).isEqualTo(3);
    for (DedupKey k : acme) {
      assertThat(tenanted.inspect(k)).isEqualTo(KeyState.ABSENT);
    }
    for (DedupKey k : globex) {
      assertThat(tenanted.inspect(k)).isInstanceOf(KeyState.Committed.class);
    }
    assertThat(plain.inspect(otherKey)).isInstanceOf(KeyState.Committed.class);
    assertThat(tenanted.forget(globex.get(0))).isTrue();
    assertThat(tenanted.inspect(globex.get(0))).isEqualTo(KeyState.ABSENT);
    assertThatThrownBy(tenanted::clear)
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("keys?tenant=");
  }

  private static long now() {
    return System.currentTimeMillis();
  }

  private static void commit(Deduplicator d, DedupKey k) {
    Decision decision = d.reserve(k);
    assertThat(decision).isInstanceOf(Decision.Acquired.class);
    ((Decision.Acquired) decision).reservation().commit();
  }

  private static List<DedupKey> concat(List<DedupKey> a, List<DedupKey> b) {
    List<DedupKey> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  @Test
  void everyStoreMethodIsPassedThrough() {
    // A new SPI method (even a default one) must be passed through here, or a tenanted pipeline
    // silently gets the default (a per-key loop) or, worse, the base scope.
    List<String> missing = new ArrayList<>();
    for (Class<?> spi : new Class<?>[] {DedupStore.class, OutboxStore.class, AutoCloseable.class}) {
      for (Method m : spi.getMethods()) {
        if (Modifier.isStatic(m.getModifiers())) {
          continue;
        }
        try {
          TenantScopedStore.class.getDeclaredMethod(m.getName(), m.getParameterTypes());
        } catch (NoSuchMethodException e) {
          missing.add(spi.getSimpleName() + "." + m.getName());
        }
      }
    }
    assertThat(missing).isEmpty();
  }
}
