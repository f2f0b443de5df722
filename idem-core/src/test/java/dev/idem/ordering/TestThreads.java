package dev.idem.ordering;

import static dev.idem.ordering.Eventually.await;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

/** Starts test threads, remembers what they threw, and joins them without sleeping. */
final class TestThreads {

  /** A body that may throw anything; a failure is rethrown by {@link #joinAll()}. */
  @FunctionalInterface
  interface Body {
    void run() throws Exception;
  }

  /** One started thread and what it threw. */
  static final class Started {
    final Thread thread;
    final AtomicReference<Throwable> failure = new AtomicReference<>();

    Started(Thread thread) {
      this.thread = thread;
    }

    /** Waits for the thread to end and returns what it threw, if anything. */
    Throwable awaitFailure() {
      awaitEnd();
      return failure.get();
    }

    void awaitEnd() {
      await().until(() -> !thread.isAlive());
    }
  }

  private final List<Started> started = new CopyOnWriteArrayList<>();

  Started start(String name, Body body) {
    AtomicReference<Started> self = new AtomicReference<>();
    Thread t =
        new Thread(
            () -> {
              try {
                body.run();
              } catch (Throwable e) {
                self.get().failure.set(e);
              }
            },
            name);
    Started s = new Started(t);
    self.set(s);
    started.add(s);
    t.start();
    return s;
  }

  /** Returns the threads started so far. */
  List<Started> started() {
    return List.copyOf(started);
  }

  /** Waits for every thread and fails with the first thing one of them threw. */
  void joinAll() throws Exception {
    for (Started s : started) {
      s.awaitEnd();
    }
    for (Started s : started) {
      Throwable f = s.failure.get();
      if (f instanceof Exception e) {
        throw e;
      }
      if (f instanceof Error e) {
        throw e;
      }
    }
  }
}
