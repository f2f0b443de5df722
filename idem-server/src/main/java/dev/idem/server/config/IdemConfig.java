package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The whole service configuration, validated: load one with {@link ConfigLoader}.
 *
 * @param server the listener and admin
 * @param store the service's store (pipelines without {@code dedup.store} use it)
 * @param pipelines the pipelines, at least one, ids and paths unique
 */
public record IdemConfig(
    ServerSettings server, StoreSettings store, List<PipelineSettings> pipelines) {

  /**
   * Validates the fields and the rules between pipelines.
   *
   * @throws IdemConfigException if there is no pipeline, or two share an id or a path
   */
  public IdemConfig {
    Objects.requireNonNull(server, "server");
    Objects.requireNonNull(store, "store");
    pipelines = List.copyOf(pipelines);
    if (pipelines.isEmpty()) {
      throw new IdemConfigException("pipelines: give at least one pipeline");
    }
    Set<String> ids = new HashSet<>();
    Set<String> paths = new HashSet<>();
    for (PipelineSettings p : pipelines) {
      if (!ids.add(p.id())) {
        throw new IdemConfigException("pipeline id '" + p.id() + "' is used twice; ids are unique");
      }
      WebhookSettings hook = p.webhook();
      if (hook != null && !paths.add(hook.path())) {
        throw new IdemConfigException(
            "webhook path '" + hook.path() + "' is used by two pipelines; paths are unique");
      }
    }
  }

  /**
   * Finds a pipeline by id.
   *
   * @param id the pipeline id
   * @return the pipeline, or empty
   */
  public Optional<PipelineSettings> pipeline(String id) {
    return pipelines.stream().filter(p -> p.id().equals(id)).findFirst();
  }

  /**
   * Returns the store a pipeline uses: its {@code dedup.store}, else the service's.
   *
   * @param pipeline the pipeline
   * @return the store settings
   */
  public StoreSettings storeOf(PipelineSettings pipeline) {
    if (pipeline.dedup() != null && pipeline.dedup().store() != null) {
      return pipeline.dedup().store();
    }
    return store;
  }
}
