package dev.idem.server.config;

import dev.idem.DedupConfig;
import dev.idem.IdemConfigException;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A pipeline's dedup step ({@code dedup}).
 *
 * @param key the key rule, or null for the default key (the provider's delivery id when a signature
 *     scheme is set, else the canonical body hash)
 * @param config the window, expiry and lease
 * @param maxKeys memory store only: the bound on committed keys of this pipeline, or null for the
 *     store's default
 * @param mode drop or replay
 * @param store a store for this pipeline only, or null to use the service's
 */
public record DedupSettings(
    @Nullable KeySpec key,
    DedupConfig config,
    @Nullable Long maxKeys,
    DedupMode mode,
    @Nullable StoreSettings store) {

  /** The longest {@code window}: {@link Durations#MAX} (3650 days); {@code none} keeps keys. */
  public static final java.time.Duration MAX_WINDOW = Durations.MAX;

  /**
   * The default {@code lease}: 30 seconds. Short, because the service renews a reservation's lease
   * every third of it while its work runs; a dead instance blocks its keys for at most this long.
   */
  public static final java.time.Duration DEFAULT_LEASE = java.time.Duration.ofSeconds(30);

  /** The longest {@code lease}: 24 hours (a live holder renews it, so leases can be short). */
  public static final java.time.Duration MAX_LEASE = java.time.Duration.ofHours(24);

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public DedupSettings {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(mode, "mode");
    if (maxKeys != null && maxKeys < 1) {
      throw new IdemConfigException("max_keys must be at least 1, got " + maxKeys);
    }
  }
}
