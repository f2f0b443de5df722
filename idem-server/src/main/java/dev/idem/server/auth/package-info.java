/**
 * Caller authentication of webhook sources: an {@code Authorization: Bearer} JWT verified against a
 * JWKS endpoint, a PEM public key or a shared secret, with an algorithm allow-list, {@code
 * exp}/{@code nbf}/{@code iss}/{@code aud} checks, and the principal chain (the token's {@code
 * iss}/{@code sub}, then each nested RFC 8693 {@code act} claim) that feeds the default key.
 */
@NullMarked
package dev.idem.server.auth;

import org.jspecify.annotations.NullMarked;
