package dev.idem.server.source.webhook;

import dev.idem.TimeSource;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;

/**
 * Logs the requests one pipeline rejects (bad, missing or stale signatures), at most {@code
 * maxPerSecond} lines per second, so that a flood of bad requests cannot fill the disk. A line that
 * is left out is counted, and the next line written says how many were left out before it.
 *
 * <p>Each line reads {@code rejected pipeline=<id> check=signature reason=<MISSING|INVALID|STALE>
 * delivery=<the provider's delivery id, or -> status=401: <what was wrong>}. The delivery id comes
 * from the unverified request, so it is cut to {@value #MAX_FIELD_CHARS} printable ASCII characters
 * (anything else becomes {@code ?}), and the message to {@value #MAX_MESSAGE_CHARS} characters of
 * one line: a sender cannot forge log lines with what it sends.
 *
 * <p>Thread-safe; the lock is taken only on the rejection path.
 */
final class RejectionLog {
  /** The default bound: 10 lines per second per pipeline. */
  static final int DEFAULT_MAX_PER_SECOND = 10;

  /** The longest sender-supplied value a line shows. */
  static final int MAX_FIELD_CHARS = 100;

  /** The longest message a line shows. */
  static final int MAX_MESSAGE_CHARS = 300;

  private static final long WINDOW_NANOS = 1_000_000_000L;

  private final Logger log;
  private final String pipeline;
  private final TimeSource time;
  private final int maxPerSecond;

  // Guarded by this.
  private long windowStart;
  private boolean started;
  private int written;
  private long suppressed;

  RejectionLog(Logger log, String pipeline, TimeSource time, int maxPerSecond) {
    this.log = Objects.requireNonNull(log, "log");
    this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    this.time = Objects.requireNonNull(time, "time");
    if (maxPerSecond < 1) {
      throw new IllegalArgumentException("maxPerSecond must be positive, got " + maxPerSecond);
    }
    this.maxPerSecond = maxPerSecond;
  }

  /**
   * Logs one rejection at WARN, unless this second's lines are used up.
   *
   * @param check which check failed, e.g. {@code signature}
   * @param reason the check's reason code, e.g. {@code STALE}
   * @param deliveryId reads the provider's delivery id from the request (null if it has none);
   *     called only when the line is written, so a flood costs no parsing
   * @param status the status answered
   * @param message what was wrong
   */
  void rejected(
      String check,
      String reason,
      Supplier<@Nullable String> deliveryId,
      int status,
      String message) {
    if (!log.isWarnEnabled()) {
      return;
    }
    long before;
    synchronized (this) {
      long now = time.monotonicNanos();
      if (!started || now - windowStart >= WINDOW_NANOS) {
        started = true;
        windowStart = now;
        written = 0;
      }
      if (written >= maxPerSecond) {
        suppressed++;
        return;
      }
      written++;
      before = suppressed;
      suppressed = 0;
    }
    String given = deliveryId.get();
    String id = given == null ? "-" : clean(given, MAX_FIELD_CHARS, false);
    String what = clean(message, MAX_MESSAGE_CHARS, true);
    if (before == 0) {
      log.warn(
          "rejected pipeline={} check={} reason={} delivery={} status={}: {}",
          pipeline,
          check,
          reason,
          id,
          status,
          what);
    } else {
      log.warn(
          "rejected pipeline={} check={} reason={} delivery={} status={}: {} ({} earlier"
              + " rejections of this pipeline were not logged, over {} a second)",
          pipeline,
          check,
          reason,
          id,
          status,
          what,
          before,
          maxPerSecond);
    }
  }

  /** Returns how many lines were left out since the last one written (for tests). */
  synchronized long suppressed() {
    return suppressed;
  }

  /** Keeps at most {@code max} printable ASCII characters (and spaces if allowed), else '?'. */
  static String clean(String s, int max, boolean spaces) {
    int n = Math.min(s.length(), max);
    StringBuilder b = new StringBuilder(n + 3);
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      b.append((c > ' ' && c < 0x7f) || (spaces && c == ' ') ? c : '?');
    }
    if (s.length() > n) {
      b.append("...");
    }
    return b.toString();
  }
}
