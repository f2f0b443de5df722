package dev.idem.server.auth;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JOSEObjectType;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.KeySourceException;
import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.KeyType;
import com.nimbusds.jose.jwk.source.JWKSource;
import com.nimbusds.jose.jwk.source.JWKSourceBuilder;
import com.nimbusds.jose.jwk.source.RateLimitReachedException;
import com.nimbusds.jose.proc.BadJOSEException;
import com.nimbusds.jose.proc.DefaultJOSEObjectTypeVerifier;
import com.nimbusds.jose.proc.JWSKeySelector;
import com.nimbusds.jose.proc.JWSVerificationKeySelector;
import com.nimbusds.jose.proc.SecurityContext;
import com.nimbusds.jose.util.DefaultResourceRetriever;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.proc.DefaultJWTClaimsVerifier;
import com.nimbusds.jwt.proc.DefaultJWTProcessor;
import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import dev.idem.key.Principal;
import dev.idem.server.auth.CallerException.Reason;
import java.net.MalformedURLException;
import java.nio.charset.StandardCharsets;
import java.security.Key;
import java.text.ParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * Verifies {@code Authorization: Bearer <JWT>} with nimbus-jose-jwt and returns the token's
 * principal chain.
 *
 * <ol>
 *   <li>Take the token from {@code Authorization: Bearer}; none is {@code 401 invalid_token}.
 *   <li>Verify the signature with a key of the configured source, for an algorithm of the
 *       allow-list only ({@code alg: none} and any algorithm outside the list are refused, so an
 *       RSA public key is never used as an HMAC secret). A JWKS is cached, and fetched again when a
 *       token names an unknown {@code kid} (at most twice per 30 seconds).
 *   <li>Check the claims: {@code sub} and {@code exp} present, {@code exp} and {@code nbf} within
 *       the leeway, {@code iss} and {@code aud} equal to the configured values when set.
 *   <li>Build the chain: ({@code iss}, {@code sub}), then each nested RFC 8693 {@code act} claim's
 *       ({@code iss}, {@code sub}), outermost first. An {@code act} without {@code iss} inherits
 *       the token's {@code iss} (the issuer vouches for every actor it names). More nested {@code
 *       act} claims than {@code max_delegation_depth} is {@code 403 delegation_too_deep}.
 * </ol>
 *
 * <p>A refusal's detail goes to the log (INFO; WARN when the keys cannot be fetched), at most one
 * line per {@link CallerRefusals#LOG_INTERVAL_SECONDS} seconds per source with the number of
 * refusals left out.
 */
public final class JwtCallers implements CallerAuthenticator {
  private static final int JWKS_TIMEOUT_MILLIS = 2_000;
  private static final int JWKS_SIZE_LIMIT = 256 * 1024;
  private static final long JWKS_CACHE_MILLIS = 5 * 60_000;
  private static final long JWKS_REFRESH_WAIT_MILLIS = 5_000;
  private static final String BEARER = "bearer ";

  private final String source;
  private final JwtSettings settings;
  private final DefaultJWTProcessor<SecurityContext> processor;
  private final CallerRefusals refusals;

  private JwtCallers(String source, JwtSettings settings, TimeSource time) {
    this.source = source;
    this.settings = settings;
    this.refusals = new CallerRefusals(source, time);
    DefaultJWTProcessor<SecurityContext> p = new DefaultJWTProcessor<>();
    p.setJWSTypeVerifier(
        new DefaultJOSEObjectTypeVerifier<>(
            JOSEObjectType.JWT, new JOSEObjectType("at+jwt"), null));
    p.setJWSKeySelector(keySelector(settings));
    DefaultJWTClaimsVerifier<SecurityContext> claims =
        new DefaultJWTClaimsVerifier<>(
            settings.audience() == null ? null : Set.of(settings.audience()),
            settings.issuer() == null
                ? new JWTClaimsSet.Builder().build()
                : new JWTClaimsSet.Builder().issuer(settings.issuer()).build(),
            Set.of("sub", "exp"),
            null);
    claims.setMaxClockSkew((int) settings.leeway().toSeconds());
    p.setJWTClaimsSetVerifier(claims);
    this.processor = p;
  }

  /**
   * Makes the authenticator of one webhook source.
   *
   * @param source the pipeline id, for the log
   * @param settings the settings
   * @param time the clock of the log's rate limit
   * @return the authenticator
   * @throws IdemConfigException if the key source cannot be set up
   */
  public static JwtCallers create(String source, JwtSettings settings, TimeSource time) {
    return new JwtCallers(
        Objects.requireNonNull(source, "source"),
        Objects.requireNonNull(settings, "settings"),
        Objects.requireNonNull(time, "time"));
  }

  private static JWSKeySelector<SecurityContext> keySelector(JwtSettings s) {
    Set<JWSAlgorithm> allowed = Set.copyOf(s.jwsAlgorithms());
    if (s.jwksUrl() != null) {
      JWKSource<SecurityContext> jwks;
      try {
        jwks =
            JWKSourceBuilder.<SecurityContext>create(
                    s.jwksUrl().toURL(),
                    new DefaultResourceRetriever(
                        JWKS_TIMEOUT_MILLIS, JWKS_TIMEOUT_MILLIS, JWKS_SIZE_LIMIT))
                // A request waits at most this long for another request's fetch.
                .cache(JWKS_CACHE_MILLIS, JWKS_REFRESH_WAIT_MILLIS)
                .build();
      } catch (MalformedURLException | IllegalArgumentException e) {
        throw new IdemConfigException("jwks_url: '" + s.jwksUrl() + "' is not a URL");
      }
      return new JWSVerificationKeySelector<>(allowed, jwks);
    }
    Key key;
    if (s.secret() != null) {
      key = new SecretKeySpec(s.secret().getBytes(StandardCharsets.UTF_8), "HmacSHA256");
    } else {
      JWK jwk = JwtSettings.readPublicKey(Objects.requireNonNull(s.publicKey()));
      try {
        key =
            jwk.getKeyType().equals(KeyType.EC)
                ? jwk.toECKey().toPublicKey()
                : jwk.toRSAKey().toPublicKey();
      } catch (JOSEException e) {
        throw new IdemConfigException(
            "public_key: " + s.publicKey() + " cannot be used (" + e.getMessage() + ")");
      }
    }
    // One configured key, whatever kid the token names; only for an allowed algorithm.
    List<Key> keys = List.of(key);
    return (header, context) -> allowed.contains(header.getAlgorithm()) ? keys : List.of();
  }

  @Override
  public List<Principal> principals(Function<String, @Nullable String> headers) {
    try {
      return verify(headers.apply("Authorization"));
    } catch (CallerException e) {
      logRefusal(e);
      throw e;
    }
  }

  private List<Principal> verify(@Nullable String authorization) {
    if (authorization == null || authorization.isBlank()) {
      throw new CallerException(Reason.INVALID_TOKEN, "no Authorization header");
    }
    String value = authorization.strip();
    if (value.length() <= BEARER.length()
        || !value.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
      throw new CallerException(
          Reason.INVALID_TOKEN, "the Authorization header is not 'Bearer <token>'");
    }
    String token = value.substring(BEARER.length()).strip();
    JWTClaimsSet claims;
    try {
      claims = processor.process(token, null);
    } catch (RateLimitReachedException e) {
      throw new CallerException(
          Reason.INVALID_TOKEN, "unknown kid; the JWKS was fetched again too recently");
    } catch (KeySourceException e) {
      throw new CallerException(Reason.KEYS_UNAVAILABLE, "JWKS: " + e.getMessage());
    } catch (ParseException | BadJOSEException | JOSEException e) {
      throw new CallerException(Reason.INVALID_TOKEN, e.getMessage());
    }
    return chain(claims, settings.maxDelegationDepth());
  }

  /**
   * Returns a verified token's principal chain.
   *
   * @param claims the verified claims
   * @param maxDepth the most nested {@code act} claims accepted
   * @return ({@code iss}, {@code sub}), then each {@code act}'s, outermost first
   * @throws CallerException if a subject is missing or the chain is deeper than {@code maxDepth}
   */
  static List<Principal> chain(JWTClaimsSet claims, int maxDepth) {
    String issuer = claims.getIssuer() == null ? "" : claims.getIssuer();
    List<Principal> chain = new ArrayList<>();
    chain.add(new Principal(issuer, subject(claims.getClaim("sub"), "sub")));
    Object act = claims.getClaim("act");
    while (act != null) {
      if (!(act instanceof Map<?, ?> actor)) {
        throw new CallerException(Reason.INVALID_TOKEN, "an act claim is not a JSON object");
      }
      if (chain.size() > maxDepth) {
        throw new CallerException(
            Reason.DELEGATION_TOO_DEEP,
            "more than " + maxDepth + " nested act claims (max_delegation_depth)");
      }
      Object actIssuer = actor.get("iss");
      if (actIssuer != null && !(actIssuer instanceof String)) {
        throw new CallerException(Reason.INVALID_TOKEN, "an act claim's iss is not a string");
      }
      chain.add(
          new Principal(
              actIssuer == null ? issuer : (String) actIssuer,
              subject(actor.get("sub"), "act.sub")));
      act = actor.get("act");
    }
    return List.copyOf(chain);
  }

  /**
   * Reads one claim of the request's bearer token <em>without verifying it</em>: only for a request
   * whose token this source's {@link JwtCallers} verified already (the pipeline authenticates the
   * caller before it derives the key, so the tenant key reads the token that was verified).
   *
   * @param headers the request's headers
   * @param name the claim name
   * @return the claim's value as text (a string as is, a whole number in decimal), or null if the
   *     token has no such claim
   * @throws dev.idem.KeyDerivationException if there is no parsable bearer token or the claim is
   *     neither a string nor a whole number
   */
  public static @Nullable String claim(Function<String, @Nullable String> headers, String name) {
    String authorization = headers.apply("Authorization");
    String value = authorization == null ? "" : authorization.strip();
    if (value.length() <= BEARER.length()
        || !value.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
      throw new dev.idem.KeyDerivationException(
          "no bearer token to read claim \"" + name + "\" from");
    }
    Object claim;
    try {
      claim =
          com.nimbusds.jwt.JWTParser.parse(value.substring(BEARER.length()).strip())
              .getJWTClaimsSet()
              .getClaim(name);
    } catch (ParseException e) {
      throw new dev.idem.KeyDerivationException("the bearer token does not parse");
    }
    if (claim == null) {
      return null;
    }
    if (claim instanceof String s) {
      return s;
    }
    if (claim instanceof Long || claim instanceof Integer) {
      return claim.toString();
    }
    throw new dev.idem.KeyDerivationException(
        "the token's claim \"" + name + "\" is not a string or a whole number");
  }

  private static String subject(@Nullable Object sub, String claim) {
    if (!(sub instanceof String s) || s.isBlank()) {
      throw new CallerException(Reason.INVALID_TOKEN, claim + " is missing or not a text");
    }
    return s;
  }

  private void logRefusal(CallerException e) {
    refusals.log(e);
  }
}
