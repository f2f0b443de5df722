package dev.idem.server.config;

/**
 * One thing wrong with a config file.
 *
 * @param location where the field was written
 * @param path the field, e.g. {@code pipelines[0].dedup.expiry}; empty for the whole file
 * @param message what is wrong and what is allowed
 */
public record ConfigProblem(ConfigLocation location, String path, String message) {

  /**
   * Returns {@code file:line:col: field.path: message}.
   *
   * @return the problem as one line
   */
  @Override
  public String toString() {
    return location + ": " + (path.isEmpty() ? "" : path + ": ") + message;
  }
}
