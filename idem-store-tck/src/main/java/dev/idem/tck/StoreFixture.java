package dev.idem.tck;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.idem.ManualTimeSource;
import dev.idem.Scope;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.StoreCapabilities;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The per-test state of the contract suite: a manual clock near real time, a unique scope, and
 * every store the test opened (closed after the test, before the subclass's own {@code @AfterEach}
 * methods run, so those may delete the storage).
 */
final class StoreFixture {
  private static final AtomicLong SCOPES = new AtomicLong();

  private final DedupStoreContract contract;
  private final SplittableRandom random = new SplittableRandom();
  private final String runId = Long.toHexString(random.nextLong() >>> 16);
  private final List<DedupStore> open = new ArrayList<>();
  private @Nullable ManualTimeSource time;
  private @Nullable Scope scope;
  private @Nullable DedupStore store;
  private @Nullable StoreCapabilities capabilities;

  StoreFixture(DedupStoreContract contract) {
    this.contract = contract;
  }

  /** Starts a test: a fresh clock (near real time, see DedupStoreContract) and a fresh scope. */
  void start() {
    time = new ManualTimeSource(Instant.ofEpochMilli(System.currentTimeMillis()));
    scope = newScope();
    store = null;
    capabilities = null;
  }

  ManualTimeSource time() {
    ManualTimeSource t = time;
    if (t == null) {
      throw new IllegalStateException("the fixture is used outside a test");
    }
    return t;
  }

  /** The test's main scope. */
  Scope scope() {
    Scope s = scope;
    if (s == null) {
      throw new IllegalStateException("the fixture is used outside a test");
    }
    return s;
  }

  /** A scope no other test (of this or any other run against the same server) uses. */
  Scope newScope() {
    return Scope.of("tck-" + runId + "-" + SCOPES.incrementAndGet(), "dedup");
  }

  /** Another step of the test's main pipeline (a scope whose name shares the pipeline id). */
  Scope siblingScope(String step) {
    return Scope.of(scope().pipeline(), step);
  }

  /** The test's main store, opened on first use with {@link DedupStoreContract#newStore}. */
  DedupStore store() {
    DedupStore s = store;
    if (s == null) {
      s = track(call(() -> contract.newStore(time()), "newStore"));
      store = s;
    }
    return s;
  }

  /**
   * The capabilities the test declares ({@link DedupStoreContract#expectedCapabilities()}), after
   * checking that the store reports exactly those: a store that stops reporting one fails.
   */
  StoreCapabilities capabilities() {
    StoreCapabilities c = capabilities;
    if (c == null) {
      StoreCapabilities expected = contract.expectedCapabilities();
      if (expected == null) {
        throw new AssertionError(
            contract.getClass().getName() + ".expectedCapabilities() returned null");
      }
      StoreCapabilities reported = store().capabilities();
      if (!expected.equals(reported)) {
        throw new AssertionError(
            store().describe()
                + " reports "
                + reported
                + " but its test ("
                + contract.getClass().getName()
                + ") expects "
                + expected
                + ": either the store lost (or gained) a capability, or the test's"
                + " expectedCapabilities() is out of date");
      }
      c = expected;
      capabilities = c;
    }
    return c;
  }

  /** Skips the test unless the store bounds its keys per scope. */
  void assumeBoundedKeys() {
    assumeTrue(
        capabilities().boundedKeys(),
        "skipped: "
            + store().describe()
            + " does not bound keys per scope (capabilities().boundedKeys() is false)");
  }

  /** Skips the test unless the store survives a reopen. */
  void assumeDurable() {
    assumeTrue(
        capabilities().durable(),
        "skipped: " + store().describe() + " is not durable (capabilities().durable() is false)");
  }

  /** Skips the test unless the store needs {@link DedupStore#sweepExpired}. */
  void assumeNoNativeExpiry() {
    assumeTrue(
        !capabilities().nativeExpiry(),
        "skipped: "
            + store().describe()
            + " expires keys natively (capabilities().nativeExpiry() is true), sweepExpired is"
            + " optional there");
  }

  /** Skips the test unless the store has an outbox, and returns the store as one. */
  OutboxStore assumeOutbox() {
    assumeTrue(
        capabilities().outbox(),
        "skipped: " + store().describe() + " has no outbox (capabilities().outbox() is false)");
    if (!(store() instanceof OutboxStore outbox)) {
      throw new AssertionError(
          store().describe()
              + " says capabilities().outbox() but does not implement "
              + OutboxStore.class.getName());
    }
    return outbox;
  }

  /** A new bounded store on fresh storage (skips unless the store bounds keys). */
  DedupStore boundedStore(int maxKeysPerScope) {
    assumeBoundedKeys();
    return track(call(() -> contract.newBoundedStore(time(), maxKeysPerScope), "newBoundedStore"));
  }

  /** Closes {@code s} and opens its storage again (skips unless the store is durable). */
  DedupStore reopen(DedupStore s) {
    assumeDurable();
    open.remove(s);
    DedupStore reopened = track(call(() -> contract.reopen(s, time()), "reopen"));
    if (s == store) {
      store = reopened;
    }
    return reopened;
  }

  /** Closes one store now (the suite then does not close it again). */
  void close(DedupStore s) {
    open.remove(s);
    if (s == store) {
      store = null;
    }
    s.close();
  }

  /** Closes every store the test opened; the first failure is thrown after all were closed. */
  void closeAll() {
    RuntimeException failure = null;
    for (int i = open.size() - 1; i >= 0; i--) {
      try {
        open.get(i).close();
      } catch (RuntimeException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    open.clear();
    store = null;
    if (failure != null) {
      throw failure;
    }
  }

  private DedupStore track(DedupStore s) {
    if (s == null) {
      throw new AssertionError("the contract's store factory returned null");
    }
    open.add(s);
    return s;
  }

  private interface Factory {
    DedupStore open() throws Exception;
  }

  private static DedupStore call(Factory factory, String what) {
    try {
      return factory.open();
    } catch (RuntimeException | Error e) {
      throw e; // includes the assumption failures of ExternalService.require
    } catch (Exception e) {
      throw new IllegalStateException(what + " failed: " + e, e);
    }
  }
}
