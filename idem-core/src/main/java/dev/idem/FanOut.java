package dev.idem;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Settles one reservation from several children (a dedup step before a split): the parent key is
 * committed after every child succeeded, and released as soon as any child fails, so a resend of
 * the parent can try again. Each child reports once through its own {@link Child} handle.
 * Thread-safe: children may report from different threads.
 */
public final class FanOut {
  private final Reservation parent;
  private final int children;
  private final AtomicInteger handedOut = new AtomicInteger();
  private final AtomicInteger succeeded = new AtomicInteger();
  private final AtomicBoolean settled = new AtomicBoolean();

  FanOut(Reservation parent, int children) {
    if (children < 1) {
      throw new IllegalArgumentException("a fan-out needs at least one child, got " + children);
    }
    this.parent = parent;
    this.children = children;
  }

  /**
   * Returns the next child's handle.
   *
   * @return a single-use handle
   * @throws IllegalStateException if all children's handles were handed out
   */
  public Child child() {
    if (handedOut.incrementAndGet() > children) {
      throw new IllegalStateException(
          "fan-out of " + parent.key() + " has only " + children + " children");
    }
    return new Child();
  }

  /**
   * Returns whether the parent has been settled.
   *
   * <p>If the settling commit or release failed with {@link StoreUnavailableException}, the parent
   * stays open and this returns false; the fan-out does not retry: settle the parent {@link
   * Reservation} directly (or let its lease expire).
   *
   * @return true once the parent is committed, released or found to have lost its lease
   */
  public boolean isSettled() {
    return parent.settlement() != null;
  }

  /** One child's single-use report. */
  public final class Child {
    private final AtomicBoolean reported = new AtomicBoolean();

    private Child() {}

    /**
     * Reports success; the last success commits the parent.
     *
     * @throws IllegalStateException if this child already reported
     */
    public void succeeded() {
      once();
      if (succeeded.incrementAndGet() == children && settled.compareAndSet(false, true)) {
        parent.commit();
      }
    }

    /**
     * Reports failure; the first failure releases the parent.
     *
     * @throws IllegalStateException if this child already reported
     */
    public void failed() {
      once();
      if (settled.compareAndSet(false, true)) {
        parent.release();
      }
    }

    private void once() {
      if (!reported.compareAndSet(false, true)) {
        throw new IllegalStateException("a fan-out child of " + parent.key() + " reports once");
      }
    }
  }
}
