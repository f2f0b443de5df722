package dev.idem.server.metrics;

import dev.idem.TimeSource;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Samples every pipeline's counters at a fixed interval and keeps the last samples, so that the
 * console can draw decisions per second over the last minutes without Prometheus. One daemon
 * thread; {@link #close()} stops it.
 */
public final class DecisionSampler implements AutoCloseable {
  /** The default interval between samples. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(5);

  /** The default number of samples kept per pipeline (10 minutes at the default interval). */
  public static final int DEFAULT_SAMPLES = 120;

  /**
   * One sample of a pipeline's counters.
   *
   * @param atMillis when it was taken
   * @param counts the counter values then, by name ({@link IdemMetrics.PipelineMeters#counts()})
   */
  public record Sample(long atMillis, Map<String, Long> counts) {}

  private final IdemMetrics metrics;
  private final List<String> pipelines;
  private final TimeSource time;
  private final int keep;
  private final Duration interval;
  private final Map<String, ArrayDeque<Sample>> samples = new ConcurrentHashMap<>();
  private final ScheduledExecutorService timer;

  /**
   * Starts sampling.
   *
   * @param metrics the counters
   * @param pipelines the pipeline ids to sample
   * @param time the clock
   * @param interval the time between samples, positive
   * @param keep how many samples to keep per pipeline, at least 2
   */
  public DecisionSampler(
      IdemMetrics metrics, List<String> pipelines, TimeSource time, Duration interval, int keep) {
    if (interval.isNegative() || interval.isZero() || keep < 2) {
      throw new IllegalArgumentException("the sampler needs a positive interval and keep >= 2");
    }
    this.metrics = metrics;
    this.pipelines = List.copyOf(pipelines);
    this.time = time;
    this.keep = keep;
    this.interval = interval;
    for (String p : this.pipelines) {
      samples.put(p, new ArrayDeque<>());
    }
    sample();
    this.timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "idem-console-sampler");
              t.setDaemon(true);
              return t;
            });
    long ms = interval.toMillis();
    timer.scheduleAtFixedRate(this::sample, ms, ms, TimeUnit.MILLISECONDS);
  }

  /**
   * Returns the interval between samples.
   *
   * @return the interval
   */
  public Duration interval() {
    return interval;
  }

  /** Takes one sample of every pipeline now. */
  public void sample() {
    long now = time.wallMillis();
    for (String p : pipelines) {
      Sample s = new Sample(now, new LinkedHashMap<>(metrics.pipeline(p).counts()));
      ArrayDeque<Sample> q = samples.get(p);
      synchronized (q) {
        q.addLast(s);
        while (q.size() > keep) {
          q.removeFirst();
        }
      }
    }
  }

  /**
   * Returns a pipeline's samples, oldest first, followed by the counters as they are now.
   *
   * @param pipeline the pipeline id
   * @return the samples (empty for an unknown pipeline)
   */
  public List<Sample> samples(String pipeline) {
    ArrayDeque<Sample> q = samples.get(pipeline);
    if (q == null) {
      return List.of();
    }
    List<Sample> out;
    synchronized (q) {
      out = new ArrayList<>(q);
    }
    out.add(new Sample(time.wallMillis(), metrics.pipeline(pipeline).counts()));
    return out;
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
