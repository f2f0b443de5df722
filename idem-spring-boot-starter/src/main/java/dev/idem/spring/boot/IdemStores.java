package dev.idem.spring.boot;

import dev.idem.IdemConfigException;
import dev.idem.spi.DedupStore;
import dev.idem.store.memory.MemoryDedupStore;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.util.ClassUtils;

/**
 * Makes the store {@code idem.store.*} describes. Each store type's classes are touched only when
 * that type is chosen, so its module is needed only then.
 */
final class IdemStores {
  private IdemStores() {}

  static DedupStore create(
      IdemProperties.Store p, ListableBeanFactory beans, List<Runnable> owned) {
    return switch (p.getType()) {
      case MEMORY -> memory(p.getMemory());
      case ROCKSDB -> {
        need("dev.idem.store.rocksdb.RocksDbDedupStore", "rocksdb", "idem-store-rocksdb");
        yield RocksDbStores.create(p.getRocksdb());
      }
      case REDIS -> {
        need("dev.idem.store.redis.RedisDedupStore", "redis", "idem-store-redis");
        yield RedisStores.create(p.getRedis(), beans, owned);
      }
      case JDBC -> {
        need("dev.idem.store.jdbc.JdbcDedupStore", "jdbc", "idem-store-jdbc");
        yield JdbcStores.create(p.getJdbc(), beans.getBeanProvider(DataSource.class).getIfUnique());
      }
    };
  }

  private static DedupStore memory(IdemProperties.Memory m) {
    MemoryDedupStore.Builder b = MemoryDedupStore.builder();
    if (m.getMaxKeysPerScope() != null) {
      b.maxKeysPerScope(m.getMaxKeysPerScope());
    }
    return b.build();
  }

  private static void need(String className, String type, String artifact) {
    if (!ClassUtils.isPresent(className, IdemStores.class.getClassLoader())) {
      throw new IdemConfigException(
          "idem.store.type="
              + type
              + " needs dev.idem:"
              + artifact
              + " on the class path; add the dependency (its version comes from idem-bom)");
    }
  }
}
