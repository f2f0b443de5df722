package dev.idem.server.config;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A YAML config file read into a JSON tree, with the line and column of every field and list
 * element, and {@code ${ENV}} / {@code ${ENV:-default}} references substituted.
 *
 * <p>References are found in the raw text first and replaced by placeholders of exactly the same
 * length made of private-use characters, so that the file parses even where a reference sits in a
 * flow mapping ({@code { secret: ${SECRET} }}, where a bare {@code {} would be YAML syntax) and every
 * column stays where the user wrote it. After parsing, placeholders inside string values are
 * replaced by the variable's value (never re-parsed as YAML, so a value cannot inject structure);
 * placeholders in comments vanish with the comment, so an unset variable named only in a comment is
 * not an error. {@code $${} writes a literal {@code ${}.
 */
final class YamlDocument {
  private static final char MARK = '\uE000';
  private static final char PAD = '\uE001';
  private static final char INDEX_BASE = '\uE100';
  private static final int MAX_REFERENCES = 0x1000; // indexes stay inside U+E100..U+F0FF

  private final String file;
  private final JsonNode root;
  private final Map<String, ConfigLocation> locations;
  private final List<ConfigProblem> problems;

  private YamlDocument(
      String file,
      JsonNode root,
      Map<String, ConfigLocation> locations,
      List<ConfigProblem> problems) {
    this.file = file;
    this.root = root;
    this.locations = locations;
    this.problems = List.copyOf(problems);
  }

  /** A {@code ${...}} reference found in the raw text. */
  private record Reference(
      String name, @Nullable String fallback, boolean literal, int line, int column) {}

  /**
   * Parses a config file's text.
   *
   * @param file the file name for error messages
   * @param text the file's content
   * @param env looks up environment variables (null when unset)
   * @return the document, with {@link #problems()} that did not stop the parse (a key repeats, a
   *     variable is unset)
   * @throws ConfigException if the YAML is malformed
   */
  static YamlDocument parse(String file, String text, Function<String, @Nullable String> env) {
    List<Reference> refs = new ArrayList<>();
    String masked = mask(file, text, refs);
    Map<String, ConfigLocation> locations = new HashMap<>();
    List<ConfigProblem> problems = new ArrayList<>();
    JsonNode root;
    try (JsonParser p = new YAMLFactory().createParser(masked)) {
      JsonToken first = p.nextToken();
      if (first == null) {
        root = JsonNodeFactory.instance.objectNode();
      } else {
        Builder b = new Builder(file, p, refs, env, locations, problems);
        root = b.value("");
      }
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      String msg = e.getOriginalMessage();
      throw new ConfigException(
          List.of(
              new ConfigProblem(
                  at == null
                      ? new ConfigLocation(file, 1, 1)
                      : new ConfigLocation(
                          file, Math.max(1, at.getLineNr()), Math.max(1, at.getColumnNr())),
                  "",
                  "not valid YAML: " + unmask(firstLine(msg), refs))));
    } catch (IOException e) {
      throw new ConfigException(
          List.of(new ConfigProblem(new ConfigLocation(file, 1, 1), "", "cannot read: " + e)));
    }
    locations.putIfAbsent("", new ConfigLocation(file, 1, 1));
    return new YamlDocument(file, root, locations, problems);
  }

  /**
   * Returns what is wrong but did not stop the parse: a key given twice (the first is kept), an
   * unset variable (left out of its value).
   */
  List<ConfigProblem> problems() {
    return problems;
  }

  /** Returns the file name given to {@link #parse}. */
  String file() {
    return file;
  }

  /** Returns the tree, with variables substituted. */
  JsonNode root() {
    return root;
  }

  /** Returns whether the field or element at {@code path} was written. */
  boolean has(String path) {
    return locations.containsKey(path);
  }

  /**
   * Returns where {@code path} was written, or where its nearest written parent was.
   *
   * @param path e.g. {@code pipelines[0].dedup.expiry}
   * @return the location
   */
  ConfigLocation locate(String path) {
    String p = path;
    while (true) {
      ConfigLocation at = locations.get(p);
      if (at != null) {
        return at;
      }
      if (p.isEmpty()) {
        return new ConfigLocation(file, 1, 1);
      }
      p = parent(p);
    }
  }

  static String parent(String path) {
    int dot = path.lastIndexOf('.');
    int bracket = path.lastIndexOf('[');
    int cut = Math.max(dot, bracket);
    return cut < 0 ? "" : path.substring(0, cut);
  }

  private static String firstLine(@Nullable String s) {
    if (s == null) {
      return "parse error";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }

  /** Replaces each reference by a same-length placeholder and records it. */
  private static String mask(String file, String text, List<Reference> refs) {
    StringBuilder out = new StringBuilder(text.length());
    int line = 1;
    int lineStart = 0;
    int i = 0;
    while (i < text.length()) {
      char c = text.charAt(i);
      if (c == MARK || c == PAD || (c >= INDEX_BASE && c < INDEX_BASE + MAX_REFERENCES)) {
        throw new ConfigException(
            List.of(
                new ConfigProblem(
                    new ConfigLocation(file, line, i - lineStart + 1),
                    "",
                    "the file contains a private-use character (U+"
                        + Integer.toHexString(c).toUpperCase(java.util.Locale.ROOT)
                        + "); remove it")));
      }
      boolean literal = c == '$' && text.startsWith("$${", i);
      if ((c == '$' && text.startsWith("${", i)) || literal) {
        int open = i + (literal ? 3 : 2);
        int close = text.indexOf('}', open);
        int nl = text.indexOf('\n', open);
        if (close < 0 || (nl >= 0 && nl < close)) {
          throw new ConfigException(
              List.of(
                  new ConfigProblem(
                      new ConfigLocation(file, line, i - lineStart + 1),
                      "",
                      "'${' is not closed on the same line; write ${NAME} or ${NAME:-default}"
                          + " (or $${ for a literal ${)")));
        }
        String inner = text.substring(open, close);
        int col = i - lineStart + 1;
        if (refs.size() >= MAX_REFERENCES) {
          throw new ConfigException(
              List.of(
                  new ConfigProblem(
                      new ConfigLocation(file, line, col), "", "too many ${...} references")));
        }
        int sep = inner.indexOf(":-");
        String name = literal ? inner : sep < 0 ? inner : inner.substring(0, sep);
        String fallback = literal || sep < 0 ? null : inner.substring(sep + 2);
        if (!literal && !name.matches("[A-Za-z_][A-Za-z0-9_]*")) {
          throw new ConfigException(
              List.of(
                  new ConfigProblem(
                      new ConfigLocation(file, line, col),
                      "",
                      "'${"
                          + inner
                          + "}' is not a variable reference; write ${NAME} or ${NAME:-default}"
                          + " with NAME of letters, digits and '_'")));
        }
        int length = close + 1 - i;
        out.append(MARK).append((char) (INDEX_BASE + refs.size()));
        for (int k = 2; k < length; k++) {
          out.append(PAD);
        }
        refs.add(new Reference(name, fallback, literal, line, col));
        i = close + 1;
        continue;
      }
      if (c == '\n') {
        line++;
        lineStart = i + 1;
      }
      out.append(c);
      i++;
    }
    return out.toString();
  }

  /** Puts the original {@code ${...}} text back, for messages about unparsable text. */
  private static String unmask(String s, List<Reference> refs) {
    if (s.indexOf(MARK) < 0) {
      return s;
    }
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == MARK && i + 1 < s.length()) {
        Reference r = refs.get(s.charAt(i + 1) - INDEX_BASE);
        out.append(
            r.literal
                ? "$${" + r.name + "}"
                : "${" + r.name + (r.fallback == null ? "" : ":-" + r.fallback) + "}");
        i++;
      } else if (c != PAD) {
        out.append(c);
      }
    }
    return out.toString();
  }

  /** Builds the tree from the parser's tokens, recording locations. */
  private static final class Builder {
    private final String file;
    private final JsonParser p;
    private final List<Reference> refs;
    private final Function<String, @Nullable String> env;
    private final Map<String, ConfigLocation> locations;
    private final List<ConfigProblem> problems;

    Builder(
        String file,
        JsonParser p,
        List<Reference> refs,
        Function<String, @Nullable String> env,
        Map<String, ConfigLocation> locations,
        List<ConfigProblem> problems) {
      this.file = file;
      this.p = p;
      this.refs = refs;
      this.env = env;
      this.locations = locations;
      this.problems = problems;
    }

    private ConfigLocation here() {
      JsonLocation at = p.currentTokenLocation();
      return new ConfigLocation(file, Math.max(1, at.getLineNr()), Math.max(1, at.getColumnNr()));
    }

    /** Reads the value at the current token. */
    JsonNode value(String path) throws IOException {
      JsonToken t = p.currentToken();
      locations.putIfAbsent(path, here());
      JsonNodeFactory f = JsonNodeFactory.instance;
      switch (t) {
        case START_OBJECT -> {
          ObjectNode obj = f.objectNode();
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = unmask(p.currentName(), refs);
            String child = path.isEmpty() ? name : path + "." + name;
            ConfigLocation at = here();
            p.nextToken();
            if (obj.has(name)) {
              problems.add(
                  new ConfigProblem(
                      at,
                      child,
                      "is given twice (first at line "
                          + locations.get(child).line()
                          + "); keep one"));
              p.skipChildren();
              continue;
            }
            locations.put(child, at);
            obj.set(name, value(child));
          }
          return obj;
        }
        case START_ARRAY -> {
          ArrayNode arr = f.arrayNode();
          int i = 0;
          while (p.nextToken() != JsonToken.END_ARRAY) {
            arr.add(value(path + "[" + i++ + "]"));
          }
          return arr;
        }
        case VALUE_STRING -> {
          return f.textNode(substitute(p.getText(), path));
        }
        case VALUE_NUMBER_INT -> {
          return f.numberNode(p.getLongValue());
        }
        case VALUE_NUMBER_FLOAT -> {
          return f.numberNode(p.getDecimalValue());
        }
        case VALUE_TRUE -> {
          return f.booleanNode(true);
        }
        case VALUE_FALSE -> {
          return f.booleanNode(false);
        }
        case VALUE_NULL -> {
          return f.nullNode();
        }
        default -> {
          return f.textNode(p.getText());
        }
      }
    }

    private String substitute(String s, String path) {
      if (s.indexOf(MARK) < 0) {
        return s;
      }
      StringBuilder out = new StringBuilder(s.length());
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        if (c == MARK && i + 1 < s.length()) {
          Reference r = refs.get(s.charAt(++i) - INDEX_BASE);
          if (r.literal) {
            out.append("${").append(r.name).append('}');
            continue;
          }
          String v = env.apply(r.name);
          if (v == null || (v.isEmpty() && r.fallback != null)) {
            if (r.fallback == null) {
              problems.add(
                  new ConfigProblem(
                      new ConfigLocation(file, r.line, r.column),
                      path,
                      "environment variable "
                          + r.name
                          + " is not set; export it, or give a default: ${"
                          + r.name
                          + ":-value}"));
              continue;
            }
            v = r.fallback;
          }
          out.append(v);
        } else if (c != PAD) {
          out.append(c);
        }
      }
      return out.toString();
    }
  }
}
