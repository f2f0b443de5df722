package dev.idem.benchmarks;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.DedupKey;
import dev.idem.key.InboundEvent;
import dev.idem.key.KeyRule;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The default key (principal chain + SHA-256 of the canonical JSON body: RFC 8785 with numbers by
 * their exact decimal value) on a 1 KiB body, next to its anchors on the same bytes, in the same
 * run:
 *
 * <ul>
 *   <li>{@code rawSha256}: SHA-256 of the raw body, the floor (target: idem at least 25% of it);
 *   <li>{@code naiveTreeCanonicalHash}: what one writes without a streaming canonicalizer: Jackson
 *       {@code readTree}, sort every object's fields into a new tree, {@code writeValueAsBytes},
 *       SHA-256 (target: idem faster).
 * </ul>
 *
 * <p>Two bodies ({@link #shape}): {@code order}, a webhook ({@link #BODY}); and {@code numbers},
 * the same size of numbers in every spelling that the exact form must rewrite (64-bit ids, trailing
 * zeros, exponents, long decimals). All three benchmarks process the same {@value #BODY_BYTES}
 * bytes once per operation, so bytes/s = ops/s x {@value #BODY_BYTES} and the ops/s ratios are the
 * throughput ratios. Run: {@code java -jar idem-benchmarks/target/benchmarks.jar KeyDerivation -f 1
 * -wi 5 -w 1 -i 5 -r 1 -t 1} (and {@code -t 2}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class KeyDerivationBenchmark {
  /** The body's size in bytes (checked in {@link #setUp()}). */
  public static final int BODY_BYTES = 1024;

  /**
   * A Shopify/Stripe-like order webhook: nested objects, arrays, escapes, non-ASCII text, integers,
   * decimals, booleans and nulls, members in the sender's (unsorted) order.
   */
  static final String BODY =
      "{\"id\":5935178948745,"
          + "\"created_at\":\"2026-11-30T09:12:44-05:00\",\"currency\":\"EUR\",\"total_price\":"
          + "129.95,\"subtotal_price\":119.96,\"total_tax\":20.74,\"taxes_included\":true,"
          + "\"financial_status\":\"paid\",\"fulfillment_status\":null,\"confirmed\":true,"
          + "\"email\":\"zoë.müller@example.com\",\"note\":\"Bitte an der Tür abstellen \\u2013"
          + " danke!\",\"tags\":[\"vip\",\"wholesale\",\"🎁 gift\"],\"customer\":{\"id\":"
          + "7134568923,\"first_name\":\"Zoë\",\"last_name\":\"Müller\",\"orders_count\":1700,"
          + "\"verified_email\":true,\"accepts_marketing\":false},\"shipping_address\":{"
          + "\"address1\":\"Hauptstraße 5\",\"city\":\"München\",\"zip\":\"D-80331\",\"country_code\":"
          + "\"DE\",\"latitude\":48.1371079,\"longitude\":11.5753822},\"line_items\":[{\"id\":"
          + "13648093528201,\"sku\":\"TEE-BLK-M\",\"title\":\"T-Shirts \\\"Classic\\\"\","
          + "\"quantity\":2,\"price\":29.99,\"taxable\":true,\"properties\":[]},{\"id\":"
          + "13648093560969,\"sku\":\"MUG-01\",\"title\":\"Tasse – 350 ml\",\"quantity\":1,"
          + "\"price\":59.98,\"grams\":420,\"taxable\":true,\"discount_allocations\":[{\"amount\":"
          + "5.0,\"discount_application_index\":0}]}],\"shipping_lines\":[{\"code\":\"DHL\","
          + "\"price\":9.99}]}";

  /** {@code numbers}: a JSON object of numbers, built by {@link #numbersBody()}. */
  static final String[] NUMBERS = {
    "820982911946154508", "5935178948745", "-12.50", "1.0E3", "0.000001", "129.95", "1e-7",
    "3.14159265358979323846", "2.5e+2", "100", "0.10", "-0", "18446744073709551615",
        "6.02214076e23",
    "1.7976931348623157e308", "42", "0.000012300", "7E-10", "-98765.4321000", "1e21"
  };

  /** Which body: {@code order} or {@code numbers}. */
  @Param({"order", "numbers"})
  public String shape;

  private final ObjectMapper mapper = new ObjectMapper();
  private final KeyRule defaultKey = KeyRule.defaultKey();
  private byte[] body;
  private InboundEvent event;
  private MessageDigest sha;

  /** Builds the event and checks the body's size. */
  @Setup
  public void setUp() throws NoSuchAlgorithmException {
    body = (shape.equals("numbers") ? numbersBody() : BODY).getBytes(StandardCharsets.UTF_8);
    if (body.length != BODY_BYTES) {
      throw new IllegalStateException("the body is " + body.length + " bytes, not " + BODY_BYTES);
    }
    event = InboundEvent.builder().body(body).principal("https://auth.example", "shop-42").build();
    sha = MessageDigest.getInstance("SHA-256");
  }

  /**
   * Returns a {@value #BODY_BYTES}-byte JSON object whose members are {@link #NUMBERS}, cycled,
   * padded with one string member.
   */
  static String numbersBody() {
    StringBuilder sb = new StringBuilder("{");
    for (int i = 0; sb.length() < BODY_BYTES - 60; i++) {
      sb.append('"').append('n').append(i).append("\":").append(NUMBERS[i % NUMBERS.length]);
      sb.append(',');
    }
    sb.append("\"pad\":\"");
    while (sb.length() < BODY_BYTES - 2) {
      sb.append('x');
    }
    return sb.append("\"}").toString();
  }

  /** Idem's default key: principal chain + SHA-256 of the canonical body. */
  @Benchmark
  public DedupKey idemDefaultKey() {
    return defaultKey.derive(event);
  }

  /** The floor: SHA-256 of the raw bytes. */
  @Benchmark
  public byte[] rawSha256() {
    return sha.digest(body);
  }

  /** The naive path: parse to a tree, sort it into a new tree, serialise, hash. */
  @Benchmark
  public byte[] naiveTreeCanonicalHash() throws Exception {
    JsonNode sorted = sort(mapper.readTree(body));
    return sha.digest(mapper.writeValueAsBytes(sorted));
  }

  private static JsonNode sort(JsonNode node) {
    if (node.isObject()) {
      TreeMap<String, JsonNode> fields = new TreeMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        fields.put(e.getKey(), sort(e.getValue()));
      }
      ObjectNode out = JsonNodeFactory.instance.objectNode();
      fields.forEach(out::set);
      return out;
    }
    if (node.isArray()) {
      ArrayNode out = JsonNodeFactory.instance.arrayNode(node.size());
      for (JsonNode element : node) {
        out.add(sort(element));
      }
      return out;
    }
    return node;
  }
}
