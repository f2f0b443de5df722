package dev.idem.server;

import dev.idem.IdemException;
import dev.idem.KeyDerivationException;
import dev.idem.key.KeyRule;
import dev.idem.ordering.OrderingGate;
import dev.idem.ordering.Permit;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.OrderingStep;
import org.jspecify.annotations.Nullable;

/**
 * The ordering step on a local {@link OrderingGate}: the ordering key is the digest of the {@code
 * ordering.key} rule's value, so composite and header rules work as for dedup keys.
 */
final class GateOrdering implements OrderingStep {
  private final KeyRule rule;
  private final OrderingGate gate;

  GateOrdering(KeyRule rule, OrderingGate gate) {
    this.rule = rule;
    this.gate = gate;
  }

  @Override
  public @Nullable Turn enter(InboundRequest request) {
    String key;
    try {
      key = rule.derive(request).toHex();
    } catch (KeyDerivationException e) {
      return null; // no ordering key: not ordered with any other event
    }
    Permit permit;
    try {
      permit = gate.acquire(key);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IdemException("interrupted while waiting for the ordering key's turn", e);
    }
    return new Turn() {
      @Override
      public String key() {
        return key;
      }

      @Override
      public void close() {
        permit.close();
      }
    };
  }
}
