package dev.idem.spring.boot;

import dev.idem.IdemConfigException;
import dev.idem.spi.DedupStore;
import dev.idem.store.jdbc.JdbcDedupStore;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/** The JDBC store from {@code idem.store.jdbc.*}, or the application's {@link DataSource}. */
final class JdbcStores {
  private JdbcStores() {}

  static DedupStore create(IdemProperties.Jdbc p, @Nullable DataSource dataSource) {
    JdbcDedupStore.Builder b;
    if (p.getUrl() != null) {
      b = JdbcDedupStore.builder(p.getUrl());
    } else if (dataSource != null) {
      b = JdbcDedupStore.builder(dataSource);
    } else {
      throw new IdemConfigException(
          "idem.store.type=jdbc needs a DataSource: set spring.datasource.url (or declare one"
              + " DataSource bean), or set idem.store.jdbc.url");
    }
    return b.tablePrefix(p.getTablePrefix()).createSchema(p.isCreateSchema()).build();
  }
}
