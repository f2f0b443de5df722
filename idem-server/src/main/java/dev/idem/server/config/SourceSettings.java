package dev.idem.server.config;

/**
 * Where a pipeline's events come from ({@code source:}): exactly one source per pipeline. Every
 * source feeds the same steps (key, dedup, ordering, transform, delivery); only its edge differs,
 * in how it receives an event and how it answers the pipeline's outcome.
 */
public interface SourceSettings {

  /** The deepest JSON nesting any source accepts: the deepest the key canonicalizer reads. */
  int MAX_MAX_DEPTH = dev.idem.key.CanonicalJson.MAX_DEPTH;

  /**
   * Returns the source's name in the config ({@code webhook}, {@code kafka}, ...).
   *
   * @return the name
   */
  String type();

  /**
   * Returns the largest event body accepted, in bytes.
   *
   * @return the limit
   */
  long maxBody();

  /**
   * Returns the deepest JSON nesting accepted: the one depth limit of the body check, the key, the
   * fingerprint and the transform.
   *
   * @return the limit, from 1 to {@link #MAX_MAX_DEPTH}
   */
  int maxDepth();

  /**
   * Returns the settings as {@code idem check-config} prints them, secrets masked.
   *
   * @return field name to value (nested maps and lists allowed)
   */
  java.util.Map<String, Object> printable();

  /**
   * Returns the key a pipeline on this source gets when {@code dedup.key} is omitted, if the source
   * has one of its own (e.g. {@code header("Nats-Msg-Id")} for NATS); null for the service's usual
   * default (a signed webhook's delivery id, or the default key: caller chain plus canonical body).
   *
   * @return the source's default key rule, or null
   */
  default @org.jspecify.annotations.Nullable KeySpec defaultKey() {
    return null;
  }
}
