package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.util.List;
import java.util.Objects;

/**
 * A key rule as written in YAML ({@code dedup.key}, {@code ordering.key}): one expression (a body
 * field path such as {@code source.id}, or {@code header("X-Id")}) or a list of them (a composite
 * key). Parsed into a {@code dev.idem.key.KeyRule} when the pipeline is built.
 *
 * @param expressions the expressions, at least one, none blank
 * @param composite whether they were written as a list ({@code [a, b]})
 */
public record KeySpec(List<String> expressions, boolean composite) {

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException if there is no expression or one is blank
   */
  public KeySpec {
    expressions = List.copyOf(expressions);
    if (expressions.isEmpty()) {
      throw new IdemConfigException(
          "a key list needs at least one field path (e.g. [source.entity_id, source.event_type])");
    }
    for (String e : expressions) {
      if (Objects.requireNonNull(e, "expression").isBlank()) {
        throw new IdemConfigException(
            "a key expression is blank; write a field path (source.id) or header(\"X-Id\")");
      }
    }
    if (!composite && expressions.size() != 1) {
      throw new IdemConfigException("a single key has exactly one expression");
    }
  }

  /**
   * Returns a single-expression key.
   *
   * @param expression a field path or {@code header("...")}
   * @return the key spec
   */
  public static KeySpec single(String expression) {
    return new KeySpec(List.of(expression), false);
  }

  /**
   * Returns the key as written in YAML.
   *
   * @return e.g. {@code source.id} or {@code [a, b]}
   */
  @Override
  public String toString() {
    return composite ? "[" + String.join(", ", expressions) + "]" : expressions.get(0);
  }
}
