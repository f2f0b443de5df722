package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.util.List;
import java.util.stream.Collectors;

/**
 * A config file is not valid. The message has one line per problem, each {@code file:line:col:
 * field.path: what is allowed}.
 */
public final class ConfigException extends IdemConfigException {
  private static final long serialVersionUID = 1L;

  @SuppressWarnings("serial") // records of strings and ints; never serialised in practice
  private final List<ConfigProblem> problems;

  /**
   * Creates the exception.
   *
   * @param problems what is wrong, at least one
   */
  public ConfigException(List<ConfigProblem> problems) {
    super(problems.stream().map(ConfigProblem::toString).collect(Collectors.joining("\n")));
    if (problems.isEmpty()) {
      throw new IllegalArgumentException("a ConfigException needs at least one problem");
    }
    this.problems = List.copyOf(problems);
  }

  /**
   * Returns the problems, in file order where known.
   *
   * @return the problems
   */
  public List<ConfigProblem> problems() {
    return problems;
  }
}
