package dev.idem.key;

import dev.idem.DedupKey;
import dev.idem.KeyDerivationException;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/** A key computed by the user's function, hashed as one text part. */
final class FunctionRule implements KeyRule {
  private final Function<? super InboundEvent, ? extends @Nullable String> key;

  FunctionRule(Function<? super InboundEvent, ? extends @Nullable String> key) {
    this.key = Objects.requireNonNull(key, "key");
  }

  @Override
  public DedupKey derive(InboundEvent event) {
    return textKey(key.apply(event));
  }

  @Override
  public DedupKey keyOf(List<String> values) {
    if (values.size() != 1) {
      throw new KeyDerivationException(
          "a key function's key is one text value, got " + values.size() + " values");
    }
    return textKey(values.get(0));
  }

  private static DedupKey textKey(@Nullable String value) {
    if (value == null) {
      throw new KeyDerivationException(
          "the key function returned null; return the event's identity (e.g. its id), or throw to"
              + " reject the event");
    }
    if (value.isBlank()) {
      throw new KeyDerivationException(
          "blank key: the key function returned an empty or whitespace key; return the event's"
              + " identity (e.g. its id)");
    }
    KeyWriter w = KeyWriter.get().start(1, true);
    w.text(KeyWriter.TEXT, value);
    return w.key();
  }

  @Override
  public String toString() {
    return "KeyRule.of(" + key + ")";
  }
}
