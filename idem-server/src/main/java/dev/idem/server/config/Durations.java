package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses and prints the config's durations: {@code <number><unit>} with units ms, s, m, h, d. */
public final class Durations {
  private static final Pattern FORMAT = Pattern.compile("(\\d{1,12})(ms|s|m|h|d)");

  private Durations() {}

  /**
   * Parses a duration such as {@code 30s}, {@code 5m}, {@code 1h}, {@code 24h}, {@code 7d} or
   * {@code 250ms}.
   *
   * @param text the text
   * @return the duration
   * @throws IdemConfigException saying the expected form
   */
  public static Duration parse(String text) {
    Matcher m = FORMAT.matcher(text.trim());
    if (!m.matches()) {
      throw new IdemConfigException(
          "'"
              + text
              + "' is not a duration; write a whole number and a unit: ms, s, m, h or d (e.g. 30s,"
              + " 5m, 24h, 7d)");
    }
    long n = Long.parseLong(m.group(1));
    return switch (m.group(2)) {
      case "ms" -> Duration.ofMillis(n);
      case "s" -> Duration.ofSeconds(n);
      case "m" -> Duration.ofMinutes(n);
      case "h" -> Duration.ofHours(n);
      default -> Duration.ofDays(n);
    };
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
