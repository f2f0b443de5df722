package dev.idem.key;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * Random JSON values for property tests, with an independent reference serializer for the canonical
 * form (a TreeMap ordered by {@link String#compareTo}, which compares UTF-16 code units, and {@link
 * ExactNumberOracle} for numbers, which are {@link BigDecimal}s) and a random, valid, non-canonical
 * serializer (shuffled members, random whitespace, random escapes, random spellings of each
 * number's exact value).
 */
final class JsonModel {
  /** JSON null (maps and lists here hold no Java nulls). */
  static final Object NULL = new Object();

  private static final String[] NAMES = {
    "",
    "a",
    "b",
    "A",
    "aa",
    "ab",
    "id",
    "1",
    "10",
    "\n",
    "\u0000",
    "\u007f",
    "\u0080",
    "é",
    "\u20ac",
    "\uFB33",
    "\uD83D\uDE02",
    "\uE000",
    "\uFFFF",
    "\uD800\uDC00",
    "a\"b",
    "a\\b",
    "/",
    // Shared 8-byte prefixes, names of exactly 8 bytes, and a name ending in a space.
    "shipping",
    "shipping_address",
    "shipping_lines",
    "shipping ",
    "shippinG",
    "shipping\u00e9",
    "abcdefgh",
    "abcdefghi",
    "abcdefg",
    "abcdefg\n",
    "abcdefgh\"",
    "total_price",
    "total_tax"
  };

  private static final String CHARS =
      "azAZ09 \"\\/\b\f\n\r\t\u0000\u001f\u007f\u0080é\u20ac\u2028\uFB33\uE000\uFFFF";

  private JsonModel() {}

  static Object randomValue(SplittableRandom r, int depth) {
    int kind = depth > 4 ? 2 + r.nextInt(4) : r.nextInt(6);
    return switch (kind) {
      case 0 -> {
        // Mostly small objects; sometimes a wide one (beyond the prefix sort's 32) of scalars.
        boolean wide = r.nextInt(20) == 0;
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = wide ? r.nextInt(70) : r.nextInt(6); i > 0; i--) {
          String name = r.nextInt(3) == 0 ? randomString(r) : NAMES[r.nextInt(NAMES.length)];
          map.put(name, randomValue(r, wide ? 5 : depth + 1));
        }
        yield map;
      }
      case 1 -> {
        List<Object> list = new ArrayList<>();
        for (int i = r.nextInt(5); i > 0; i--) {
          list.add(randomValue(r, depth + 1));
        }
        yield list;
      }
      case 2 -> randomString(r);
      case 3 -> randomDecimal(r);
      case 4 -> r.nextBoolean();
      default -> NULL;
    };
  }

  static String randomString(SplittableRandom r) {
    StringBuilder sb = new StringBuilder();
    for (int i = r.nextInt(8); i > 0; i--) {
      if (r.nextInt(10) == 0) {
        sb.appendCodePoint(0x10000 + r.nextInt(0x100000)); // a supplementary character
      } else {
        sb.append(CHARS.charAt(r.nextInt(CHARS.length())));
      }
    }
    return sb.toString();
  }

  static double randomDouble(SplittableRandom r) {
    return switch (r.nextInt(7)) {
      case 0 -> r.nextInt(-1000, 1000);
      case 1 -> r.nextLong() / 100.0; // money-like
      case 2 -> Math.scalb(r.nextDouble(), r.nextInt(-1074, 1024)); // any magnitude
      case 3 -> {
        double d;
        do {
          d = Double.longBitsToDouble(r.nextLong());
        } while (!Double.isFinite(d));
        yield d;
      }
      case 4 -> Math.pow(10, r.nextInt(-9, 25)) * (r.nextBoolean() ? 1 : -1);
      case 5 -> Double.longBitsToDouble(r.nextLong(1, 1L << 52)); // subnormal
      default -> r.nextBoolean() ? 0.0 : -0.0;
    };
  }

  /**
   * A random number, by exact value: small integers, money, 64-bit ids, doubles (their exact
   * expansion and their shortest digits), long digit strings, and the edges of the range.
   */
  static BigDecimal randomDecimal(SplittableRandom r) {
    return switch (r.nextInt(9)) {
      case 0 -> BigDecimal.valueOf(r.nextInt(-1000, 1000));
      case 1 -> BigDecimal.valueOf(r.nextLong(), 2); // money-like
      case 2 -> BigDecimal.valueOf(r.nextLong()); // 64-bit ids
      case 3 -> new BigDecimal(randomDouble(r)); // a double's exact value
      case 4 -> new BigDecimal(EcmaNumberOracle.toString(randomDouble(r))); // its shortest digits
      case 5 -> {
        StringBuilder digits = new StringBuilder();
        for (int i = 1 + r.nextInt(40); i > 0; i--) {
          digits.append((char) ('0' + r.nextInt(10)));
        }
        BigDecimal d = new BigDecimal(new java.math.BigInteger(digits.toString()), 0);
        int precision = d.precision();
        // Any scale that keeps the decimal exponent (precision - 1 - scale) inside [-324, 308].
        int scale = r.nextInt(precision - 1 - 308, precision - 1 + 324 + 1);
        d = new BigDecimal(d.unscaledValue(), scale);
        yield r.nextBoolean() ? d : d.negate();
      }
      case 6 -> new BigDecimal(ExactNumberOracle.EDGES[r.nextInt(ExactNumberOracle.EDGES.length)]);
      case 7 -> BigDecimal.valueOf(r.nextLong()).movePointLeft(r.nextInt(0, 30)); // long decimals
      default -> BigDecimal.ZERO.setScale(r.nextInt(-5, 5));
    };
  }

  /** The reference canonical form. */
  static String canonical(Object v) {
    StringBuilder sb = new StringBuilder();
    canonical(v, sb);
    return sb.toString();
  }

  @SuppressWarnings("unchecked")
  private static void canonical(Object v, StringBuilder sb) {
    if (v instanceof Map<?, ?> m) {
      TreeMap<String, Object> sorted = new TreeMap<>((Map<String, Object>) m);
      sb.append('{');
      boolean first = true;
      for (Map.Entry<String, Object> e : sorted.entrySet()) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        canonicalString(e.getKey(), sb);
        sb.append(':');
        canonical(e.getValue(), sb);
      }
      sb.append('}');
    } else if (v instanceof List<?> l) {
      sb.append('[');
      for (int i = 0; i < l.size(); i++) {
        if (i > 0) {
          sb.append(',');
        }
        canonical(l.get(i), sb);
      }
      sb.append(']');
    } else if (v instanceof String s) {
      canonicalString(s, sb);
    } else if (v instanceof BigDecimal d) {
      sb.append(ExactNumberOracle.canonical(d));
    } else if (v instanceof Boolean b) {
      sb.append(b);
    } else {
      sb.append("null");
    }
  }

  private static void canonicalString(String s, StringBuilder sb) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }

  /**
   * A compact spelling: no whitespace and every string in its canonical form, so that an object is
   * rewritten only by the order of its members (shuffled here) and by numbers spelled otherwise
   * (about one in four).
   */
  static String compact(Object v, SplittableRandom r) {
    StringBuilder sb = new StringBuilder();
    compact(v, r, sb);
    return sb.toString();
  }

  @SuppressWarnings("unchecked")
  private static void compact(Object v, SplittableRandom r, StringBuilder sb) {
    if (v instanceof Map<?, ?> m) {
      List<Map.Entry<String, Object>> entries =
          new ArrayList<>(((Map<String, Object>) m).entrySet());
      Collections.shuffle(entries, new java.util.Random(r.nextLong()));
      sb.append('{');
      for (int i = 0; i < entries.size(); i++) {
        if (i > 0) {
          sb.append(',');
        }
        canonicalString(entries.get(i).getKey(), sb);
        sb.append(':');
        compact(entries.get(i).getValue(), r, sb);
      }
      sb.append('}');
    } else if (v instanceof List<?> l) {
      sb.append('[');
      for (int i = 0; i < l.size(); i++) {
        if (i > 0) {
          sb.append(',');
        }
        compact(l.get(i), r, sb);
      }
      sb.append(']');
    } else if (v instanceof BigDecimal d && r.nextInt(4) == 0) {
      sb.append(spellNumber(d, r));
    } else {
      canonical(v, sb);
    }
  }

  /** A random valid JSON spelling of the value. */
  static String spell(Object v, SplittableRandom r) {
    StringBuilder sb = new StringBuilder();
    whitespace(r, sb);
    spell(v, r, sb);
    whitespace(r, sb);
    return sb.toString();
  }

  @SuppressWarnings("unchecked")
  private static void spell(Object v, SplittableRandom r, StringBuilder sb) {
    if (v instanceof Map<?, ?> m) {
      List<Map.Entry<String, Object>> entries =
          new ArrayList<>(((Map<String, Object>) m).entrySet());
      Collections.shuffle(entries, new java.util.Random(r.nextLong()));
      sb.append('{');
      for (int i = 0; i < entries.size(); i++) {
        if (i > 0) {
          sb.append(',');
        }
        whitespace(r, sb);
        spellString(entries.get(i).getKey(), r, sb);
        whitespace(r, sb);
        sb.append(':');
        whitespace(r, sb);
        spell(entries.get(i).getValue(), r, sb);
        whitespace(r, sb);
      }
      whitespace(r, sb);
      sb.append('}');
    } else if (v instanceof List<?> l) {
      sb.append('[');
      whitespace(r, sb);
      for (int i = 0; i < l.size(); i++) {
        if (i > 0) {
          sb.append(',');
          whitespace(r, sb);
        }
        spell(l.get(i), r, sb);
        whitespace(r, sb);
      }
      sb.append(']');
    } else if (v instanceof String s) {
      spellString(s, r, sb);
    } else if (v instanceof BigDecimal d) {
      sb.append(spellNumber(d, r));
    } else if (v instanceof Boolean b) {
      sb.append(b);
    } else {
      sb.append("null");
    }
  }

  private static void whitespace(SplittableRandom r, StringBuilder sb) {
    for (int i = r.nextInt(4) == 0 ? r.nextInt(4) : 0; i > 0; i--) {
      sb.append(" \t\n\r".charAt(r.nextInt(4)));
    }
  }

  private static void spellString(String s, SplittableRandom r, StringBuilder sb) {
    sb.append('"');
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i);
      i += Character.charCount(cp);
      boolean mustEscape = cp < 0x20 || cp == '"' || cp == '\\';
      if (!mustEscape && r.nextInt(4) != 0) {
        sb.appendCodePoint(cp);
      } else if (cp == '/' && r.nextBoolean()) {
        sb.append("\\/");
      } else if ("\"\\\b\f\n\r\t".indexOf(cp) >= 0 && r.nextBoolean()) {
        sb.append('\\').append("\"\\bfnrt".charAt("\"\\\b\f\n\r\t".indexOf(cp)));
      } else {
        for (char c : Character.toChars(cp)) {
          String hex = String.format("%04x", (int) c);
          sb.append("\\u").append(r.nextBoolean() ? hex : hex.toUpperCase(java.util.Locale.ROOT));
        }
      }
    }
    sb.append('"');
  }

  /** A random JSON spelling of a number: every one of them denotes exactly this value. */
  static String spellNumber(BigDecimal d, SplittableRandom r) {
    String sign = d.signum() < 0 || (d.signum() == 0 && r.nextInt(4) == 0) ? "-" : "";
    BigDecimal abs = d.abs();
    int exponent = abs.precision() - 1 - abs.scale(); // of the leading digit
    return switch (r.nextInt(6)) {
      case 0 -> ExactNumberOracle.canonical(d);
      case 1 -> sign + abs; // BigDecimal notation: 1.5E+7, 0.00012, 12300
      case 2 ->
          Math.abs(exponent) < 60 ? sign + abs.toPlainString() : ExactNumberOracle.canonical(d);
      case 3 -> {
        // The digits as an integer mantissa and an exponent: 12.5 -> 125e-1, 1250E-2, 125e-1.
        int extraZeros = abs.signum() == 0 ? 0 : r.nextInt(3);
        String mantissa = abs.unscaledValue().toString() + "0".repeat(extraZeros);
        long e = -(long) abs.scale() - extraZeros;
        String mark = r.nextBoolean() ? "e" : "E";
        String plus = e >= 0 && r.nextBoolean() ? "+" : "";
        yield sign + mantissa + mark + plus + e;
      }
      case 4 -> {
        // Leading zeros after "0." and trailing zeros, the point moved into the exponent.
        int shift = r.nextInt(1, 6);
        String plain = abs.movePointLeft(exponent + shift).toPlainString(); // 0.000ddd
        if (!plain.contains(".")) {
          plain += ".0";
        }
        yield sign + plain + "00" + "e" + (exponent + shift);
      }
      default -> {
        // A lone leading digit with a fraction: d.ddd and the exponent, zero-padded: 1.25e0001.
        String unscaled = abs.unscaledValue().toString();
        String mantissa =
            unscaled.length() == 1 ? unscaled : unscaled.charAt(0) + "." + unscaled.substring(1);
        if (abs.signum() == 0) {
          yield sign + "0.0e" + r.nextInt(-400, 400);
        }
        int e = abs.precision() - 1 - abs.scale();
        yield sign + mantissa + "e" + (e < 0 ? "-" : "") + "00" + Math.abs(e);
      }
    };
  }
}
