package dev.idem.server.transform;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.idem.IdemConfigException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import net.thisptr.jackson.jq.BuiltinFunctionLoader;
import net.thisptr.jackson.jq.JsonQuery;
import net.thisptr.jackson.jq.Scope;
import net.thisptr.jackson.jq.Versions;
import net.thisptr.jackson.jq.exception.JsonQueryException;

/**
 * A compiled jq program. Thread-safe: the compiled query is immutable, the builtin functions live
 * in one root scope loaded once per JVM and only read afterwards, and each run gets its own child
 * scope for the variables it binds.
 */
final class JqTransform implements Transform {
  /** Reads events and writes results; configured once, thread-safe. */
  private static final ObjectMapper MAPPER = JsonMapper.builder().build();

  private static final int MAX_EXPECTED_TOKENS = 8;

  private final String program;
  private final JsonQuery query;

  private JqTransform(String program, JsonQuery query) {
    this.program = program;
    this.query = query;
  }

  static JqTransform compile(String program) {
    Objects.requireNonNull(program, "program");
    if (program.isBlank()) {
      throw new IdemConfigException(
          "transform.jq is empty; give a jq program, e.g. '{id: .id, total: .total_price}'");
    }
    Objects.requireNonNull(
        RootScope.INSTANCE); // load the builtins at config time, not on the first event
    try {
      return new JqTransform(program, JsonQuery.compile(program, Versions.JQ_1_6));
    } catch (JsonQueryException e) {
      throw new IdemConfigException(
          "transform.jq '" + program + "' does not compile: " + parseError(e));
    }
  }

  @Override
  public List<byte[]> apply(byte[] json) {
    JsonNode input;
    try {
      input = MAPPER.readTree(json);
    } catch (IOException e) {
      throw new TransformException(
          "jq program '" + program + "': the event is not JSON: " + e.getMessage(), e);
    }
    if (input == null || input.isMissingNode()) {
      throw new TransformException(
          "jq program '" + program + "': the event is empty",
          new IllegalArgumentException("empty body"));
    }
    List<byte[]> out = new ArrayList<>(1);
    try {
      query.apply(
          Scope.newChildScope(RootScope.INSTANCE),
          input,
          node -> {
            try {
              out.add(MAPPER.writeValueAsBytes(node));
            } catch (JsonProcessingException e) {
              throw new JsonQueryException(e);
            }
          });
    } catch (JsonQueryException | RuntimeException e) {
      throw new TransformException(
          "jq program '" + program + "' failed on this event: " + describe(e), e);
    }
    return out;
  }

  @Override
  public String toString() {
    return "jq '" + program + "'";
  }

  private static String describe(Exception e) {
    String message = e.getMessage();
    if (message == null || message.isBlank() || message.equals("N/A")) {
      return e.getClass().getSimpleName();
    }
    return message;
  }

  /**
   * The first line of JavaCC's parse error ("Encountered ... at line 1, column 4.") and the first
   * few tokens it expected, on one line.
   */
  private static String parseError(JsonQueryException e) {
    Throwable cause = e.getCause() == null ? e : e.getCause();
    String message = cause.getMessage() == null ? e.toString() : cause.getMessage();
    String[] lines = message.split("\\R");
    StringBuilder out = new StringBuilder(lines[0].trim());
    List<String> expected = new ArrayList<>();
    for (int i = 1; i < lines.length; i++) {
      String line = lines[i].trim();
      if (line.endsWith("...")) {
        expected.add(line.substring(0, line.length() - 3).trim());
      }
    }
    if (!expected.isEmpty()) {
      out.append(" (expected ");
      out.append(
          String.join(" or ", expected.subList(0, Math.min(MAX_EXPECTED_TOKENS, expected.size()))));
      out.append(expected.size() > MAX_EXPECTED_TOKENS ? " or ...)" : ")");
    }
    return out.toString();
  }

  /** The builtin functions of jq 1.6, loaded on first use and shared by every transform. */
  private static final class RootScope {
    static final Scope INSTANCE = load();

    private static Scope load() {
      Scope scope = Scope.newEmptyScope();
      BuiltinFunctionLoader.getInstance().loadFunctions(Versions.JQ_1_6, scope);
      return scope;
    }
  }
}
