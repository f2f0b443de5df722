package dev.idem.server.auth;

import dev.idem.TimeSource;
import dev.idem.server.auth.CallerException.Reason;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The log of one source's refused callers: at most one line per {@link #LOG_INTERVAL_SECONDS}
 * seconds, with the number of refusals left out since the last line (a caller that retries in a
 * loop must not flood the log). INFO; WARN when the keys cannot be fetched.
 */
final class CallerRefusals {
  private static final Logger LOG = LoggerFactory.getLogger(CallerRefusals.class);

  /** Seconds between two logged refusals of one source. */
  static final long LOG_INTERVAL_SECONDS = 10;

  private final String source;
  private final TimeSource time;
  private final AtomicLong nextLog = new AtomicLong();
  private final AtomicLong suppressed = new AtomicLong();

  CallerRefusals(String source, TimeSource time) {
    this.source = source;
    this.time = time;
    this.nextLog.set(time.monotonicNanos());
  }

  void log(CallerException e) {
    long now = time.monotonicNanos();
    long next = nextLog.get();
    if (now - next < 0
        || !nextLog.compareAndSet(next, now + TimeUnit.SECONDS.toNanos(LOG_INTERVAL_SECONDS))) {
      suppressed.incrementAndGet();
      return;
    }
    long left = suppressed.getAndSet(0);
    String line = "caller refused source={} answer={} detail={} (refusals not logged since: {})";
    if (e.reason() == Reason.KEYS_UNAVAILABLE) {
      LOG.warn(line, source, e.reason().code(), e.detail(), left);
    } else {
      LOG.info(line, source, e.reason().code(), e.detail(), left);
    }
  }
}
