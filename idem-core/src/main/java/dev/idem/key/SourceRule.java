package dev.idem.key;

import dev.idem.DedupKey;
import dev.idem.IdemConfigException;
import dev.idem.KeyDerivationException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/** Explicit keys: one typed part per header or body field, in order. */
final class SourceRule implements KeyRule {
  private static final String SPECS =
      "give a field path (source.id), header(\"X-Id\"), or a list of them; omit dedup.key for the"
          + " default key";

  private final List<KeySource> sources;

  SourceRule(List<KeySource> sources) {
    this.sources = List.copyOf(sources);
  }

  static SourceRule of(List<KeySource> sources) {
    if (sources.isEmpty()) {
      throw new IdemConfigException("dedup.key is an empty list; " + SPECS);
    }
    return new SourceRule(sources);
  }

  /** Reads one spec: {@code header("X-Id")} or a field path. */
  static KeySource source(String spec) {
    String s = spec.strip();
    if (s.isEmpty()) {
      throw new IdemConfigException("dedup.key is blank; " + SPECS);
    }
    if (!s.startsWith("header(")) {
      return new KeySource.Field(FieldPath.parse(s));
    }
    if (!s.endsWith(")")) {
      throw new IdemConfigException(
          "dedup.key '" + spec + "' is not valid: write header(\"Name\"), e.g. header(\"X-Id\")");
    }
    String name = s.substring("header(".length(), s.length() - 1).strip();
    if (name.length() >= 2
        && (name.charAt(0) == '"' || name.charAt(0) == '\'')
        && name.charAt(name.length() - 1) == name.charAt(0)) {
      name = name.substring(1, name.length() - 1);
    }
    return new KeySource.Header(name);
  }

  @Override
  public DedupKey derive(InboundEvent event) {
    int n = sources.size();
    // Per source: a header's value, or where a field's canonical JSON value is in the body.
    @Nullable String[] headers = new String[n];
    int[] starts = new int[n];
    int[] ends = new int[n];
    CanonicalBody read = event.canonicalBody();
    if (read != null) {
      return derive(event, read.bytes(), read.length(), headers, starts, ends);
    }
    @Nullable JsonCanonicalizer body = null;
    try {
      for (int i = 0; i < n; i++) {
        KeySource source = sources.get(i);
        if (source instanceof KeySource.Header h) {
          headers[i] = h.value(event);
        } else {
          FieldPath path = ((KeySource.Field) source).path();
          if (body == null) {
            body = canonicalBody(event, path);
          }
          starts[i] = path.find(body.out, body.outLen);
          ends[i] = FieldPath.valueEnd(body.out, starts[i], body.outLen);
        }
      }
      KeyWriter w = KeyWriter.get().start(n, true);
      for (int i = 0; i < n; i++) {
        if (headers[i] != null) {
          w.text(KeyWriter.HEADER, headers[i]);
        } else {
          w.bytes(KeyWriter.FIELD, body.out, starts[i], ends[i] - starts[i]);
        }
      }
      return w.key();
    } finally {
      if (body != null) {
        body.trim();
      }
    }
  }

  /** Derives the key from a body that was read already: {@code c[0, len)} is canonical. */
  private DedupKey derive(
      InboundEvent event, byte[] c, int len, @Nullable String[] headers, int[] starts, int[] ends) {
    int n = sources.size();
    for (int i = 0; i < n; i++) {
      KeySource source = sources.get(i);
      if (source instanceof KeySource.Header h) {
        headers[i] = h.value(event);
      } else {
        FieldPath path = ((KeySource.Field) source).path();
        starts[i] = path.find(c, len);
        ends[i] = FieldPath.valueEnd(c, starts[i], len);
      }
    }
    KeyWriter w = KeyWriter.get().start(n, true);
    for (int i = 0; i < n; i++) {
      if (headers[i] != null) {
        w.text(KeyWriter.HEADER, headers[i]);
      } else {
        w.bytes(KeyWriter.FIELD, c, starts[i], ends[i] - starts[i]);
      }
    }
    return w.key();
  }

  @Override
  public DedupKey keyOf(List<String> values) {
    int n = checkCount(values.size(), "");
    for (int i = 0; i < n; i++) {
      String value = values.get(i);
      if (value == null || value.isBlank()) {
        throw new KeyDerivationException(
            "blank key: value " + (i + 1) + " for " + sources.get(i).spec() + " is empty");
      }
    }
    byte[] @Nullable [] fields = new byte[n][];
    for (int i = 0; i < n; i++) {
      if (sources.get(i) instanceof KeySource.Field) {
        fields[i] = KeyPart.stringField(values.get(i)).array();
      } else {
        KeyWriter.checkUnicode(values.get(i), "a header key part");
      }
    }
    KeyWriter w = KeyWriter.get().start(n, true);
    for (int i = 0; i < n; i++) {
      if (fields[i] != null) {
        w.bytes(KeyWriter.FIELD, fields[i]);
      } else {
        w.text(KeyWriter.HEADER, values.get(i));
      }
    }
    return w.key();
  }

