package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses and prints the config's durations: {@code <number><unit>} with units ms, s, m, h, d.
 *
 * <p>Every duration has an upper bound: the field's own (see docs/configuration.md), and never more
 * than {@link #MAX} whatever the field, so no duration can overflow when it is turned into
 * milliseconds or added to a clock reading.
 */
public final class Durations {
  /** The largest duration any field accepts: 3650 days (about 10 years). */
  public static final Duration MAX = Duration.ofDays(3650);

  private static final Pattern FORMAT = Pattern.compile("(\\d{1,12})(ms|s|m|h|d)");

  private Durations() {}

  /**
   * Parses a duration such as {@code 30s}, {@code 5m}, {@code 1h}, {@code 24h}, {@code 7d} or
   * {@code 250ms}, at most {@link #MAX}.
   *
   * @param text the text
   * @return the duration
   * @throws IdemConfigException saying the expected form, or the bound
   */
  public static Duration parse(String text) {
    return parse(text, MAX);
  }

  /**
   * Parses a duration no longer than {@code max}.
   *
   * @param text the text
   * @param max the field's upper bound (capped at {@link #MAX})
   * @return the duration
   * @throws IdemConfigException saying the expected form, or the bound
   */
  public static Duration parse(String text, Duration max) {
    Matcher m = FORMAT.matcher(text.trim());
    if (!m.matches()) {
      throw new IdemConfigException(
          "'"
              + text
              + "' is not a duration; write a whole number and a unit: ms, s, m, h or d (e.g. 30s,"
              + " 5m, 24h, 7d)");
    }
    long n = Long.parseLong(m.group(1)); // at most 12 digits: no unit below can overflow
    Duration d =
        switch (m.group(2)) {
          case "ms" -> Duration.ofMillis(n);
          case "s" -> Duration.ofSeconds(n);
          case "m" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          default -> Duration.ofDays(n);
        };
    Duration bound = max.compareTo(MAX) < 0 ? max : MAX;
    if (d.compareTo(bound) > 0) {
      throw new IdemConfigException(
          "must be at most " + format(bound) + ", got " + text.trim() + "; use a shorter one");
    }
    return d;
  }

  /**
   * Prints a duration in the largest unit that divides it exactly, the inverse of {@link #parse}.
   *
   * @param d the duration
   * @return e.g. {@code 24h}, {@code 90s}, {@code 1500ms}
   */
  public static String format(Duration d) {
    long ms = d.toMillis();
    if (ms != 0 && ms % 86_400_000L == 0) {
      return ms / 86_400_000L + "d";
    }
    if (ms != 0 && ms % 3_600_000L == 0) {
      return ms / 3_600_000L + "h";
    }
    if (ms != 0 && ms % 60_000L == 0) {
      return ms / 60_000L + "m";
    }
    if (ms != 0 && ms % 1_000L == 0) {
      return ms / 1_000L + "s";
    }
    return ms + "ms";
  }
}
