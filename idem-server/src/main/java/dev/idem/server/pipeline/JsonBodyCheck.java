package dev.idem.server.pipeline;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import java.io.IOException;
import org.jspecify.annotations.Nullable;

/**
 * Checks that a webhook body is one well-formed JSON value within explicit limits, in one streaming
 * pass without building a tree: nesting depth, string and number lengths, and no duplicate field
 * names in any object (which JSON parsers resolve differently, so a signed body could mean two
 * things).
 */
public final class JsonBodyCheck {
  /** The longest number accepted, in characters. */
  static final int MAX_NUMBER_LENGTH = 100;

  private final JsonFactory factory;
  private final int maxDepth;

  /**
   * Creates a check.
   *
   * @param maxDepth the deepest nesting of arrays and objects accepted
   * @param maxBody the body limit; no string in it can be longer
   */
  public JsonBodyCheck(int maxDepth, long maxBody) {
    this.maxDepth = maxDepth;
    this.factory =
        JsonFactory.builder()
            .streamReadConstraints(
                StreamReadConstraints.builder()
                    .maxNestingDepth(maxDepth)
                    .maxNumberLength(MAX_NUMBER_LENGTH)
                    .maxStringLength((int) Math.min(Integer.MAX_VALUE, Math.max(1, maxBody)))
                    .maxNameLength((int) Math.min(50_000, Math.max(1, maxBody)))
                    .build())
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();
  }

  /**
   * Returns the factory configured with this check's limits, for other readers of the same body.
   *
   * @return the JSON factory
   */
  public JsonFactory factory() {
    return factory;
  }

  /**
   * Checks a body.
   *
   * @param body the raw body
   * @return null if it is fine, else the error answer ({@code 400})
   */
  public @Nullable Answer check(byte[] body) {
    try (JsonParser p = factory.createParser(body)) {
      JsonToken t = p.nextToken();
      if (t == null) {
        return Answer.error(400, "malformed_json", "the body is empty; send one JSON value");
      }
      p.skipChildren();
      if (p.nextToken() != null) {
        return Answer.error(
            400, "malformed_json", "the body has content after its JSON value; send one value");
      }
      return null;
    } catch (StreamConstraintsException e) {
      String m = e.getOriginalMessage();
      if (m != null && m.contains("nesting depth")) {
        return Answer.error(
            400,
            "nesting_too_deep",
            "the JSON is nested deeper than " + maxDepth + " levels; flatten it");
      }
      return Answer.error(400, "malformed_json", "the JSON exceeds a limit: " + m);
    } catch (IOException e) {
      String m =
          e instanceof com.fasterxml.jackson.core.JsonProcessingException j
              ? j.getOriginalMessage()
              : e.getMessage();
      if (m != null && m.startsWith("Duplicate field")) {
        return Answer.error(400, "duplicate_field", m + "; send each field name once per object");
      }
      return Answer.error(400, "malformed_json", "the body is not valid JSON: " + firstLine(m));
    }
  }

  private static String firstLine(@Nullable String m) {
    if (m == null) {
      return "parse error";
    }
    int nl = m.indexOf('\n');
    return nl < 0 ? m : m.substring(0, nl);
  }
}
