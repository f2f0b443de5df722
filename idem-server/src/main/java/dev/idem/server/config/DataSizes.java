package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses and prints the config's sizes: a number of bytes, or with KiB, MiB or GiB. Every size has
 * an upper bound: the field's own, and never more than {@link #MAX}.
 */
public final class DataSizes {
  /** The largest size any field accepts: 1 TiB. */
  public static final long MAX = 1L << 40;

  private static final Pattern FORMAT = Pattern.compile("(\\d{1,12})\\s*(B|KiB|MiB|GiB)?");

  private DataSizes() {}

  /**
   * Parses a size such as {@code 512KiB}, {@code 1MiB} or {@code 65536}, at most {@link #MAX}.
   *
   * @param text the text
   * @return the size in bytes
   * @throws IdemConfigException saying the expected form, or the bound
   */
  public static long parse(String text) {
    return parse(text, MAX);
  }

  /**
   * Parses a size no larger than {@code max}.
   *
   * @param text the text
   * @param max the field's upper bound in bytes (capped at {@link #MAX})
   * @return the size in bytes
   * @throws IdemConfigException saying the expected form, or the bound
   */
  public static long parse(String text, long max) {
    Matcher m = FORMAT.matcher(text.trim());
    if (!m.matches()) {
      throw new IdemConfigException(
          "'"
              + text
              + "' is not a size; write a whole number of bytes, optionally with a unit: B, KiB,"
              + " MiB or GiB (e.g. 512KiB, 1MiB)");
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2);
    int shift =
        unit == null
            ? 0
            : switch (unit) {
              case "KiB" -> 10;
              case "MiB" -> 20;
              case "GiB" -> 30;
              default -> 0;
            };
    long bound = Math.min(max, MAX);
    // Compared before shifting, so that no size can overflow a long.
    if (n > (bound >> shift) || (n << shift) > bound) {
      throw new IdemConfigException(
          "must be at most " + format(bound) + ", got " + text.trim() + "; use a smaller one");
    }
    return n << shift;
  }

  /**
   * Prints a size in the largest binary unit that divides it exactly.
   *
   * @param bytes the size
   * @return e.g. {@code 1MiB}, {@code 1500B}
   */
  public static String format(long bytes) {
    if (bytes != 0 && bytes % (1L << 30) == 0) {
      return (bytes >> 30) + "GiB";
    }
    if (bytes != 0 && bytes % (1L << 20) == 0) {
      return (bytes >> 20) + "MiB";
    }
    if (bytes != 0 && bytes % (1L << 10) == 0) {
      return (bytes >> 10) + "KiB";
    }
    return bytes + "B";
  }
}
