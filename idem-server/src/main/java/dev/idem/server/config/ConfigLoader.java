package dev.idem.server.config;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
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
 * reads {@code file:line:col: field.path: what is allowed}.
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
    List<ConfigProblem> problems = new ArrayList<>();
    if (!(doc.root() instanceof ObjectNode)) {
      throw new ConfigException(
          List.of(
              new ConfigProblem(
                  doc.locate(""),
                  "",
                  "the file must be a map with server, store and pipelines (see"
                      + " examples/quickstart.yaml)")));
    }
    checkKeys(doc, doc.root(), IdemProperties.class, "", problems);
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    IdemProperties props;
    try {
      props = MAPPER.treeToValue(doc.root(), IdemProperties.class);
    } catch (JsonMappingException e) {
      String path = path(e);
      throw new ConfigException(List.of(new ConfigProblem(doc.locate(path), path, describe(e))));
    } catch (IOException e) {
      throw new ConfigException(
          List.of(new ConfigProblem(doc.locate(""), "", "cannot bind: " + e.getMessage())));
    }
    return new ConfigConverter(doc).convert(props);
  }

  /** Reports every key that no properties field binds, with the keys allowed there. */
  private static void checkKeys(
      YamlDocument doc, JsonNode node, Class<?> type, String path, List<ConfigProblem> problems) {
    if (!(node instanceof ObjectNode)) {
      return; // a type mismatch, reported by binding
    }
    Map<String, Field> fields = new java.util.LinkedHashMap<>();
    for (Field f : type.getFields()) {
      if (!Modifier.isStatic(f.getModifiers())) {
        fields.put(snake(f.getName()), f);
      }
    }
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
        continue;
      }
      Class<?> ft = f.getType();
      if (ft.getEnclosingClass() == IdemProperties.class) {
        checkKeys(doc, e.getValue(), ft, child, problems);
      } else if (List.class.isAssignableFrom(ft) && e.getValue().isArray()) {
        Type g = f.getGenericType();
        if (g instanceof ParameterizedType pt
            && pt.getActualTypeArguments()[0] instanceof Class<?> element
            && element.getEnclosingClass() == IdemProperties.class) {
          for (int i = 0; i < e.getValue().size(); i++) {
            checkKeys(doc, e.getValue().get(i), element, child + "[" + i + "]", problems);
          }
        }
      }
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
