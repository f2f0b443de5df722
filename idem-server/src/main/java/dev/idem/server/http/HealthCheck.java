package dev.idem.server.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.server.pipeline.Answer;
import dev.idem.spi.DedupStore;
import java.util.List;
import java.util.Map;

/**
 * {@code GET /health}: {@code 200 {"status":"up",...}} when every store answers, else {@code 503}
 * with {@code "status":"down"} and which store failed. No token needed; never shows a secret.
 */
public final class HealthCheck {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final List<DedupStore> stores;

  /**
   * Creates the check.
   *
   * @param stores the stores the pipelines use (each once)
   */
  public HealthCheck(List<DedupStore> stores) {
    this.stores = List.copyOf(stores);
  }

  /**
   * Checks every store.
   *
   * @return the answer
   */
  public Answer check() {
    ObjectNode root = JSON.createObjectNode();
    ArrayNode list = JSON.createArrayNode();
    boolean up = true;
    for (DedupStore s : stores) {
      ObjectNode n = list.addObject();
      n.put("store", s.describe());
      try {
        s.checkHealth();
        n.put("status", "up");
      } catch (RuntimeException e) {
        up = false;
        n.put("status", "down");
        n.put("error", String.valueOf(e.getMessage()));
      }
    }
    root.put("status", up ? "up" : "down");
    root.set("stores", list);
    try {
      Answer a = new Answer(up ? 200 : 503, Answer.JSON, Map.of(), JSON.writeValueAsBytes(root));
      return up ? a : a.withHeader("Retry-After", "5");
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write health JSON", e);
    }
  }
}
