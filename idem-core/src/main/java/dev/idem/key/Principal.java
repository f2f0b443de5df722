package dev.idem.key;

import java.util.Objects;

/**
 * One link of a caller's identity: who vouched for it ({@code issuer}, e.g. a token issuer URL) and
 * whom it names ({@code subject}). The default key includes every link of the event's principal
 * chain, so two callers, or two delegates acting for the same subject, never dedupe each other.
 *
 * @param issuer the issuer; may be empty where a system has a single issuer
 * @param subject the subject; not empty
 */
public record Principal(String issuer, String subject) {
  /**
   * Validates the fields.
   *
   * @throws IllegalArgumentException if the subject is empty (an anonymous event has an empty
   *     principal chain, not an empty subject)
   */
  public Principal {
    Objects.requireNonNull(issuer, "issuer");
    Objects.requireNonNull(subject, "subject");
    if (subject.isEmpty()) {
      throw new IllegalArgumentException(
          "a principal's subject must not be empty; use an empty principal chain for anonymous"
              + " events");
    }
  }
}
