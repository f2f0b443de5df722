package dev.idem.server.config;

import dev.idem.server.deliver.RetryPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Warns when a pipeline's {@code dedup.lease} is shorter than its sync delivery can take (issue 9
 * §2). A delivery still running when the lease runs out is delivered again if the sender resends
 * then: the key is free for the resend, and the first delivery's commit is refused.
 *
 * <p>A warning, not an error: the worst case (every attempt timing out, every backoff at its
 * ceiling) is rare, and refusing would stop configs that work. {@code idem check-config} prints the
 * warnings and {@code idem serve} logs them. Only HTTP sinks have a timeout that bounds an attempt,
 * so only they are checked.
 */
public final class LeaseCheck {
  private LeaseCheck() {}

  /**
   * Returns one warning per pipeline whose lease is shorter than its sync delivery's worst case.
   *
   * @param config the config
   * @return the warnings, empty if none
   */
  public static List<String> warnings(IdemConfig config) {
    List<String> out = new ArrayList<>();
    for (PipelineSettings p : config.pipelines()) {
      Duration worst = worstSyncDelivery(p);
      DedupSettings d = p.dedup();
      if (worst == null || d == null) {
        continue;
      }
      Duration lease = d.config().lease();
      if (lease.compareTo(worst) < 0) {
        RetryPolicy r = p.deliver().retry();
        SinkSettings.Http http = (SinkSettings.Http) p.deliver().sink();
        out.add(
            "pipeline "
                + p.id()
                + ": dedup.lease "
                + Durations.format(lease)
                + " is shorter than a sync delivery's worst case, "
                + Durations.format(worst)
                + " (deliver.http.timeout "
                + Durations.format(http.timeout())
                + " x "
                + r.maxAttempts()
                + " attempts + backoffs); an event whose delivery takes that long is delivered"
                + " again if the sender resends after the lease ran out. Set dedup.lease to at"
                + " least "
                + Durations.format(worst)
                + ", or lower the timeout or the retries");
      }
    }
    return out;
  }

  /**
   * Returns the longest a sync HTTP delivery can take: every attempt timing out, every backoff at
   * its ceiling.
   *
   * @param p the pipeline
   * @return the worst case, or null if the pipeline is async, has no dedup step or no HTTP sink
   */
  static @Nullable Duration worstSyncDelivery(PipelineSettings p) {
    if (p.dedup() == null
        || p.deliver().mode() != DeliveryMode.SYNC
        || !(p.deliver().sink() instanceof SinkSettings.Http http)) {
      return null;
    }
    RetryPolicy r = p.deliver().retry();
    Duration worst = http.timeout().multipliedBy(r.maxAttempts());
    for (int failed = 1; failed < r.maxAttempts(); failed++) {
      worst = worst.plus(r.backoffCeiling(failed));
    }
    return worst;
  }
}
