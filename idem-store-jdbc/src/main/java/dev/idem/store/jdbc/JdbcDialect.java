package dev.idem.store.jdbc;

import dev.idem.IdemConfigException;
import java.util.Locale;

/**
 * The databases {@link JdbcDedupStore} supports. Each has its own SQL for the one-step reserve, the
 * outbox claim and the schema; the dialect is chosen from the JDBC URL ({@link #fromUrl}) or, for a
 * caller's {@link javax.sql.DataSource}, from the database's product name ({@link
 * #fromProductName}).
 */
public enum JdbcDialect {
  /**
   * PostgreSQL 10 or newer ({@code jdbc:postgresql:}, driver {@code org.postgresql:postgresql}).
   */
  POSTGRESQL("PostgreSQL", "jdbc:postgresql:", "org.postgresql:postgresql", 10, 0),
  /**
   * MariaDB 10.6 or newer ({@code jdbc:mariadb:}, driver {@code
   * org.mariadb.jdbc:mariadb-java-client}): 10.6 brought {@code SKIP LOCKED}, which the outbox
   * claim needs.
   */
  MARIADB("MariaDB", "jdbc:mariadb:", "org.mariadb.jdbc:mariadb-java-client", 10, 6),
  /** H2 2.x ({@code jdbc:h2:}, driver {@code com.h2database:h2}), embedded or server mode. */
  H2("H2", "jdbc:h2:", "com.h2database:h2", 2, 0);

  private static final String SUPPORTED =
      "jdbc:postgresql: (PostgreSQL 10+), jdbc:mariadb: (MariaDB 10.6+) or jdbc:h2: (H2 2.x)";

  private final String productName;
  private final String urlPrefix;
  private final String driverArtifact;
  private final int minMajor;
  private final int minMinor;

  JdbcDialect(
      String productName, String urlPrefix, String driverArtifact, int minMajor, int minMinor) {
    this.productName = productName;
    this.urlPrefix = urlPrefix;
    this.driverArtifact = driverArtifact;
    this.minMajor = minMajor;
    this.minMinor = minMinor;
  }

  /**
   * Chooses the dialect of a JDBC URL by its prefix.
   *
   * @param jdbcUrl e.g. {@code jdbc:postgresql://127.0.0.1:5432/idem}
   * @return the dialect
   * @throws IdemConfigException if the URL names another database (MySQL included: the store uses
   *     MariaDB's {@code INSERT ... RETURNING}, which MySQL lacks); the message lists the supported
   *     URLs and never repeats a password
   */
  public static JdbcDialect fromUrl(String jdbcUrl) {
    if (jdbcUrl == null || jdbcUrl.isBlank()) {
      throw new IdemConfigException(
          "the JDBC URL is empty: use " + SUPPORTED + ", e.g. jdbc:postgresql://127.0.0.1/idem");
    }
    String lower = jdbcUrl.strip().toLowerCase(Locale.ROOT);
    for (JdbcDialect d : values()) {
      if (lower.startsWith(d.urlPrefix)) {
        return d;
      }
    }
    String hint =
        lower.startsWith("jdbc:mysql:")
            ? " (MySQL lacks INSERT/DELETE ... RETURNING, which the store uses: run MariaDB)"
            : lower.startsWith("jdbc:") ? "" : " (a JDBC URL starts with jdbc:)";
    throw new IdemConfigException(
        "JDBC URL '"
            + JdbcUrls.redact(jdbcUrl)
            + "' is not supported"
            + hint
            + ": use "
            + SUPPORTED);
  }

  /**
   * Chooses the dialect from {@link java.sql.DatabaseMetaData#getDatabaseProductName()}.
   *
   * @param productName the product name the driver reports, e.g. {@code PostgreSQL}
   * @return the dialect
   * @throws IdemConfigException if the database is not one of the supported ones
   */
  public static JdbcDialect fromProductName(String productName) {
    for (JdbcDialect d : values()) {
      if (d.productName.equalsIgnoreCase(productName == null ? "" : productName.strip())) {
        return d;
      }
    }
    throw new IdemConfigException(
        "database '" + productName + "' is not supported: use " + SUPPORTED);
  }

  /**
   * Returns the product name the database's driver reports.
   *
   * @return e.g. {@code PostgreSQL}
   */
  public String productName() {
    return productName;
  }

  /**
   * Returns the Maven coordinates of the JDBC driver to add, for error messages.
   *
   * @return {@code groupId:artifactId}
   */
  public String driverArtifact() {
    return driverArtifact;
  }

  /**
   * Returns the oldest server version the store supports, e.g. {@code 10.6}.
   *
   * @return {@code major.minor}
   */
  public String minimumVersion() {
    return minMajor + "." + minMinor;
  }

  boolean supportsVersion(int major, int minor) {
    return major > minMajor || (major == minMajor && minor >= minMinor);
  }
}
