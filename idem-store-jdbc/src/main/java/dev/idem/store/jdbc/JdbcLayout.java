package dev.idem.store.jdbc;

/**
 * How a JDBC store lays out its keys. The two layouts use different tables and never see each
 * other's keys; pick one per table prefix.
 */
public enum JdbcLayout {
  /**
   * One table {@code <prefix>keys}, one row per key: a reserve inserts it, the commit updates it in
   * place, the sweeper deletes expired rows one by one. Every database.
   */
  STANDARD,

  /**
   * PostgreSQL and MariaDB (not H2). In-flight keys live in a small table {@code
   * <prefix>keys_inflight}; the commit moves the key in one transaction (one statement on
   * PostgreSQL) into {@code <prefix>keys}, which is partitioned by the day its deadline falls in
   * and written once per key (no update, so no dead row per commit). The sweeper drops a day's
   * partition whole once the day is over instead of deleting its rows. See docs/stores/jdbc.md,
   * "Partitioned layout".
   */
  PARTITIONED;

  /**
   * Reads a layout from its configuration name, {@code standard} or {@code partitioned}.
   *
   * @param name the name, any case
   * @return the layout
   * @throws dev.idem.IdemConfigException if the name is neither
   */
  public static JdbcLayout fromName(String name) {
    for (JdbcLayout layout : values()) {
      if (layout.name().equalsIgnoreCase(name == null ? "" : name.strip())) {
        return layout;
      }
    }
    throw new dev.idem.IdemConfigException(
        "JDBC store layout '" + name + "' is not known: use standard or partitioned");
  }
}
