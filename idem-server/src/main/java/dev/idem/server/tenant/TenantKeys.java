package dev.idem.server.tenant;

import dev.idem.DedupKey;
import dev.idem.KeyDerivationException;
import dev.idem.Scope;
import dev.idem.key.CanonicalBody;
import dev.idem.key.FieldPath;
import dev.idem.key.KeyEncoding;
import dev.idem.key.KeyPart;
import dev.idem.server.auth.JwtCallers;
import dev.idem.server.config.TenantSpec;
import dev.idem.server.pipeline.EventKeys;
import dev.idem.server.pipeline.InboundRequest;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A pipeline's keys scoped per tenant: the pipeline's own key rule, with the event's tenant mixed
 * into the digest and recorded in it, so that {@link TenantScopedStore} keeps each tenant's keys in
 * a scope of their own.
 *
 * <h2>Key format (stable: stores keep only the digest)</h2>
 *
 * <p>For a tenant {@code t} (text) and the key {@code k} the pipeline's rule gives without tenants
 * (its 32-byte digest):
 *
 * <pre>
 * full = KeyEncoding.of(text("idem.tenant.v1"), text(t), digest(k))       // SHA-256, 32 bytes
 * tag  = word 0 of KeyEncoding.of(text("idem.tenant.scope.v1"), text(t))  // 8 bytes
 * key  = full[0..24) || tag                                               // 32 bytes
 * </pre>
 *
 * <p>The tenant is inside {@code full}, so two tenants' keys differ (192 bits of SHA-256 apart)
 * even if their tags collided. Word 3 (the last 8 bytes) is the tag: it names the tenant's scope
 * {@code <pipeline>/tenant-<16 hex digits of the tag>} ({@link #scopeOf(String, String)}). A
 * pipeline without {@code tenant} keeps its keys as they were: this class is not used.
 *
 * <p>The tenant is read from the event as text: a body field's string (its characters) or whole
 * number (its decimal digits), a header's value, or a claim of the verified bearer token (a string
 * or a whole number). A missing or blank tenant is a {@link KeyDerivationException} (a {@code 400}
 * that names where the tenant was looked for); nothing is reserved.
 */
public final class TenantKeys implements EventKeys {
  private static final String SCOPE_PREFIX = "tenant-";

  private final TenantSpec spec;
  private final EventKeys inner;
  private final @Nullable FieldPath field;

  /**
   * Scopes a pipeline's keys per tenant.
   *
   * @param spec where the tenant is read
   * @param inner the pipeline's key rule without tenants
   */
  public TenantKeys(TenantSpec spec, EventKeys inner) {
    this.spec = Objects.requireNonNull(spec, "spec");
    this.inner = Objects.requireNonNull(inner, "inner");
    this.field = spec.source() == TenantSpec.Source.FIELD ? FieldPath.parse(spec.name()) : null;
  }

  /**
   * Returns where the tenant is read.
   *
   * @return the spec
   */
  public TenantSpec spec() {
    return spec;
  }

  @Override
  public DedupKey derive(InboundRequest request) {
    String tenant = tenantOf(request);
    return key(tenant, inner.derive(request));
  }

  /**
   * Reads an event's tenant.
   *
   * @param request the event
   * @return the tenant, not blank
   * @throws KeyDerivationException if the event names no tenant
   */
  public String tenantOf(InboundRequest request) {
    String tenant =
        switch (spec.source()) {
          case HEADER -> request.header(spec.name());
          case CLAIM -> JwtCallers.claim(request.headers(), spec.name());
          case FIELD -> fieldTenant(Objects.requireNonNull(field), request);
        };
    if (tenant == null || tenant.isBlank()) {
      throw new KeyDerivationException(
          "no tenant: "
              + where()
              + " is missing or blank; every event of this pipeline must name its tenant");
    }
    return tenant;
  }

  private String where() {
    return switch (spec.source()) {
      case HEADER -> "header " + spec.name();
      case CLAIM -> "the bearer token's claim \"" + spec.name() + "\"";
      case FIELD -> "body field " + spec.name();
    };
  }

  private String fieldTenant(FieldPath path, InboundRequest request) {
    CanonicalBody read = request.canonical();
    byte[] json;
    try {
      json = read != null ? path.extractJson(read) : path.extractJson(request.body());
    } catch (KeyDerivationException e) {
      throw new KeyDerivationException("no tenant: " + e.getMessage());
    }
    if (json[0] == '"') {
      return read != null ? path.extract(read) : path.extract(request.body());
    }
    String text = new String(json, java.nio.charset.StandardCharsets.UTF_8);
    if (text.matches("-?[0-9]+")) {
      return text;
    }
    throw new KeyDerivationException(
        "no tenant: body field "
            + spec.name()
            + " holds "
            + text
            + "; a tenant is a string or a whole number");
  }

  /**
   * Returns the keys of one tenant: the rule's keys with this tenant, whatever the event names (for
   * the admin API, {@code idem key --tenant} and {@code inspect}/{@code forget}).
   *
   * @param tenant the tenant
   * @return the keys
   * @throws KeyDerivationException if the tenant is blank
   */
  public EventKeys forTenant(String tenant) {
    checkTenant(tenant);
    return new EventKeys() {
      @Override
      public DedupKey derive(InboundRequest request) {
        return key(tenant, inner.derive(request));
      }

      @Override
      public DedupKey fromRaw(String raw) {
        return key(tenant, inner.fromRaw(raw));
      }

      @Override
      public String describe() {
        return TenantKeys.this.describe() + "; tenant " + tenant;
      }
    };
  }

  @Override
  public DedupKey fromRaw(String raw) {
    throw new KeyDerivationException(
        "this pipeline's keys are scoped per tenant ("
            + spec
            + "); give the tenant too (admin API: ?tenant=<tenant>; CLI: --tenant <tenant>), or the"
            + " key's digest");
  }

  @Override
  public String describe() {
    return inner.describe() + ", scoped per tenant (tenant: " + spec + ")";
  }

  /**
   * Returns a tenant's key for the key the pipeline's rule gives without tenants.
   *
   * @param tenant the tenant
   * @param key the key without tenant
   * @return the tenant's key (see the class Javadoc for its format)
   * @throws KeyDerivationException if the tenant is blank or has a lone surrogate
   */
  public static DedupKey key(String tenant, DedupKey key) {
    checkTenant(tenant);
    DedupKey full =
        KeyEncoding.of(
            KeyPart.text("idem.tenant.v1"), KeyPart.text(tenant), KeyPart.digest(key.toBytes()));
    return DedupKey.ofWords(full.word(0), full.word(1), full.word(2), tag(tenant));
  }

  /**
   * Returns the scope a tenant's keys are kept in.
   *
   * @param pipeline the pipeline id
   * @param tenant the tenant
   * @return {@code <pipeline>/tenant-<16 hex digits>}
   * @throws KeyDerivationException if the tenant is blank
   */
  public static Scope scopeOf(String pipeline, String tenant) {
    checkTenant(tenant);
    return scopeOfTag(pipeline, tag(tenant));
  }

  /**
   * Returns the scope a tenant's key is kept in, from the tag in its last word.
   *
   * @param pipeline the pipeline id
   * @param key a key made by {@link #key(String, DedupKey)}
   * @return the tenant's scope
   */
  public static Scope scopeOf(String pipeline, DedupKey key) {
    return scopeOfTag(pipeline, key.word(3));
  }

  private static Scope scopeOfTag(String pipeline, long tag) {
    return Scope.of(pipeline, SCOPE_PREFIX + String.format("%016x", tag));
  }

  private static long tag(String tenant) {
    return KeyEncoding.of(KeyPart.text("idem.tenant.scope.v1"), KeyPart.text(tenant)).word(0);
  }

  private static void checkTenant(String tenant) {
    if (tenant.isBlank()) {
      throw new KeyDerivationException("blank tenant: give the tenant's name");
    }
  }
}
