package dev.idem;

import java.util.regex.Pattern;

/**
 * Names one dedup step: the pipeline (route) id plus the step's id. Two scopes never suppress each
 * other: the same key in two scopes is two independent keys, and {@code clear} of one scope never
 * touches another.
 *
 * <p>Both parts are 1 to 64 characters of {@code [A-Za-z0-9_.-]}, so that {@link #toString()}
 * ({@code pipeline/step}) is unambiguous and safe inside store keys and file names.
 *
 * @param pipeline the pipeline or route id, e.g. {@code shop-orders}
 * @param step the step's id within the pipeline, e.g. {@code dedup}
 */
public record Scope(String pipeline, String step) {
  private static final Pattern PART = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

  /** The step id used when a pipeline has a single dedup step. */
  public static final String DEFAULT_STEP = "dedup";

  /**
   * Validates both parts.
   *
   * @throws IdemConfigException if a part is empty, too long, or has a character outside {@code
   *     [A-Za-z0-9_.-]}
   */
  public Scope {
    check("pipeline", pipeline);
    check("step", step);
  }

  /**
   * Returns the scope of a pipeline's single dedup step.
   *
   * @param pipeline the pipeline id
   * @return the scope {@code pipeline/dedup}
   */
  public static Scope of(String pipeline) {
    return new Scope(pipeline, DEFAULT_STEP);
  }

  /**
   * Returns the scope of a named step.
   *
   * @param pipeline the pipeline id
   * @param step the step id
   * @return the scope
   */
  public static Scope of(String pipeline, String step) {
    return new Scope(pipeline, step);
  }

  /**
   * Parses the form that {@link #toString()} prints.
   *
   * @param text {@code pipeline/step}
   * @return the scope
   * @throws IdemConfigException if the text is not of that form
   */
  public static Scope parse(String text) {
    int slash = text.indexOf('/');
    if (slash < 0) {
      throw new IdemConfigException(
          "scope '" + text + "' is not of the form pipeline/step (e.g. shop-orders/dedup)");
    }
    return new Scope(text.substring(0, slash), text.substring(slash + 1));
  }

  private static void check(String what, String value) {
    if (value == null || !PART.matcher(value).matches()) {
      throw new IdemConfigException(
          "scope "
              + what
              + " '"
              + value
              + "' is not allowed: use 1 to 64 characters of letters, digits, '_', '.' or '-'");
    }
  }

  /** Returns {@code pipeline/step}. */
  @Override
  public String toString() {
    return pipeline + "/" + step;
  }
}
