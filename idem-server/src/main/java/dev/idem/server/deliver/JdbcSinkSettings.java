package dev.idem.server.deliver;

import dev.idem.IdemConfigException;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Where the JDBC sink inserts events ({@code deliver.jdbc} in YAML).
 *
 * @param url the JDBC URL: {@code jdbc:postgresql:}, {@code jdbc:mariadb:} or {@code jdbc:h2:}
 * @param table the table, created if missing: letters, digits and {@code _}, optionally {@code
 *     schema.table}; not quoted, so the database's case rules apply
 * @param username the user, or null if the URL carries it
 * @param password the password, or null if the URL carries it (or none is needed)
 * @param maxPoolSize the most connections the sink holds (1 to 100)
 */
public record JdbcSinkSettings(
    String url,
    String table,
    @Nullable String username,
    @Nullable String password,
    int maxPoolSize) {

  /** The default pool size: 4 connections, enough for a sink's concurrent inserts. */
  public static final int DEFAULT_MAX_POOL_SIZE = 4;

  private static final Pattern IDENTIFIER =
      Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");
  private static final Pattern URL_PASSWORD = Pattern.compile("(?i)(password=)[^&;]*");

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field and what is allowed
   */
  public JdbcSinkSettings {
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(table, "table");
    JdbcSinkDialect.of(url); // rejects URLs of databases the sink does not know
    if (!IDENTIFIER.matcher(table).matches()) {
      throw new IdemConfigException(
          "deliver.jdbc.table '"
              + table
              + "' is not a table name; use letters, digits and _ (up to 63), optionally"
              + " schema.table");
    }
    if (maxPoolSize < 1 || maxPoolSize > 100) {
      throw new IdemConfigException("deliver.jdbc pool size must be 1 to 100, got " + maxPoolSize);
    }
  }

  /**
   * Settings with the default pool size.
   *
   * @param url the JDBC URL
   * @param table the table
   * @param username the user, or null
   * @param password the password, or null
   */
  public JdbcSinkSettings(
      String url, String table, @Nullable String username, @Nullable String password) {
    this(url, table, username, password, DEFAULT_MAX_POOL_SIZE);
  }

  /** Hides the password, in the field and in the URL. */
  @Override
  public String toString() {
    return "JdbcSinkSettings[url="
        + redactedUrl()
        + ", table="
        + table
        + (username == null ? "" : ", username=" + username)
        + (password == null ? "" : ", password=***")
        + ", maxPoolSize="
        + maxPoolSize
        + "]";
  }

  /**
   * Returns the URL with any {@code password=} parameter masked, for logs.
   *
   * @return the URL, safe to log
   */
  public String redactedUrl() {
    return URL_PASSWORD.matcher(url).replaceAll("$1***");
  }
}
