/**
 * Webhook signature verification (Stripe, GitHub, Shopify, Standard Webhooks): HMAC-SHA256 over the
 * raw body, constant-time comparison, timestamp tolerance against replays, and each provider's
 * delivery id for the default key.
 */
@NullMarked
package dev.idem.server.signature;

import org.jspecify.annotations.NullMarked;
