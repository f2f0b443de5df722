package dev.idem.server.pipeline;

import dev.idem.DedupKey;
import dev.idem.KeyDerivationException;

/**
 * How a pipeline turns an event into its dedup key, and an operator's raw key value into the same
 * key (for the admin API and the CLI).
 */
public interface EventKeys {

  /**
   * Derives an event's key.
   *
   * @param request the event
   * @return its key
   * @throws KeyDerivationException if the event has no usable key (missing field, blank value,
   *     missing header or delivery id)
   */
  DedupKey derive(InboundRequest request);

  /**
   * Turns a raw key value, as an operator writes it, into the key an event with that value gets:
   * the value itself for a one-part key, the JSON array of the parts for a composite key.
   *
   * @param raw the raw value
   * @return the key
   * @throws KeyDerivationException if the value does not fit the rule (e.g. not a JSON array of the
   *     right length for a composite key, or a rule with no raw form such as the body-hash default)
   */
  DedupKey fromRaw(String raw);

  /**
   * Describes the rule for logs and the CLI, e.g. {@code field source.id}.
   *
   * @return the description
   */
  String describe();
}
