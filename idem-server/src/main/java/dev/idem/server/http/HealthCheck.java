package dev.idem.server.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idem.server.DeferredStore;
import dev.idem.server.pipeline.Answer;
import dev.idem.spi.DedupStore;
import dev.idem.store.redis.RedisDedupStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code GET /health}: {@code 200 {"status":"up",...}} when every store answers, else {@code 503}
 * with {@code "status":"down"}, {@code Retry-After} and which store failed. No token needed; never
 * shows a secret.
 *
 * <ol>
 *   <li>Each store's check runs on a thread of its own, and the answer waits for all of them at
 *       most {@code bound} (default 2 s): a store that has not answered by then is {@code down}
 *       with {@code "did not answer within ..."}, so a stalled store makes {@code /health} a 503
 *       instead of a hang.
 *   <li>A check still running from an earlier request is waited for again rather than started
 *       twice, so polling a stalled store does not pile up threads.
 *   <li>A store that was unreachable at start (and is being retried in the background) is {@code
 *       down} until it opens.
 *   <li>A store that answers but is set up to lose keys (a Redis that evicts, or persists nothing)
 *       is {@code up} with {@code "warnings"}, one sentence per risk.
 *   <li>A store that is a {@link Details} adds its {@code "details"} (a Kafka source's local state:
 *       partitions owned and being restored, offsets left to restore, changelog write errors).
 * </ol>
 */
public final class HealthCheck {
  /** The default bound on one health answer. */
  public static final Duration DEFAULT_BOUND = Duration.ofSeconds(2);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final AtomicInteger THREADS = new AtomicInteger();

  private final List<DedupStore> stores;
  private final long boundNanos;
  private final List<CompletableFuture<Void>> running;
  private final ExecutorService checks =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "idem-health-" + THREADS.incrementAndGet());
            t.setDaemon(true);
            return t;
          });

  /**
   * Creates the check with the default bound.
   *
   * @param stores the stores the pipelines use (each once)
   */
  public HealthCheck(List<DedupStore> stores) {
    this(stores, DEFAULT_BOUND);
  }

  /**
   * Creates the check.
   *
   * @param stores the stores the pipelines use (each once)
   * @param bound how long one answer waits for the stores' checks; positive
   */
  public HealthCheck(List<DedupStore> stores, Duration bound) {
    this.stores = List.copyOf(stores);
    this.boundNanos = Objects.requireNonNull(bound, "bound").toNanos();
    if (boundNanos <= 0) {
      throw new IllegalArgumentException("the health check bound must be positive, got " + bound);
    }
    this.running = new ArrayList<>(this.stores.size());
    for (int i = 0; i < this.stores.size(); i++) {
      running.add(CompletableFuture.completedFuture(null));
    }
  }

  /**
   * Checks every store, waiting at most the bound.
   *
   * @return the answer
   */
  public Answer check() {
    List<CompletableFuture<Void>> futures = start();
    long deadline = System.nanoTime() + boundNanos;
    ObjectNode root = JSON.createObjectNode();
    ArrayNode list = JSON.createArrayNode();
    boolean up = true;
    for (int i = 0; i < stores.size(); i++) {
      DedupStore s = stores.get(i);
      ObjectNode n = list.addObject();
      n.put("store", s.describe());
      String error = await(futures.get(i), deadline);
      if (error == null) {
        n.put("status", "up");
        if (s instanceof Details d) {
          n.set("details", JSON.valueToTree(d.healthDetails()));
        }
        List<String> warnings = warnings(s);
        if (!warnings.isEmpty()) {
          ArrayNode w = n.putArray("warnings");
          warnings.forEach(w::add);
        }
      } else {
        up = false;
        n.put("status", "down");
        n.put("error", error);
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

  /** A store that tells more than up or down (e.g. a local state's restore), under "details". */
  public interface Details {
    /**
     * Returns what {@code /health} shows under the store's {@code "details"}; thread-safe, quick.
     *
     * @return field name to a JSON-writable value
     */
    Map<String, Object> healthDetails();
  }

  /** Starts a check of each store whose previous check has finished. */
  private synchronized List<CompletableFuture<Void>> start() {
    for (int i = 0; i < stores.size(); i++) {
      if (running.get(i).isDone()) {
        DedupStore s = stores.get(i);
        running.set(i, CompletableFuture.runAsync(s::checkHealth, checks));
      }
    }
    return List.copyOf(running);
  }

  /** Returns null if the check passed by the deadline, else what went wrong. */
  private String await(CompletableFuture<Void> f, long deadline) {
    try {
      f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      return null;
    } catch (TimeoutException e) {
      return "did not answer within "
          + TimeUnit.NANOSECONDS.toMillis(boundNanos)
          + "ms (the store is stalled or overloaded)";
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      return String.valueOf(cause.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "the health check was interrupted";
    }
  }

  private static List<String> warnings(DedupStore s) {
    DedupStore target = s instanceof DeferredStore d ? d.opened() : s;
    return target instanceof RedisDedupStore r ? r.durabilityRisks() : List.of();
  }
}
