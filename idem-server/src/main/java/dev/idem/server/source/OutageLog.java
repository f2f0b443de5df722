package dev.idem.server.source;

import dev.idem.TimeSource;
import dev.idem.server.pipeline.Outcome;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;

/**
 * Logs a broker source's store outage as three kinds of line instead of one line per event: one
 * WARN when the outage starts (with how many events it put back so far), a WARN reminder at most
 * every {@link #DEFAULT_REMINDER} (with how many events were put back since the outage began), and
 * one INFO when the store answers again (with how long it was down and how many events were put
 * back in all).
 *
 * <p>A source calls {@link #observe} with each batch's outcomes; an outcome {@code
 * store_unavailable} is the store not answering, an outcome that needed the store (accepted,
 * duplicate, in flight, conflict, stale, failed) is the store answering. Thread-safe; a batch in
 * which the store answered while no outage is open costs one volatile read.
 */
public final class OutageLog {
  /** The default time between two reminders of an outage that lasts. */
  public static final Duration DEFAULT_REMINDER = Duration.ofSeconds(30);

  private final Logger log;
  private final String pipeline;
  private final String source;
  private final String whatHappens;
  private final TimeSource time;
  private final long reminderNanos;

  private volatile boolean down;

  // Guarded by this.
  private long sinceNanos;
  private long lastLineNanos;
  private long putBack;
  private long putBackAtLastLine;

  /**
   * Makes the log of one source.
   *
   * @param log the source's logger
   * @param pipeline the pipeline id
   * @param source what the lines call the source, e.g. {@code rabbitmq source (queue orders)}
   * @param whatHappens what the source does meanwhile, e.g. {@code nothing is acknowledged; the
   *     messages are put back after a delay}
   * @param time the clock
   * @param reminder the time between two reminders; positive
   */
  public OutageLog(
      Logger log,
      String pipeline,
      String source,
      String whatHappens,
      TimeSource time,
      Duration reminder) {
    this.log = Objects.requireNonNull(log, "log");
    this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    this.source = Objects.requireNonNull(source, "source");
    this.whatHappens = Objects.requireNonNull(whatHappens, "whatHappens");
    this.time = Objects.requireNonNull(time, "time");
    if (reminder.isNegative() || reminder.isZero()) {
      throw new IllegalArgumentException("reminder must be positive, got " + reminder);
    }
    this.reminderNanos = reminder.toNanos();
  }

  /**
   * Returns whether an outage is open: the last batch that needed the store found it unavailable.
   *
   * @return true during an outage
   */
  public boolean down() {
    return down;
  }

  /**
   * Records a batch's outcomes.
   *
   * @param outcomes the batch's outcomes
   * @param putBack how many of the batch's events the source put back (not acknowledged) because
   *     the store was unavailable
   */
  public void observe(List<Outcome> outcomes, int putBack) {
    Outcome.Unavailable first = null;
    boolean answered = false;
    for (Outcome o : outcomes) {
      if (o instanceof Outcome.Unavailable u && u.code().equals("store_unavailable")) {
        if (first == null) {
          first = u;
        }
      } else if (!(o instanceof Outcome.Rejected) && !(o instanceof Outcome.Unavailable)) {
        answered = true; // everything but a rejection (before the store) and an outage asked it
      }
    }
    if (first != null) {
      unavailable(putBack, first.message());
    } else if (answered && down) {
      answered();
    }
  }

  private synchronized void unavailable(int n, String why) {
    long now = time.monotonicNanos();
    if (!down) {
      down = true;
      sinceNanos = now;
      lastLineNanos = now;
      putBack = n;
      putBackAtLastLine = n;
      log.warn(
          "pipeline={} {}: the dedup store is unavailable ({}); {}. {} events put back so far;"
              + " one reminder every {} s until it answers",
          pipeline,
          source,
          why,
          whatHappens,
          n,
          TimeUnit.NANOSECONDS.toSeconds(reminderNanos));
      return;
    }
    putBack += n;
    if (now - lastLineNanos >= reminderNanos) {
      log.warn(
          "pipeline={} {}: the dedup store is still unavailable after {} s ({}); {} events put"
              + " back since the outage began, {} since the last line",
          pipeline,
          source,
          TimeUnit.NANOSECONDS.toSeconds(now - sinceNanos),
          why,
          putBack,
          putBack - putBackAtLastLine);
      lastLineNanos = now;
      putBackAtLastLine = putBack;
    }
  }

  private synchronized void answered() {
    if (!down) {
      return;
    }
    down = false;
    log.info(
        "pipeline={} {}: the dedup store answers again after {} ms; {} events were put back"
            + " during the outage and are processed as they come back",
        pipeline,
        source,
        TimeUnit.NANOSECONDS.toMillis(time.monotonicNanos() - sinceNanos),
        putBack);
  }

  /**
   * Returns how many events were put back in the open outage.
   *
   * @return the count, 0 when no outage is open
   */
  public synchronized long putBack() {
    return down ? putBack : 0;
  }
}
