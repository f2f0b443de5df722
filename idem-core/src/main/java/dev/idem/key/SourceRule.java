package dev.idem.key;

import dev.idem.DedupKey;
import dev.idem.IdemConfigException;
import dev.idem.KeyDerivationException;
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
    String[] values = new String[n];
    @Nullable JsonCanonicalizer body = null;
    try {
      for (int i = 0; i < n; i++) {
        KeySource source = sources.get(i);
        if (source instanceof KeySource.Header h) {
          values[i] = h.value(event);
        } else {
          FieldPath path = ((KeySource.Field) source).path();
          if (body == null) {
            body = canonicalBody(event, path);
          }
          values[i] = path.find(body.out, body.outLen);
        }
      }
    } finally {
      if (body != null) {
        body.trim();
      }
    }
    KeyWriter w = KeyWriter.get().start(n, true);
    for (int i = 0; i < n; i++) {
      w.text(sources.get(i).tag(), values[i]);
    }
    return w.key();
  }

  @Override
  public DedupKey keyOf(List<String> values) {
    int n = sources.size();
    if (values.size() != n) {
      throw new KeyDerivationException(
          "the key rule "
              + this
              + " takes "
              + n
              + (n == 1 ? " value" : " values (a JSON array of them, in order)")
              + ", got "
              + values.size());
    }
    for (int i = 0; i < n; i++) {
      String value = values.get(i);
      if (value == null || value.isBlank()) {
        throw new KeyDerivationException(
            "blank key: value " + (i + 1) + " for " + sources.get(i).spec() + " is empty");
      }
    }
    KeyWriter w = KeyWriter.get().start(n, true);
    for (int i = 0; i < n; i++) {
      w.text(sources.get(i).tag(), values.get(i));
    }
    return w.key();
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
