package dev.idem.key;

import dev.idem.IdemConfigException;
import dev.idem.KeyDerivationException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A path to one value in a JSON body, e.g. {@code order.items[0].sku}: what {@link
 * KeyRule#field(String)} keys on.
 *
 * <h2>Syntax</h2>
 *
 * <pre>
 * path     = [ prefix ] first *( "." name / bracket )
 * prefix   = ( "source" / "body" ) "."         ; or either word right before a "["
 * first    = name / bracket
 * bracket  = "[" ( index / quoted ) "]"
 * name     = 1*( any character except . [ ] " \ whitespace and controls )
 * index    = "0" / ( "1"-"9" *digit )            ; at most 2147483647
 * quoted   = '"' *( any character except " and \ / '\"' / '\\' ) '"'
 * </pre>
 *
 * <ul>
 *   <li>A leading {@code source.} or {@code body.} means the body, so {@code id}, {@code source.id}
 *       and {@code body.id} are one path. To name a top-level member that is itself called {@code
 *       source} or {@code body}, write {@code source.source} or {@code ["source"]}.
 *   <li>{@code [n]} indexes an array from 0; {@code ["a.b"]} names a member whose name has a dot, a
 *       bracket, a quote, whitespace, or is empty ({@code [""]}).
 *   <li>Names match member names exactly (case-sensitive, no Unicode normalisation).
 * </ul>
 *
 * <h2>Extraction</h2>
 *
 * {@link #extract(byte[])} reads the body in one streaming pass, the same I-JSON validation the
 * default key does (so a body with duplicate member names, a lone surrogate or too deep nesting is
 * rejected whatever path is asked for), then walks the path, skipping subtrees that do not match.
 * No tree of objects is built. {@link #extractJson(byte[])} returns the value as canonical JSON
 * (what a field key hashes, so it keeps the value's JSON type and a number's exact value); {@link
 * #extract(byte[])} as text for people.
 *
 * <p>Immutable and thread-safe; {@code equals} compares the path, not its spelling ({@code
 * source.id} equals {@code id}).
 */
public final class FieldPath {
  private static final String SYNTAX =
      "a path is names separated by '.', with [n] to index an array and [\"name\"] for names"
          + " with special characters, e.g. source.order.items[0].id";

  /** Per segment: the member name, or null for an array index. */
  private final @Nullable String[] names;

  /** Per segment: the member name's canonical JSON string bytes, or null for an index. */
  private final byte[][] canonicalNames;

  /** Per segment: the array index, or -1 for a member name. */
  private final int[] indexes;

  private final String text;

  private FieldPath(List<Object> segments) {
    int n = segments.size();
    names = new String[n];
    canonicalNames = new byte[n][];
    indexes = new int[n];
    for (int i = 0; i < n; i++) {
      Object s = segments.get(i);
      if (s instanceof String name) {
        names[i] = name;
        canonicalNames[i] = CanonicalStrings.encode(name);
        indexes[i] = -1;
      } else {
        indexes[i] = (Integer) s;
      }
    }
    text = render(n);
  }

  /**
   * Parses a path.
   *
   * @param path e.g. {@code source.order.id}, {@code items[0].sku}, {@code ["a.b"].c}
   * @return the path
   * @throws IdemConfigException if the path is not valid; the message gives the position and what
   *     is allowed there
   */
  public static FieldPath parse(String path) {
    Objects.requireNonNull(path, "path");
    List<Object> segments = new ArrayList<>();
    int i = 0;
    int n = path.length();
    if (n == 0) {
      throw syntax(path, 0, "the path is empty");
    }
    for (String prefix : new String[] {"source", "body"}) {
      if (path.startsWith(prefix)) {
        int after = prefix.length();
        if (after == n) {
          throw new IdemConfigException(
              "field path '"
                  + path
                  + "' is the whole body, not a field: name a field (e.g. "
                  + prefix
                  + ".id), or omit dedup.key to key on the whole body (the default key)");
        }
        if (path.charAt(after) == '.') {
          i = after + 1;
        } else if (path.charAt(after) == '[') {
          i = after;
        }
        break;
      }
    }
    boolean first = true;
    while (first || i < n) {
      if (i < n && path.charAt(i) == '[') {
        i = bracket(path, i, segments);
      } else if (first) {
        i = name(path, i, segments);
      } else if (path.charAt(i) == '.') {
        i = name(path, i + 1, segments);
      } else {
        throw syntax(path, i, "expected '.' or '[' after a name or index");
      }
      first = false;
    }
    return new FieldPath(segments);
  }

  private static int name(String path, int i, List<Object> segments) {
    int start = i;
    while (i < path.length() && bare(path.charAt(i))) {
      i++;
    }
    if (i == start) {
      throw syntax(
          path,
          i,
          "expected a field name (or [n], or [\"name\"] for names with special characters)");
    }
    segments.add(checked(path, start, path.substring(start, i)));
    return i;
  }

  private static int bracket(String path, int i, List<Object> segments) {
    int open = i;
    i++;
    if (i < path.length() && path.charAt(i) == '"') {
      StringBuilder name = new StringBuilder();
      i++;
      while (true) {
        if (i >= path.length()) {
          throw syntax(path, open, "unterminated quoted name");
        }
        char c = path.charAt(i);
        if (c == '"') {
          i++;
          break;
        }
        if (c == '\\') {
          char next = i + 1 < path.length() ? path.charAt(i + 1) : 0;
          if (next != '"' && next != '\\') {
            throw syntax(path, i, "a quoted name allows only the escapes \\\" and \\\\");
          }
          name.append(next);
          i += 2;
        } else {
          name.append(c);
          i++;
        }
      }
      segments.add(checked(path, open, name.toString()));
    } else {
      int start = i;
      while (i < path.length() && path.charAt(i) >= '0' && path.charAt(i) <= '9') {
        i++;
      }
      if (i == start) {
        throw syntax(
            path, start, "expected an array index (0, 1, ...) or a \"quoted name\" after '['");
      }
      if (path.charAt(start) == '0' && i - start > 1) {
        throw syntax(path, start, "an array index has no leading zeros");
      }
      long index = i - start > 10 ? Long.MAX_VALUE : Long.parseLong(path.substring(start, i));
      if (index > Integer.MAX_VALUE) {
        throw syntax(path, start, "an array index is at most " + Integer.MAX_VALUE);
      }
      segments.add((int) index);
    }
    if (i >= path.length() || path.charAt(i) != ']') {
      throw syntax(path, i, "expected ']'");
    }
    return i + 1;
  }

  private static String checked(String path, int at, String name) {
    try {
      CanonicalStrings.encode(name);
    } catch (IllegalArgumentException e) {
      throw syntax(path, at, "a name has a lone surrogate, which no JSON member name can have");
    }
    return name;
  }

  private static boolean bare(char c) {
    return c != '.'
        && c != '['
        && c != ']'
        && c != '"'
        && c != '\\'
        && !Character.isWhitespace(c)
        && !Character.isISOControl(c)
        && !Character.isSpaceChar(c);
  }

  private static IdemConfigException syntax(String path, int at, String problem) {
    return new IdemConfigException(
        "field path '"
            + path
            + "' is not valid at character "
            + (at + 1)
            + ": "
            + problem
            + "; "
            + SYNTAX);
  }

  /**
   * Returns the value at this path in a JSON body, as text for people (a log line, an ordering
   * label): a string as its characters, anything else as its canonical JSON. The text drops the
   * JSON type (the string {@code "1"} and the number {@code 1} both give {@code 1}); keys use
   * {@link #extractJson(byte[])}, which keeps it.
   *
   * @param json the UTF-8 JSON body
   * @return the value: a string's characters, a number in canonical form, {@code true}/{@code
   *     false}, or an object's or array's canonical JSON; never blank
   * @throws InvalidJsonException if the body is not I-JSON
   * @throws KeyDerivationException if the value is missing (naming the path and where it stops),
   *     {@code null}, or a blank string ("blank key")
   */
  public String extract(byte[] json) {
    JsonCanonicalizer c = JsonCanonicalizer.get();
    try {
      c.canonicalize(json, 0, json.length);
      int p = find(c.out, c.outLen);
      int end = valueEnd(c.out, p, c.outLen);
      return c.out[p] == '"'
          ? CanonicalStrings.decode(c.out, p + 1, end - 1)
          : new String(c.out, p, end - p, StandardCharsets.UTF_8);
    } finally {
      c.trim();
    }
  }

  /**
   * Returns the value at this path in a body that was read already, as text for people: what {@link
   * #extract(byte[])} returns for the same body, without reading it again.
   *
   * @param body the read body
   * @return the value's text; never blank
   * @throws KeyDerivationException if the value is missing, {@code null}, or a blank string
   */
  public String extract(CanonicalBody body) {
    byte[] c = body.bytes();
    int p = find(c, c.length);
    int end = valueEnd(c, p, c.length);
    return c[p] == '"'
        ? CanonicalStrings.decode(c, p + 1, end - 1)
        : new String(c, p, end - p, StandardCharsets.UTF_8);
  }

  /**
   * Returns the value at this path in a body that was read already, as canonical JSON: what {@link
   * #extractJson(byte[])} returns for the same body, without reading it again.
   *
   * @param body the read body
   * @return the value's canonical UTF-8 JSON (a new array)
   * @throws KeyDerivationException if the value is missing, {@code null}, or a blank string
   */
  public byte[] extractJson(CanonicalBody body) {
    byte[] c = body.bytes();
    int p = find(c, c.length);
    return Arrays.copyOfRange(c, p, valueEnd(c, p, c.length));
  }

  /**
   * Returns the value at this path in a JSON body as canonical JSON ({@link CanonicalJson}), the
   * payload of the {@link KeyPart.Field} a field key hashes: a string with its quotes, a number by
   * its exact value ({@code 1.0}, {@code 1e0} and {@code 1} all give {@code 1}), {@code true} or
   * {@code false}, an object or array as its canonical JSON. So values of different JSON types
   * never read alike.
   *
   * @param json the UTF-8 JSON body
   * @return the value's canonical UTF-8 JSON (a new array)
   * @throws InvalidJsonException if the body is not I-JSON
   * @throws KeyDerivationException if the value is missing, {@code null}, or a blank string
   */
  public byte[] extractJson(byte[] json) {
    JsonCanonicalizer c = JsonCanonicalizer.get();
    try {
      c.canonicalize(json, 0, json.length);
      int p = find(c.out, c.outLen);
      return Arrays.copyOfRange(c.out, p, valueEnd(c.out, p, c.outLen));
    } finally {
      c.trim();
    }
  }

  /**
   * Finds the value in canonical JSON {@code c[0, len)} (no whitespace, well-formed) and returns
   * where it starts; {@link #valueEnd} says where it ends.
   *
   * @throws KeyDerivationException if the value is missing, {@code null}, or a blank string
   */
  int find(byte[] c, int len) {
    int p = 0;
    for (int s = 0; s < indexes.length; s++) {
      byte b = c[p];
      if (indexes[s] < 0) {
        if (b != '{') {
          throw missing(s, "is " + kind(b) + ", not an object");
        }
        p = member(c, len, p + 1, s);
      } else {
        if (b != '[') {
          throw missing(s, "is " + kind(b) + ", not an array");
        }
        p = element(c, len, p + 1, s);
      }
    }
    byte b = c[p];
    if (b == 'n') {
      throw new KeyDerivationException(
          "field "
              + text
              + " is null in the body; a key needs a value: send it or change dedup.key");
    }
    if (b == '"' && CanonicalStrings.isBlank(c, p, skipString(c, p))) {
      throw new KeyDerivationException(
          "blank key: field "
              + text
              + " is blank in the body; a key must not be empty or whitespace: send a value or"
              + " change dedup.key");
    }
    return p;
  }

  /** Returns the index after the canonical JSON value that starts at {@code c[p]}. */
  static int valueEnd(byte[] c, int p, int len) {
    return skipValue(c, p, len);
  }

  /** Returns the start of the value of member {@code names[s]} in the object whose body is at p. */
  private int member(byte[] c, int len, int p, int s) {
    byte[] want = canonicalNames[s];
    while (c[p] != '}') {
      int nameStart = p + 1;
      int nameEnd = skipString(c, p) - 1;
      p = nameEnd + 2; // the closing quote and ':'
      if (nameEnd - nameStart == want.length
          && Arrays.equals(c, nameStart, nameEnd, want, 0, want.length)) {
        return p; // names are unique: the canonicalizer rejects duplicates
      }
      p = skipValue(c, p, len);
      if (c[p] == ',') {
        p++;
      }
    }
    throw missing(s, "has no member \"" + CanonicalStrings.abbreviate(names[s]) + "\"");
  }

  /** Returns the start of element {@code indexes[s]} of the array whose body is at p. */
  private int element(byte[] c, int len, int p, int s) {
    int want = indexes[s];
    for (int i = 0; ; i++) {
      if (c[p] == ']') {
        throw missing(s, "has " + i + (i == 1 ? " element" : " elements"));
      }
      if (i == want) {
        return p;
      }
      p = skipValue(c, p, len);
      if (c[p] == ',') {
        p++;
      }
    }
  }

  private static int skipValue(byte[] c, int p, int len) {
    byte b = c[p];
    if (b == '"') {
      return skipString(c, p);
    }
    if (b == '{' || b == '[') {
      int depth = 0;
      do {
        byte x = c[p];
        if (x == '"') {
          p = skipString(c, p);
        } else {
          if (x == '{' || x == '[') {
            depth++;
          } else if (x == '}' || x == ']') {
            depth--;
          }
          p++;
        }
      } while (depth > 0);
      return p;
    }
    while (p < len && c[p] != ',' && c[p] != '}' && c[p] != ']') {
      p++;
    }
    return p;
  }

  /** Returns the index after the closing quote of the canonical string starting at p. */
  private static int skipString(byte[] c, int p) {
    p++;
    while (c[p] != '"') {
      p += c[p] == '\\' ? 2 : 1;
    }
    return p + 1;
  }

  private KeyDerivationException missing(int segment, String why) {
    String where = segment == 0 ? "the body" : render(segment);
    return new KeyDerivationException(
        "no field "
            + text
            + " in the body ("
            + where
            + " "
            + why
            + "); send it or change dedup.key");
  }

  private static String kind(byte b) {
    return switch (b) {
      case '{' -> "an object";
      case '[' -> "an array";
      case '"' -> "a string";
      case 't', 'f' -> "a boolean";
      case 'n' -> "null";
      default -> "a number";
    };
  }

  private String render(int count) {
    StringBuilder sb = new StringBuilder();
    for (int s = 0; s < count; s++) {
      String name = names[s];
      if (name == null) {
        sb.append('[').append(indexes[s]).append(']');
      } else if (!name.isEmpty()
          && name.chars().allMatch(ch -> bare((char) ch))
          && !(s == 0 && (name.equals("source") || name.equals("body")))) {
        if (s > 0) {
          sb.append('.');
        }
        sb.append(name);
      } else {
        sb.append("[\"").append(name.replace("\\", "\\\\").replace("\"", "\\\"")).append("\"]");
      }
    }
    return sb.toString();
  }

  /**
   * Returns the path in its normal spelling, without a {@code source.} or {@code body.} prefix
   * (e.g. {@code order.items[0].id}); {@link #parse(String)} reads it back to an equal path.
   */
  @Override
  public String toString() {
    return text;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof FieldPath p && p.text.equals(text);
  }

  @Override
  public int hashCode() {
    return text.hashCode();
  }
}
