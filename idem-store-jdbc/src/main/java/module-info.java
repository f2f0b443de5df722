/**
 * Idem's JDBC store: deduplication keys and a transactional outbox in PostgreSQL, MariaDB or H2.
 * The entry point is {@link dev.idem.store.jdbc.JdbcDedupStore#builder(String)}. JDBC drivers are
 * found through {@link java.sql.DriverManager}; add the one for your database.
 */
module dev.idem.store.jdbc {
  requires transitive dev.idem.core;
  requires transitive java.sql;
  requires com.zaxxer.hikari;

  exports dev.idem.store.jdbc;
}
