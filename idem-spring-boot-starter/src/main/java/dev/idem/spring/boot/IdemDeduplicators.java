package dev.idem.spring.boot;

import dev.idem.DedupConfig;
import dev.idem.DedupListener;
import dev.idem.Deduplicator;
import dev.idem.IdemConfigException;
import dev.idem.Scope;
import dev.idem.spi.DedupStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The application's deduplicators, one per scope (and per window override of {@link
 * Idempotent#ttl()}), all on the one store. A scope configured under {@code idem.scopes} gets its
 * settings; any other gets the defaults. Thread-safe.
 */
public final class IdemDeduplicators {
  private final DedupStore store;
  private final Map<String, IdemProperties.ScopeProperties> configured;
  private final List<DedupListener> listeners;
  private final Map<String, Deduplicator> byName = new ConcurrentHashMap<>();

  /**
   * Creates the registry.
   *
   * @param store the store every deduplicator uses
   * @param configured the configured scopes by name
   * @param listeners listeners every deduplicator gets (e.g. metrics)
   */
  public IdemDeduplicators(
      DedupStore store,
      Map<String, IdemProperties.ScopeProperties> configured,
      List<DedupListener> listeners) {
    this.store = store;
    this.configured = Map.copyOf(configured);
    this.listeners = List.copyOf(listeners);
  }

  /**
   * Returns the store.
   *
   * @return the store
   */
  public DedupStore store() {
    return store;
  }

  /**
   * Returns the deduplicator of a scope.
   *
   * @param scope {@code pipeline} or {@code pipeline/step}
   * @return its deduplicator
   * @throws IdemConfigException if the name is not a valid scope
   */
  public Deduplicator get(String scope) {
    return get(scope, null);
  }

  /**
   * Returns the deduplicator of a scope with another window.
   *
   * @param scope {@code pipeline} or {@code pipeline/step}
   * @param ttl the window, or null for the scope's
   * @return its deduplicator
   */
  public Deduplicator get(String scope, @Nullable Duration ttl) {
    String name = ttl == null ? scope : scope + "@" + ttl;
    return byName.computeIfAbsent(name, n -> create(scope, ttl));
  }

  private Deduplicator create(String name, @Nullable Duration ttl) {
    Scope scope = name.contains("/") ? Scope.parse(name) : Scope.of(name);
    IdemProperties.ScopeProperties props = configured.get(name);
    DedupConfig config;
    try {
      config = props == null ? DedupConfig.ofDefaults() : Objects.requireNonNull(props.toConfig());
    } catch (IdemConfigException e) {
      throw new IdemConfigException("idem.scopes." + name + ": " + e.getMessage());
    }
    if (ttl != null) {
      config = DedupConfig.from(config).ttl(ttl).build();
    }
    Deduplicator.Builder b = Deduplicator.builder(store, scope).config(config);
    listeners.forEach(b::listener);
    return b.build();
  }
}
