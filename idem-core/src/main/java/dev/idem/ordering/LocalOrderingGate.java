package dev.idem.ordering;

import dev.idem.IdemException;
import dev.idem.TimeSource;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The in-process {@link OrderingGate}: orders the events of one JVM. Build one with {@link
 * #create(OrderingConfig)} or {@link #builder(OrderingConfig)}; close it when the pipeline stops.
 *
 * <p>How it works, and what it costs:
 *
 * <ul>
 *   <li>A key has state only while it is busy: its holder and a FIFO queue of waiters, created by
 *       the first arrival and removed when the last holder releases with nobody waiting. Memory
 *       returns to nothing once keys go idle ({@link #activeKeys()} counts busy keys). An
 *       uncontended turn costs one map insert and one remove; events of different keys share no
 *       lock.
 *   <li>There is no thread and no executor per key. A blocked {@link #acquire} parks its own thread
 *       (cheap on a virtual thread); an {@link #acquireAsync} waiter is a future in the queue,
 *       completed on the gate's executor when its turn comes.
 *   <li>{@code lockTtl} is measured with the {@link TimeSource}'s monotonic clock from the moment a
 *       turn is granted. A holder past it is overtaken when the next event arrives, when the holder
 *       releases, and, while events wait, by one timer task per waiting key on a single shared
 *       scheduler (no polling; a key nobody waits for needs no timer). {@link #expireOverdue()}
 *       applies the TTL on demand, e.g. after stepping a {@link dev.idem.ManualTimeSource}.
 * </ul>
 *
 * <p>Thread-safe. See {@link OrderingGate} for the guarantees.
 */
public final class LocalOrderingGate implements OrderingGate {

  /** Where async waiters are completed unless told otherwise: CompletableFuture's async pool. */
  private static final Executor DEFAULT_EXECUTOR = new CompletableFuture<Void>().defaultExecutor();

  private static final VarHandle CLOSED;

  static {
    try {
      CLOSED =
          MethodHandles.lookup().findVarHandle(LocalOrderingGate.class, "closed", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final OrderingConfig config;
  private final boolean strict;
  private final long ttlNanos;
  private final TimeSource time;
  private final OrderingListener listener;
  private final ScheduledExecutorService scheduler;
  private final boolean ownsScheduler;
  private final Executor executor;
  private final ConcurrentHashMap<String, KeyState> states = new ConcurrentHashMap<>();

  @SuppressWarnings("unused") // written through CLOSED
  private volatile boolean closed;

  private LocalOrderingGate(Builder b) {
    this.config = b.config;
    this.strict = b.config.mode() == OrderingMode.STRICT;
    this.ttlNanos = saturatedNanos(b.config.lockTtl());
    this.time = b.time;
    this.listener = b.listener;
    this.executor = b.executor;
    ScheduledExecutorService given = b.scheduler;
    this.ownsScheduler = given == null;
    this.scheduler = given == null ? newTimer() : given;
  }

  /**
   * Returns a gate with the system clocks, no listener and its own timer thread (started only while
   * events wait).
   *
   * @param config the mode and lock TTL
   * @return a new gate
   */
  public static LocalOrderingGate create(OrderingConfig config) {
    return builder(config).build();
  }

  /**
   * Returns a builder for a gate with the given config.
   *
   * @param config the mode and lock TTL
   * @return a new builder
   */
  public static Builder builder(OrderingConfig config) {
    return new Builder(config);
  }

  @Override
  public OrderingConfig config() {
    return config;
  }

  @Override
  public Permit acquire(String orderingKey) throws InterruptedException {
    checkKey(orderingKey);
    if (strict && Thread.interrupted()) {
      throw interrupted(orderingKey);
    }
    Object arrival = arrive(orderingKey, false);
    if (arrival instanceof Permit) {
      return (Permit) arrival;
    }
    Waiter w = (Waiter) arrival;
    Object outcome;
    while ((outcome = w.outcome) == null) {
      LockSupport.park(this);
      if (Thread.interrupted()) {
        withdraw(w);
        if (w.outcome instanceof LocalPermit granted) {
          granted.close(); // the turn reached us as we were interrupted: pass it on
        }
        throw interrupted(orderingKey);
      }
    }
    if (outcome == Waiter.GATE_CLOSED) {
      throw new OrderingGateClosedException(orderingKey);
    }
    return (Permit) outcome;
  }

  @Override
  public CompletableFuture<Permit> acquireAsync(String orderingKey) {
    checkKey(orderingKey);
    Object arrival;
    try {
      arrival = arrive(orderingKey, true);
    } catch (IdemException e) {
      return CompletableFuture.failedFuture(e);
    }
    if (arrival instanceof Permit) {
      return CompletableFuture.completedFuture((Permit) arrival);
    }
    return ((Waiter) arrival).future();
  }

  /**
   * Closes the gate: it grants no more turns, every waiter fails with {@link
   * OrderingGateClosedException} (async waiters' futures are completed on the calling thread), and
   * later calls fail too. Granted permits stay valid until closed; their keys are forgotten as they
   * close. Stops the gate's own timer thread, never a scheduler that was passed in. Idempotent.
   */
  @Override
  public void close() {
    if (!CLOSED.compareAndSet(this, false, true)) {
      return;
    }
    for (KeyState s : states.values()) {
      Waiter failed;
      synchronized (s) {
        failed = s.head;
        for (Waiter w = failed; w != null; w = w.next) {
          w.queued = false;
          w.outcome = Waiter.GATE_CLOSED;
        }
        s.head = null;
        s.tail = null;
        cancelTimer(s);
      }
      for (Waiter w = failed; w != null; ) {
        Waiter next = w.next;
        w.prev = null;
        w.next = null;
        w.fail(s.key);
        w = next;
      }
    }
    if (ownsScheduler) {
      scheduler.shutdownNow();
    }
  }

  /**
   * Returns how many keys are busy: held, or waited for. Zero once every permit has been closed;
   * for metrics and tests.
   *
   * @return the number of keys with state
   */
  public int activeKeys() {
    return states.size();
  }

  /**
   * Applies {@code lockTtl} now rather than when the gate next notices: for every key whose holder
   * has held it for {@code lockTtl} or longer, presumes the holder dead and lets the key's next
   * waiter through, or forgets the key if nobody waits (a leaked permit). Reports each to {@link
   * OrderingListener#onLockExpired}.
   *
   * <p>The gate does this by itself for keys that have waiters; call it after stepping a {@link
   * dev.idem.ManualTimeSource} in tests, or periodically to forget keys whose permits may have
   * leaked without anyone asking for the key again.
   *
   * @return how many keys' holders were presumed dead
   */
  public int expireOverdue() {
    int expired = 0;
    for (KeyState s : states.values()) {
      if (expire(s, false)) {
        expired++;
      }
    }
    return expired;
  }

  /** Returns how many events wait for the key (not counting its holder); for tests. */
  int queued(String orderingKey) {
    KeyState s = states.get(orderingKey);
    if (s == null) {
      return 0;
    }
    synchronized (s) {
      int n = 0;
      for (Waiter w = s.head; w != null; w = w.next) {
        n++;
      }
      return n;
    }
  }

  @Override
  public String toString() {
    return "LocalOrderingGate["
        + config.mode()
        + ", lockTtl="
        + config.lockTtl()
        + ", activeKeys="
        + states.size()
        + (closed ? ", closed]" : "]");
  }

  // ---------------------------------------------------------------------------------------------
  // The per-key protocol. Every change to a KeyState happens under its monitor; a state is
  // removed from the map (and marked dead, so late finders retry) in the same critical section
  // that finds it idle, so an arrival never joins a state that is being discarded. Waiters are
  // woken and listeners called after the monitor is released.
  // ---------------------------------------------------------------------------------------------

  /**
   * Registers an arrival: returns a {@link Permit} if the turn is granted at once (or, in best
   * effort, a non-exclusive one), else the queued {@link Waiter}.
   */
  private Object arrive(String key, boolean async) {
    for (; ; ) {
      if (closed) {
        throw new OrderingGateClosedException(key);
      }
      KeyState s = states.get(key);
      if (s == null) {
        KeyState fresh = new KeyState(key);
        LocalPermit p = new LocalPermit(this, fresh, time.monotonicNanos());
        fresh.holder = p;
        if (states.putIfAbsent(key, fresh) == null) {
          return p;
        }
        continue;
      }
      Object result;
      Waiter granted = null;
      long expiredHeld = -1;
      boolean timerRejected = false;
      synchronized (s) {
        if (s.dead) {
          continue; // released and removed after we found it: look again
        }
        if (closed) {
          throw new OrderingGateClosedException(key);
        }
        long now = time.monotonicNanos();
        LocalPermit holder = s.holder;
        long held = now - holder.grantedNanos;
        boolean overdue = held >= ttlNanos;
        if (overdue && s.head == null) {
          holder.superseded = true;
          LocalPermit p = new LocalPermit(this, s, now);
          s.holder = p;
          expiredHeld = held;
          result = p;
        } else if (!strict) {
          result = new SharedPermit(key);
        } else {
          Waiter w = async ? Waiter.async(this, s) : Waiter.blocking(s, Thread.currentThread());
          s.append(w);
          if (overdue) {
            holder.superseded = true;
            expiredHeld = held;
            granted = grantHead(s, now); // an earlier waiter, the timer has not run yet
          }
          if (!scheduleTimer(s, now)) {
            s.unlink(w);
            timerRejected = true;
          }
          result = w;
        }
      }
      signal(granted);
      if (expiredHeld >= 0) {
        reportExpired(key, expiredHeld);
      }
      if (timerRejected) {
        throw new IdemException(
            "ordering gate's scheduler rejected the lockTtl timer for key '"
                + key
                + "' (was the scheduler passed to LocalOrderingGate.builder shut down?); "
                + "close the gate before its scheduler");
      }
      return result;
    }
  }

  /** Releases a permit's turn; a permit that no longer holds it (taken over) changes nothing. */
  void release(LocalPermit p) {
    KeyState s = p.state;
    Waiter granted = null;
    long held;
    synchronized (s) {
      long now = time.monotonicNanos();
      held = now - p.grantedNanos;
      if (!s.dead && s.holder == p) {
        if (s.head == null) {
          discard(s);
        } else {
          granted = grantHead(s, now);
        }
      }
    }
    signal(granted);
    if (held >= ttlNanos) {
      try {
        listener.onLateRelease(s.key, Duration.ofNanos(held));
      } catch (RuntimeException ignored) {
        // A listener must never break ordering.
      }
    }
  }

  /** Removes a waiter that gave up; if its turn had already come, the caller passes it on. */
  void withdraw(Waiter w) {
    KeyState s = w.state;
    synchronized (s) {
      if (w.queued) {
        s.unlink(w);
      }
    }
  }

  /** Takes the turn away from an overdue holder. */
  private boolean expire(KeyState s, boolean fromTimer) {
    Waiter granted = null;
    long held;
    synchronized (s) {
      if (fromTimer) {
        s.timer = null;
      }
      if (s.dead || (fromTimer && s.head == null)) {
        return false;
      }
      long now = time.monotonicNanos();
      held = now - s.holder.grantedNanos;
      if (held >= ttlNanos) {
        s.holder.superseded = true;
        if (s.head == null) {
          discard(s);
        } else {
          granted = grantHead(s, now);
        }
      }
      if (s.head != null) {
        scheduleTimer(s, now); // if rejected, the gate or its scheduler is shutting down
      }
    }
    signal(granted);
    if (held < ttlNanos) {
      return false;
    }
    reportExpired(s.key, held);
    return true;
  }

  /** Under the state's monitor: hands the turn to the first waiter. */
  private Waiter grantHead(KeyState s, long now) {
    Waiter w = s.head;
    s.unlink(w);
    LocalPermit p = new LocalPermit(this, s, now);
    s.holder = p;
    w.outcome = p;
    return w;
  }

  /** Under the state's monitor: the key is idle, forget it. */
  private void discard(KeyState s) {
    s.dead = true;
    cancelTimer(s);
    states.remove(s.key, s);
  }

  /** Under the state's monitor: makes sure a timer will apply lockTtl to the current holder. */
  private boolean scheduleTimer(KeyState s, long now) {
    if (s.timer != null) {
      return true;
    }
    long delay = ttlNanos - (now - s.holder.grantedNanos);
    try {
      Runnable task = () -> expire(s, true);
      s.timer = scheduler.schedule(task, delay, TimeUnit.NANOSECONDS);
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  private static void cancelTimer(KeyState s) {
    ScheduledFuture<?> t = s.timer;
    if (t != null) {
      s.timer = null;
      t.cancel(false);
    }
  }

  /** After the monitor is released: tells a waiter its turn came. */
  private void signal(@Nullable Waiter w) {
    if (w == null) {
      return;
    }
    Thread t = w.thread;
    if (t != null) {
      LockSupport.unpark(t);
      return;
    }
    try {
      executor.execute(w);
    } catch (RejectedExecutionException e) {
      w.run();
    }
  }

  private void reportExpired(String key, long heldNanos) {
    try {
      listener.onLockExpired(key, Duration.ofNanos(heldNanos));
    } catch (RuntimeException ignored) {
      // A listener must never break ordering.
    }
  }

  long elapsedSince(long grantedNanos) {
    return time.monotonicNanos() - grantedNanos;
  }

  long ttlNanos() {
    return ttlNanos;
  }

  private static void checkKey(String orderingKey) {
    Objects.requireNonNull(orderingKey, "orderingKey");
    if (orderingKey.isEmpty()) {
      throw new IllegalArgumentException(
          "ordering key must not be empty; derive it from a field every event has");
    }
  }

  private static InterruptedException interrupted(String key) {
    return new InterruptedException(
        "interrupted while waiting for the turn of ordering key '" + key + "'; request withdrawn");
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException tooLong) {
      return Long.MAX_VALUE;
    }
  }

  private static ScheduledExecutorService newTimer() {
    ScheduledThreadPoolExecutor timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "idem-ordering-ttl");
              t.setDaemon(true);
              return t;
            });
    // Timers are cancelled whenever a key goes idle: drop them at once, and let the thread end
    // while no key has waiters.
    timer.setRemoveOnCancelPolicy(true);
    timer.setKeepAliveTime(1, TimeUnit.SECONDS);
    timer.allowCoreThreadTimeOut(true);
    return timer;
  }

  /** A busy key: its holder and its waiters, guarded by this object's monitor. */
  static final class KeyState {
    final String key;
    LocalPermit holder; // set before the state is published, never null afterwards
    @Nullable Waiter head;
    @Nullable Waiter tail;
    @Nullable ScheduledFuture<?> timer;
    boolean dead;

    KeyState(String key) {
      this.key = key;
    }

    void append(Waiter w) {
      w.prev = tail;
      if (tail == null) {
        head = w;
      } else {
        tail.next = w;
      }
      tail = w;
      w.queued = true;
    }

    void unlink(Waiter w) {
      Waiter p = w.prev;
      Waiter n = w.next;
      if (p == null) {
        head = n;
      } else {
        p.next = n;
      }
      if (n == null) {
        tail = p;
      } else {
        n.prev = p;
      }
      w.prev = null;
      w.next = null;
      w.queued = false;
    }
  }

  /**
   * An event waiting for its key's turn: a parked thread, or a future to complete. As a {@link
   * Runnable} it delivers a granted permit to its future on the gate's executor.
   */
  static final class Waiter implements Runnable {
    /** The outcome of a waiter failed by {@link LocalOrderingGate#close()}. */
    static final Object GATE_CLOSED = new Object();

    final KeyState state;
    final @Nullable Thread thread;
    private @Nullable PermitFuture future;
    @Nullable Waiter prev;
    @Nullable Waiter next;
    boolean queued; // guarded by state's monitor

    /** Null while waiting; then the granted LocalPermit or GATE_CLOSED, set under the monitor. */
    volatile @Nullable Object outcome;

    private Waiter(KeyState state, @Nullable Thread thread) {
      this.state = state;
      this.thread = thread;
    }

    static Waiter blocking(KeyState state, Thread thread) {
      return new Waiter(state, thread);
    }

    static Waiter async(LocalOrderingGate gate, KeyState state) {
      Waiter w = new Waiter(state, null);
      w.future = new PermitFuture(gate, w);
      return w;
    }

    PermitFuture future() {
      return Objects.requireNonNull(future);
    }

    void fail(String key) {
      if (thread != null) {
        LockSupport.unpark(thread);
      } else {
        future().fail(new OrderingGateClosedException(key));
      }
    }

    @Override
    public void run() {
      LocalPermit p = (LocalPermit) Objects.requireNonNull(outcome);
      if (!future().grant(p)) {
        p.close(); // the caller cancelled as the turn arrived: pass it on
      }
    }
  }

  /**
   * The future {@link #acquireAsync} returns. Completing it from outside (cancel, orTimeout,
   * complete) withdraws the request; only the gate grants the permit.
   */
  static final class PermitFuture extends CompletableFuture<Permit> {
    private final LocalOrderingGate gate;
    private final Waiter waiter;

    PermitFuture(LocalOrderingGate gate, Waiter waiter) {
      this.gate = gate;
      this.waiter = waiter;
    }

    boolean grant(Permit p) {
      return super.complete(p);
    }

    void fail(Throwable t) {
      super.completeExceptionally(t);
    }

    @Override
    public boolean complete(Permit value) {
      return withdrawIf(super.complete(value));
    }

    @Override
    public boolean completeExceptionally(Throwable ex) {
      return withdrawIf(super.completeExceptionally(ex));
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      return withdrawIf(super.cancel(mayInterruptIfRunning));
    }

    @Override
    public void obtrudeValue(Permit value) {
      throw new UnsupportedOperationException("the ordering gate decides this future's outcome");
    }

    @Override
    public void obtrudeException(Throwable ex) {
      throw new UnsupportedOperationException("the ordering gate decides this future's outcome");
    }

    private boolean withdrawIf(boolean completedByCaller) {
      if (completedByCaller) {
        gate.withdraw(waiter);
      }
      return completedByCaller;
    }
  }

  /** An exclusive turn: fenced by identity, the state's holder is this permit or it is not. */
  static final class LocalPermit implements Permit {
    private static final VarHandle PERMIT_CLOSED;

    static {
      try {
        PERMIT_CLOSED =
            MethodHandles.lookup().findVarHandle(LocalPermit.class, "closed", boolean.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    private final LocalOrderingGate gate;
    final KeyState state;
    final long grantedNanos;

    /** Set when the turn was taken over after lockTtl; read by {@link #held()}. */
    volatile boolean superseded;

    @SuppressWarnings("unused") // written through PERMIT_CLOSED
    private volatile boolean closed;

    LocalPermit(LocalOrderingGate gate, KeyState state, long grantedNanos) {
      this.gate = gate;
      this.state = state;
      this.grantedNanos = grantedNanos;
    }

    @Override
    public String orderingKey() {
      return state.key;
    }

    @Override
    public boolean exclusive() {
      return true;
    }

    @Override
    public boolean held() {
      return !closed && !superseded && gate.elapsedSince(grantedNanos) < gate.ttlNanos();
    }

    @Override
    public void close() {
      if (PERMIT_CLOSED.compareAndSet(this, false, true)) {
        gate.release(this);
      }
    }

    @Override
    public String toString() {
      return "Permit[" + state.key + (held() ? ", held]" : ", not held]");
    }
  }

  /** A best-effort event that proceeds without the lock: nothing to release. */
  static final class SharedPermit implements Permit {
    private final String key;

    SharedPermit(String key) {
      this.key = key;
    }

    @Override
    public String orderingKey() {
      return key;
    }

    @Override
    public boolean exclusive() {
      return false;
    }

    @Override
    public boolean held() {
      return false;
    }

    @Override
    public void close() {
      // Never held the lock: nothing to release.
    }

    @Override
    public String toString() {
      return "Permit[" + key + ", not exclusive]";
    }
  }

  /** Builds a {@link LocalOrderingGate}; not thread-safe. */
  public static final class Builder {
    private final OrderingConfig config;
    private TimeSource time = TimeSource.system();
    private OrderingListener listener = OrderingListener.NOOP;
    private @Nullable ScheduledExecutorService scheduler;
    private Executor executor = DEFAULT_EXECUTOR;

    private Builder(OrderingConfig config) {
      this.config = Objects.requireNonNull(config, "config");
    }

    /**
     * Sets the clock {@code lockTtl} is measured with (its monotonic counter). Default: the system
     * clocks.
     *
     * @param time the time source; a {@link dev.idem.ManualTimeSource} in tests
     * @return this builder
     */
    public Builder timeSource(TimeSource time) {
      this.time = Objects.requireNonNull(time, "time");
      return this;
    }

    /**
     * Sets who hears about holders presumed dead and late releases. Default: nobody.
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder listener(OrderingListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Sets the scheduler that runs {@code lockTtl} timers (at most one pending task per key with
     * waiters, each short), e.g. to share one timer thread among many gates. The gate never shuts
     * it down; close the gate before it. A scheduler that keeps cancelled tasks until they are due
     * (the JDK's default policy) holds each idle key's timer for up to {@code lockTtl}; one that
     * rejects a timer (shut down) fails the request that needed it with an {@link IdemException}.
     * Default: a daemon thread of the gate's own, started while events wait and stopped by {@link
     * #close()}.
     *
     * @param scheduler the scheduler
     * @return this builder
     */
    public Builder scheduler(ScheduledExecutorService scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /**
     * Sets where {@link #acquireAsync} futures are completed when a queued request's turn comes,
     * i.e. where the continuations of a waiting async event start. Completing them there, never on
     * the thread that released the previous turn, keeps one event's continuation from running
     * inside another's release (and a long queue from nesting its continuations on one stack).
     * Default: the executor {@link CompletableFuture}'s async methods use (the common pool, or a
     * new thread per task when the common pool has fewer than two threads, as on a two-core
     * machine); pass a bounded pool of your own for a busy pipeline. If it rejects a task, the
     * future is completed on the releasing thread.
     *
     * @param executor the executor
     * @return this builder
     */
    public Builder executor(Executor executor) {
      this.executor = Objects.requireNonNull(executor, "executor");
      return this;
    }

    /**
     * Returns the gate.
     *
     * @return a new gate
     */
    public LocalOrderingGate build() {
      return new LocalOrderingGate(this);
    }
  }
}
