package dev.idem.server.deliver;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A sink for tests: answers each attempt from a per-key script (default: delivered), records every
 * attempt, can hold an attempt until the test releases it, and checks that no two attempts of one
 * ordering key ever overlap.
 */
final class ScriptedSink implements Sink {
  private final Map<String, Deque<DeliveryOutcome>> scripts = new HashMap<>();
  private final List<String> attempts = new ArrayList<>();
  private final List<String> delivered = new ArrayList<>();
  private final Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();
  private final Set<String> inProgress = new HashSet<>();
  private final Set<String> busyOrderingKeys = new HashSet<>();
  private final AtomicInteger concurrent = new AtomicInteger();
  private int maxConcurrent;
  private int orderingViolations;
  private boolean closed;

  /** Scripts the next attempts of one idempotency key; later attempts are delivered. */
  synchronized ScriptedSink script(String key, DeliveryOutcome... outcomes) {
    scripts.computeIfAbsent(key, k -> new ArrayDeque<>()).addAll(List.of(outcomes));
    return this;
  }

  /** Makes attempts of this key wait until {@link #release} is called. */
  void hold(String key) {
    gates.put(key, new CountDownLatch(1));
  }

  void releaseAll() {
    for (String key : List.copyOf(gates.keySet())) {
      release(key);
    }
  }

  void release(String key) {
    CountDownLatch gate = gates.remove(key);
    if (gate != null) {
      gate.countDown();
    }
  }

  @Override
  public DeliveryOutcome deliver(Delivery d) {
    String key = d.idempotencyKey();
    String orderingKey = d.orderingKey();
    synchronized (this) {
      attempts.add(key);
      inProgress.add(key);
      if (orderingKey != null && !busyOrderingKeys.add(orderingKey)) {
        orderingViolations++;
      }
      maxConcurrent = Math.max(maxConcurrent, concurrent.incrementAndGet());
    }
    try {
      CountDownLatch gate = gates.get(key);
      if (gate != null && !gate.await(30, TimeUnit.SECONDS)) {
        throw new AssertionError("held attempt of " + key + " was never released");
      }
      DeliveryOutcome outcome;
      synchronized (this) {
        Deque<DeliveryOutcome> script = scripts.get(key);
        outcome = script == null || script.isEmpty() ? null : script.poll();
        if (outcome == null) {
          outcome = new DeliveryOutcome.Delivered(200, null, null);
        }
        if (outcome instanceof DeliveryOutcome.Delivered) {
          delivered.add(key);
        }
      }
      return outcome;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new DeliveryOutcome.Failed("interrupted", true);
    } finally {
      synchronized (this) {
        concurrent.decrementAndGet();
        inProgress.remove(key);
        if (orderingKey != null) {
          busyOrderingKeys.remove(orderingKey);
        }
      }
    }
  }

  synchronized List<String> attempts() {
    return List.copyOf(attempts);
  }

  synchronized List<String> delivered() {
    return List.copyOf(delivered);
  }

  synchronized boolean inProgress(String key) {
    return inProgress.contains(key);
  }

  synchronized int maxConcurrent() {
    return maxConcurrent;
  }

  synchronized int orderingViolations() {
    return orderingViolations;
  }

  synchronized boolean closed() {
    return closed;
  }

  @Override
  public String describe() {
    return "scripted";
  }

  @Override
  public synchronized void close() {
    closed = true;
  }
}
