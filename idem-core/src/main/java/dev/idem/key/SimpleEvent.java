package dev.idem.key;

import java.util.List;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/** The {@link InboundEvent} that {@link InboundEvent.Builder} builds. */
final class SimpleEvent implements InboundEvent {
  private final byte @Nullable [] body;
  private final TreeMap<String, String> headers;
  private final List<Principal> chain;

  SimpleEvent(byte @Nullable [] body, TreeMap<String, String> headers, List<Principal> chain) {
    this.body = body;
    this.headers = headers;
    this.chain = chain;
  }

  @Override
  public byte @Nullable [] body() {
    return body;
  }

  @Override
  public @Nullable String header(String name) {
    return headers.get(name);
  }

  @Override
  public List<Principal> principalChain() {
    return chain;
  }

  @Override
  public String toString() {
    return "InboundEvent[body="
        + (body == null ? "none" : body.length + " bytes")
        + ", headers="
        + headers.keySet()
        + ", principalChain="
        + chain
        + "]";
  }
}
