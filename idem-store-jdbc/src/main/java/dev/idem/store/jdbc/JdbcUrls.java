package dev.idem.store.jdbc;

import java.util.regex.Pattern;

/** Makes JDBC URLs safe to print: no password, whatever the driver's syntax. */
final class JdbcUrls {
  /** {@code //user:secret@host} (userinfo in the authority). */
  private static final Pattern USERINFO = Pattern.compile("//[^/?;@]*@");

  /**
   * Any parameter whose name ends in {@code password} or is {@code pwd}, after {@code ?}, {@code &}
   * or {@code ;} (PostgreSQL and MariaDB use {@code ?a=b&c=d}, H2 {@code ;A=B}).
   */
  private static final Pattern SECRET_PARAM =
      Pattern.compile("(?i)([?&;]\\s*)([a-z0-9_.-]*password|pwd)\\s*=[^&;]*");

  private JdbcUrls() {}

  /**
   * Returns the URL with every password replaced by {@code ***}.
   *
   * @param url a JDBC URL
   * @return the URL without secrets
   */
  static String redact(String url) {
    String out = USERINFO.matcher(url).replaceAll("//***@");
    return SECRET_PARAM.matcher(out).replaceAll("$1$2=***");
  }
}
