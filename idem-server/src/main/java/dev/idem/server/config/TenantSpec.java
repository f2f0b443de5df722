package dev.idem.server.config;

import dev.idem.IdemConfigException;
import dev.idem.key.FieldPath;
import dev.idem.key.KeyRule;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where a pipeline reads each event's tenant ({@code tenant}): a body field path ({@code
 * source.tenant_id}), a header ({@code header("X-Tenant")}) or a claim of the caller's verified JWT
 * ({@code claim("tid")}, with {@code source.webhook.auth.jwt}). Keys are then scoped per tenant:
 * the same key in two tenants never collides, and each tenant's keys can be cleared alone.
 *
 * @param source what kind of value
 * @param name the field path, header name or claim name
 */
public record TenantSpec(Source source, String name) {
  private static final Pattern CALL =
      Pattern.compile("(header|claim)\\(\\s*(?:\"([^\"]*)\"|'([^']*)'|([^)\"']*))\\s*\\)");

  /** What kind of value names the tenant. */
  public enum Source {
    /** A body field. */
    FIELD,
    /** A request header. */
    HEADER,
    /** A claim of the caller's verified JWT. */
    CLAIM
  }

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException if the name is not valid for its source
   */
  public TenantSpec {
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(name, "name");
    switch (source) {
      case FIELD -> FieldPath.parse(name);
      case HEADER -> KeyRule.header(name);
      case CLAIM -> {
        if (!name.matches("[A-Za-z0-9_.:-]{1,64}")) {
          throw new IdemConfigException(
              "claim(\""
                  + name
                  + "\") is not a claim name; use 1 to 64 letters, digits, '_', '.', ':' or '-'"
                  + " (e.g. claim(\"tid\"))");
        }
      }
    }
  }

  /**
   * Parses the YAML form.
   *
   * @param text {@code a.field.path}, {@code header("X-Tenant")} or {@code claim("tid")}
   * @return the spec
   * @throws IdemConfigException if the text is none of these
   */
  public static TenantSpec parse(String text) {
    String s = text.strip();
    if (s.isEmpty()) {
      throw new IdemConfigException(
          "is blank; write a field path (source.tenant_id), header(\"X-Tenant\") or"
              + " claim(\"tid\")");
    }
    Matcher m = CALL.matcher(s);
    if (m.matches()) {
      String name = m.group(2) != null ? m.group(2) : m.group(3) != null ? m.group(3) : m.group(4);
      name = name.strip();
      return new TenantSpec(m.group(1).equals("header") ? Source.HEADER : Source.CLAIM, name);
    }
    if (s.contains("(")) {
      throw new IdemConfigException(
          "'"
              + text
              + "' is not valid; write a field path (source.tenant_id), header(\"X-Tenant\") or"
              + " claim(\"tid\")");
    }
    return new TenantSpec(Source.FIELD, s);
  }

  /**
   * Returns the YAML form.
   *
   * @return e.g. {@code header("X-Tenant")}
   */
  @Override
  public String toString() {
    return switch (source) {
      case FIELD -> name;
      case HEADER -> "header(\"" + name + "\")";
      case CLAIM -> "claim(\"" + name + "\")";
    };
  }
}
