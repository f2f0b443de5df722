package dev.idem.server.config;

import java.util.regex.Pattern;

/** Hides secrets in values that are printed: passwords in URLs, tokens, secrets. */
public final class Masking {
  /** What a hidden value prints as. */
  public static final String MASK = "***";

  private static final Pattern USER_INFO = Pattern.compile("(://)([^/@]*:)?[^/@]*@");
  private static final Pattern PASSWORD_PARAM =
      Pattern.compile("(?i)((?:password|pwd|secret|token)=)[^&;]*");

  private Masking() {}

  /**
   * Hides the password (or whole user info) of a URL and any {@code password=} parameter.
   *
   * @param url the URL
   * @return the URL with secrets replaced by {@code ***}
   */
  public static String url(String url) {
    String s = USER_INFO.matcher(url).replaceAll(m -> m.group(1) + MASK + "@");
    return PASSWORD_PARAM.matcher(s).replaceAll(m -> m.group(1) + MASK);
  }

  /**
   * Returns whether a header carries a credential and must be hidden when printed.
   *
   * @param name the header name
   * @return true for Authorization, Cookie, and names with token, secret, key or password
   */
  public static boolean isSecretHeader(String name) {
    String n = name.toLowerCase(java.util.Locale.ROOT);
    return n.equals("authorization")
        || n.equals("proxy-authorization")
        || n.equals("cookie")
        || n.contains("token")
        || n.contains("secret")
        || n.contains("key")
        || n.contains("password");
  }
}