  @Override
  public DedupKey keyOfJson(String values) {
    int n = sources.size();
    KeyWriter.checkUnicode(values, "the key's values");
    byte[] bytes = values.getBytes(StandardCharsets.UTF_8);
    JsonCanonicalizer c = JsonCanonicalizer.get();
    try {
      try {
        c.canonicalize(bytes, 0, bytes.length);
      } catch (InvalidJsonException e) {
        throw new KeyDerivationException(
            "the key's values are not JSON (" + e.problem() + "); " + jsonValuesHint(), e);
      }
      byte[] o = c.out;
      if (o[0] != '[') {
        throw new KeyDerivationException(
            "the key's values are not a JSON array; " + jsonValuesHint());
      }
      int[] starts = new int[n];
      int[] ends = new int[n];
      int count = 0;
      for (int p = 1; o[p] != ']'; count++) {
        int end = FieldPath.valueEnd(o, p, c.outLen);
        if (count < n) {
          starts[count] = p;
          ends[count] = end;
        }
        p = o[end] == ',' ? end + 1 : end;
      }
      checkCount(count, " (" + jsonValuesHint() + ")");
      @Nullable String[] headers = new String[n];
      for (int i = 0; i < n; i++) {
        String which = "value " + (i + 1) + " for " + sources.get(i).spec();
        byte first = o[starts[i]];
        if (first == 'n') {
          throw new KeyDerivationException(which + " is null; a key needs a value");
        }
        if (first == '"' && CanonicalStrings.isBlank(o, starts[i], ends[i])) {
          throw new KeyDerivationException("blank key: " + which + " is empty");
        }
        if (sources.get(i) instanceof KeySource.Header) {
          if (first != '"') {
            throw new KeyDerivationException(
                which + " must be a JSON string (a header's value is text)");
          }
          headers[i] = CanonicalStrings.decode(o, starts[i] + 1, ends[i] - 1);
        }
      }
      KeyWriter w = KeyWriter.get().start(n, true);
      for (int i = 0; i < n; i++) {
        if (headers[i] != null) {
          w.text(KeyWriter.HEADER, headers[i]);
        } else {
          w.bytes(KeyWriter.FIELD, o, starts[i], ends[i] - starts[i]);
        }
      }
      return w.key();
    } finally {
      c.trim();
    }
  }

  private String jsonValuesHint() {
    return "give a JSON array of "
        + sources.size()
        + (sources.size() == 1 ? " value" : " values")
        + " for "
        + this
        + ", each as it is in the event: a field's string in quotes, a number as a number, e.g."
        + " [\"shop-1\",42]";
  }

  private int checkCount(int count, String hint) {
    int n = sources.size();
    if (count != n) {
      throw new KeyDerivationException(
          "the key rule "
              + this
              + " takes "
              + n
              + (n == 1 ? " value" : " values (a JSON array of them, in order)")
              + ", got "
              + count
              + hint);
    }
    return n;
  }

  /** Reads the body once for all the rule's fields. */
  private static JsonCanonicalizer canonicalBody(InboundEvent event, FieldPath path) {
    byte[] bytes = event.body();
    if (bytes == null || bytes.length == 0) {
      throw new KeyDerivationException(
          "the event has no body, so field "
              + path
              + " cannot be read; send a JSON body with it"
              + " or change dedup.key");
    }
    JsonCanonicalizer c = JsonCanonicalizer.get();
    try {
      c.canonicalize(bytes, 0, bytes.length);
    } catch (NumberOutOfRangeException e) {
      c.trim();
      throw e; // it says what to send
    } catch (InvalidJsonException e) {
      c.trim();
      throw new KeyDerivationException(
          "the body is not JSON ("
              + e.problem()
              + "), so field "
              + path
              + " cannot be read; send JSON or change dedup.key",
          e);
    }
    return c;
  }

  /** Returns the rule as {@code dedup.key} spells it, e.g. {@code [source.id, header("X-Id")]}. */
  @Override
  public String toString() {
    if (sources.size() == 1) {
      return sources.get(0).spec();
    }
    return sources.stream().map(KeySource::spec).collect(Collectors.joining(", ", "[", "]"));
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SourceRule r && r.sources.equals(sources);
  }

  @Override
  public int hashCode() {
    return sources.hashCode();
  }
}
