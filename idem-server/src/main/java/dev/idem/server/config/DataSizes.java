package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses and prints the config's sizes: a number of bytes, or with KiB, MiB or GiB. */
public final class DataSizes {
  private static final Pattern FORMAT = Pattern.compile("(\\d{1,12})\\s*(B|KiB|MiB|GiB)?");

  private DataSizes() {}

  /**
   * Parses a size such as {@code 512KiB}, {@code 1MiB} or {@code 65536}.
   *
   * @param text the text
   * @return the size in bytes
   * @throws IdemConfigException saying the expected form
   */
  public static long parse(String text) {
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
    long factor =
        unit == null
            ? 1
            : switch (unit) {
              case "KiB" -> 1L << 10;
              case "MiB" -> 1L << 20;
              case "GiB" -> 1L << 30;
              default -> 1;
            };
    return Math.multiplyExact(n, factor);
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
