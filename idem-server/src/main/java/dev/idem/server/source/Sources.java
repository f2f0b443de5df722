package dev.idem.server.source;

import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import dev.idem.server.config.NatsSourceSettings;
import dev.idem.server.config.SourceSettings;
import dev.idem.server.metrics.IdemMetrics;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.nats.NatsSource;

/** Opens the pulling source of a pipeline from its settings. */
public final class Sources {
  private Sources() {}

  /**
   * What a source needs besides its settings and its pipeline.
   *
   * @param meters the pipeline's meters
   * @param time the clock
   */
  public record Context(IdemMetrics.PipelineMeters meters, TimeSource time) {}

  /**
   * Opens (without starting) the source of a pipeline whose source is not a webhook.
   *
   * @param settings the source's settings
   * @param pipeline the pipeline it feeds
   * @param context meters and clock
   * @return the source, not started
   * @throws IdemConfigException if no source of that type exists
   */
  public static EventSource open(SourceSettings settings, Pipeline pipeline, Context context) {
    if (settings instanceof NatsSourceSettings s) {
      return new NatsSource(s, pipeline, SourceMeters.of(context, "nats"));
    }
    throw new IdemConfigException(
        "source." + settings.type() + " is not a source this build can run");
  }
}
