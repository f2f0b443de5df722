package dev.idem.server.signature;

import dev.idem.IdemConfigException;
import java.util.Locale;

/** The webhook signature schemes Idem verifies; the YAML names are the lower-case constants. */
public enum SignatureScheme {
  /**
   * Stripe: {@code Stripe-Signature: t=<unix>,v1=<hex hmac of "t.body">}; delivery id = body {@code
   * id}.
   */
  STRIPE,
  /**
   * GitHub: {@code X-Hub-Signature-256: sha256=<hex hmac of body>}; delivery id = {@code
   * X-GitHub-Delivery}; a form delivery's event is its {@code payload} field.
   */
  GITHUB,
  /**
   * Shopify: {@code X-Shopify-Hmac-Sha256} (or {@code shopify-hmac-sha256}): {@code <base64 hmac of
   * body>}; delivery id = {@code X-Shopify-Webhook-Id} (or {@code shopify-webhook-id}).
   */
  SHOPIFY,
  /**
   * Standard Webhooks: {@code webhook-id}, {@code webhook-timestamp}, {@code webhook-signature:
   * v1,<base64 hmac of "id.timestamp.body">} (Svix: the same as {@code svix-id}, {@code
   * svix-timestamp}, {@code svix-signature}); delivery id = {@code webhook-id} (or {@code
   * svix-id}).
   */
  STANDARD;

  /**
   * Parses the YAML name.
   *
   * @param name {@code stripe}, {@code github}, {@code shopify} or {@code standard}
   * @return the scheme
   * @throws IdemConfigException naming the allowed values
   */
  public static SignatureScheme fromConfig(String name) {
    for (SignatureScheme s : values()) {
      if (s.configName().equals(name)) {
        return s;
      }
    }
    throw new IdemConfigException(
        "signature scheme '"
            + name
            + "' is not known; use one of: stripe, github, shopify, standard");
  }

  /**
   * Returns the YAML name.
   *
   * @return the lower-case name
   */
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
