package dev.idem.server.config;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Reads a service config file: YAML with {@code ${ENV}} substitution, bound to {@link
 * IdemProperties}, converted by {@link ConfigConverter} into a validated {@link IdemConfig}.
 *
 * <p>Unknown keys are errors (all of them are reported, with the keys allowed at that place), as
 * are values of the wrong type, values out of range and broken rules between fields; every problem
 * reads {@code file:line:col: field.path: what is allowed}. One run reports every problem of the
 * file: an unknown key or a value of the wrong type is reported and left out, and the rest of the
 * file is still bound and checked.
 */
public final class ConfigLoader {
  private static final ObjectMapper MAPPER =
      new ObjectMapper()
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
          .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);

  private ConfigLoader() {}

  /**
   * Loads a config file, substituting variables from the process environment.
   *
   * @param file the YAML file
   * @return the validated config
   * @throws ConfigException listing every problem found
   */
  public static IdemConfig load(Path file) {
    return load(file, System::getenv);
  }

  /**
   * Loads a config file.
   *
   * @param file the YAML file
   * @param env looks up variables for {@code ${NAME}} (null when unset)
   * @return the validated config
   * @throws ConfigException listing every problem found
   */
  public static IdemConfig load(Path file, Function<String, @Nullable String> env) {
    String name = file.toString();
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new ConfigException(
          List.of(
              new ConfigProblem(
                  new ConfigLocation(name, 1, 1),
                  "",
                  "no such file; pass the path of a YAML config (e.g. examples/quickstart.yaml)")));
    } catch (IOException e) {
      throw new ConfigException(
          List.of(new ConfigProblem(new ConfigLocation(name, 1, 1), "", "cannot read: " + e)));
    }
    return parse(name, text, env);
  }

  /**
   * Parses config text.
   *
   * @param fileName the name to use in messages
   * @param text the YAML
   * @param env looks up variables for {@code ${NAME}} (null when unset)
   * @return the validated config
   * @throws ConfigException listing every problem found
   */
  public static IdemConfig parse(
      String fileName, String text, Function<String, @Nullable String> env) {
    YamlDocument doc = YamlDocument.parse(fileName, text, env);
    // Every check runs, whatever an earlier one found, so that one run reports every problem.
    List<ConfigProblem> problems = new ArrayList<>(doc.problems());
    if (!(doc.root() instanceof ObjectNode root)) {
      problems.add(
          new ConfigProblem(
              doc.locate(""),
              "",
              "the file must be a map with server, store and pipelines (see"
                  + " examples/quickstart.yaml)"));
      throw new ConfigException(problems);
    }
    ObjectNode tree = root.deepCopy();
    checkFields(doc, tree, IdemProperties.class, "", problems);
    IdemProperties props;
    try {
      props = MAPPER.treeToValue(tree, IdemProperties.class);
    } catch (JsonMappingException e) {
      // checkFields removes what cannot bind; this is the net for a shape it does not know.
      String path = path(e);
      problems.add(new ConfigProblem(doc.locate(path), path, describe(e)));
      throw new ConfigException(ConfigConverter.sorted(problems));
    } catch (IOException e) {
      problems.add(new ConfigProblem(doc.locate(""), "", "cannot bind: " + e.getMessage()));
      throw new ConfigException(ConfigConverter.sorted(problems));
    }
    return new ConfigConverter(doc, problems).convert(props);
  }

  /**
   * Reports every key that no properties field binds (with the keys allowed there) and every value
   * of the wrong type, and removes each from {@code node}, so that the rest still binds and is
   * checked in the same run.
   */
  private static void checkFields(
      YamlDocument doc, ObjectNode node, Class<?> type, String path, List<ConfigProblem> problems) {
    Map<String, Field> fields = new LinkedHashMap<>();
    for (Field f : type.getFields()) {
      if (!Modifier.isStatic(f.getModifiers())) {
        fields.put(snake(f.getName()), f);
      }
    }
    List<String> remove = new ArrayList<>();
    for (Map.Entry<String, JsonNode> e : node.properties()) {
      String child = path.isEmpty() ? e.getKey() : path + "." + e.getKey();
      Field f = fields.get(e.getKey());
      if (f == null) {
        problems.add(
            new ConfigProblem(
                doc.locate(child),
                child,
                "unknown key '"
                    + e.getKey()
                    + "'; "
                    + (fields.isEmpty()
                        ? "this block takes no keys (write {})"
                        : "allowed here: " + String.join(", ", new TreeSet<>(fields.keySet())))));
        remove.add(e.getKey());
        continue;
      }
      String wrong = checkValue(doc, e.getValue(), f.getGenericType(), child, problems);
      if (wrong != null) {
        problems.add(new ConfigProblem(doc.locate(child), child, wrong));
        remove.add(e.getKey());
      }
    }
    node.remove(remove);
  }

  /**
   * Checks one value against the field's type, descending into maps and lists.
   *
   * @return what is wrong with the value itself, or null (problems inside it are added directly)
   */
  private static @Nullable String checkValue(
      YamlDocument doc, JsonNode value, Type type, String path, List<ConfigProblem> problems) {
    if (value.isNull() || type == JsonNode.class) {
      return null;
    }
    if (type instanceof Class<?> c && c.getEnclosingClass() == IdemProperties.class) {
      if (!(value instanceof ObjectNode obj)) {
        return "expected a map of fields (key: value), not a single value or a list";
      }
      checkFields(doc, obj, c, path, problems);
      return null;
    }
    if (type == String.class) {
      return value.isValueNode() ? null : "expected a single value (text), not a list or a map";
    }
    if (type == Integer.class || type == Long.class) {
      return wholeNumber(value, type == Integer.class ? Integer.MAX_VALUE : Long.MAX_VALUE);
    }
    if (type == Boolean.class) {
      return value.isBoolean() || (value.isTextual() && value.asText().trim().matches("true|false"))
          ? null
          : "expected true or false";
    }
    if (type instanceof ParameterizedType pt && pt.getRawType() == List.class) {
      if (!(value instanceof ArrayNode list)) {
        return "expected a list (- item, or [a, b])";
      }
      Type element = pt.getActualTypeArguments()[0];
      for (int i = 0; i < list.size(); i++) {
        String at = path + "[" + i + "]";
        String wrong = checkValue(doc, list.get(i), element, at, problems);
        if (wrong != null) {
          problems.add(new ConfigProblem(doc.locate(at), at, wrong));
          list.set(i, NullNode.getInstance());
        }
      }
      return null;
    }
    if (type instanceof ParameterizedType pt && pt.getRawType() == Map.class) {
      if (!(value instanceof ObjectNode map)) {
        return "expected a map of names to text values";
      }
      Type element = pt.getActualTypeArguments()[1];
      List<String> remove = new ArrayList<>();
      for (Map.Entry<String, JsonNode> e : map.properties()) {
        String at = path + "." + e.getKey();
        String wrong = checkValue(doc, e.getValue(), element, at, problems);
        if (wrong != null) {
          problems.add(new ConfigProblem(doc.locate(at), at, wrong));
          remove.add(e.getKey());
        }
      }
      map.remove(remove);
      return null;
    }
    return null; // a type this check does not know: binding reports a mismatch
  }

  private static @Nullable String wholeNumber(JsonNode value, long max) {
    String text = value.isIntegralNumber() || value.isTextual() ? value.asText().trim() : null;
    if (text == null || !text.matches("-?\\d{1,19}")) {
      return "expected a whole number";
    }
    try {
      long n = Long.parseLong(text);
      if (n > max || n < -max - 1) {
        return "is too large for a whole number here: at most " + max;
      }
      return null;
    } catch (NumberFormatException e) {
      return "is too large for a whole number here: at most " + max;
    }
  }

  static String snake(String camel) {
    StringBuilder out = new StringBuilder(camel.length() + 4);
    for (int i = 0; i < camel.length(); i++) {
      char c = camel.charAt(i);
      if (Character.isUpperCase(c)) {
        out.append('_').append(Character.toLowerCase(c));
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }

  private static String path(JsonMappingException e) {
    StringBuilder out = new StringBuilder();
    for (JsonMappingException.Reference r : e.getPath()) {
      if (r.getFieldName() != null) {
        if (out.length() > 0) {
          out.append('.');
        }
        out.append(r.getFieldName());
      } else if (r.getIndex() >= 0) {
        out.append('[').append(r.getIndex()).append(']');
      }
    }
    return out.toString();
  }

  private static String describe(JsonMappingException e) {
    if (e instanceof MismatchedInputException m && m.getTargetType() != null) {
      Class<?> t = m.getTargetType();
      if (t == Integer.class || t == Long.class || t == int.class || t == long.class) {
        return "expected a whole number";
      }
      if (t == String.class) {
        return "expected a single value (text), not a list or a map";
      }
      if (List.class.isAssignableFrom(t)) {
        return "expected a list (- item, or [a, b])";
      }
      if (Map.class.isAssignableFrom(t)) {
        return "expected a map of names to text values";
      }
      if (t.getEnclosingClass() == IdemProperties.class) {
        return "expected a map of fields (key: value), not a single value or a list";
      }
    }
    return e.getOriginalMessage();
  }
}
