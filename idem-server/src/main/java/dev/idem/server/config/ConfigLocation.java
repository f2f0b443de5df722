package dev.idem.server.config;

/**
 * Where a field was written in a config file.
 *
 * @param file the file name as given on the command line
 * @param line 1-based line
 * @param column 1-based column
 */
public record ConfigLocation(String file, int line, int column) {

  /**
   * Returns {@code file:line:col}.
   *
   * @return the location in the form editors and compilers print
   */
  @Override
  public String toString() {
    return file + ":" + line + ":" + column;
  }
}
