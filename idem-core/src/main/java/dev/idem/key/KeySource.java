package dev.idem.key;

import dev.idem.IdemConfigException;
import dev.idem.KeyDerivationException;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/** One component of an explicit key rule: where its value comes from, and its part type. */
sealed interface KeySource {
  /** The {@link KeyWriter} tag of the parts this source makes. */
  int tag();

  /** The spec that {@link KeyRule#parse(String)} reads back to this source. */
  String spec();

  /** A header's value: {@code header("X-Id")}. */
  record Header(String name) implements KeySource {
    public Header {
      Objects.requireNonNull(name, "name");
      if (name.isEmpty() || !name.chars().allMatch(Header::tchar)) {
        throw new IdemConfigException(
            "header name '"
                + name
                + "' is not valid: use the header's name, e.g. header(\"X-Message-Id\") (letters,"
                + " digits and !#$%&'*+-.^_`|~)");
      }
    }

    private static boolean tchar(int c) {
      return (c >= 'a' && c <= 'z')
          || (c >= 'A' && c <= 'Z')
          || (c >= '0' && c <= '9')
          || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
    }

    @Override
    public int tag() {
      return KeyWriter.HEADER;
    }

    @Override
    public String spec() {
      return "header(\"" + name + "\")";
    }

    String value(InboundEvent event) {
      @Nullable String value = event.header(name);
      if (value == null) {
        throw new KeyDerivationException(
            "no header " + name + " in the event; send it or change dedup.key");
      }
      if (value.isBlank()) {
        throw new KeyDerivationException(
            "blank key: header "
                + name
                + " is blank; a key must not be empty or whitespace: send a value or change"
                + " dedup.key");
      }
      return value;
    }
  }

  /** A body field's value: {@code source.order.id}. */
  record Field(FieldPath path) implements KeySource {
    public Field {
      Objects.requireNonNull(path, "path");
    }

    @Override
    public int tag() {
      return KeyWriter.FIELD;
    }

    @Override
    public String spec() {
      return path.toString();
    }
  }
}
