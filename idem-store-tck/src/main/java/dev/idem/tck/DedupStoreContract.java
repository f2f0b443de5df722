package dev.idem.tck;

import dev.idem.ManualTimeSource;
import dev.idem.TimeSource;
import dev.idem.spi.DedupStateMachine;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.StoreCapabilities;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;

/**
 * The contract every {@link DedupStore} passes: extend this class in the store's test sources,
 * implement {@link #newStore} and {@link #expectedCapabilities}, and override {@link
 * #newBoundedStore} and {@link #reopen} if the capabilities say the store bounds keys or is
 * durable. Nothing else: the suite skips (with the reason) what the declared capabilities do not
 * include. The test declares them, rather than the suite trusting the store's {@link
 * DedupStore#capabilities()}: a store that stops reporting a capability (say, its outbox) then
 * fails its test instead of skipping the checks of that capability.
 *
 * <pre>{@code
 * class FileDedupStoreContractTest extends DedupStoreContract {
 *   @TempDir Path dir;
 *
 *   @Override // bounded, durable, native expiry, outbox
 *   protected StoreCapabilities expectedCapabilities() {
 *     return new StoreCapabilities(false, true, false, false);
 *   }
 *
 *   @Override
 *   protected DedupStore newStore(TimeSource time) {
 *     return FileDedupStore.open(dir.resolve(UUID.randomUUID().toString()), time);
 *   }
 *
 *   @Override // expectedCapabilities().durable()
 *   protected DedupStore reopen(DedupStore store, TimeSource time) {
 *     Path path = ((FileDedupStore) store).path();
 *     store.close();
 *     return FileDedupStore.open(path, time);
 *   }
 * }
 * }</pre>
 *
 * <p>What it checks, in nested groups: the lifecycle of DESIGN §3 with every answer's fields
 * ({@code Lifecycle}); fencing by tokens ({@code Fencing}); lease renewal by a fenced extend
 * ({@code Extend}); leases and TTLs on a manual clock ({@code LeasesAndTtls}); result replay and
 * conflicts ({@code Replay}); scope isolation and {@code clear} ({@code Scopes}); the batch forms
 * ({@code Batches}); concurrency storms ({@code Concurrency}); a seeded randomized comparison with
 * {@link DedupStateMachine} ({@code RandomizedModel}); LRU bounds ({@code BoundedKeys}); restarts
 * ({@code Durability}); {@code sweepExpired} ({@code Sweeping}); the {@link OutboxStore} ({@code
 * Outbox}) with ordering keys and fencing ({@code OrderedOutbox}) and its dead letters ({@code
 * DeadLetters}); the {@code Deduplicator} facade on the store ({@code Facade}); and the basics
 * ({@code Misuse}).
 *
 * <p>How the suite runs, so that a store on a shared server passes it:
 *
 * <ul>
 *   <li>Every test uses scopes (and outbox queues) no other test uses, so stores may share one
 *       server or database; clean your namespace up in your own {@code @AfterEach} or
 *       {@code @AfterAll}.
 *   <li>The suite owns the stores it gets from the factory methods: it closes them right after each
 *       test, before your {@code @AfterEach} methods run.
 *   <li>Times come from a {@link ManualTimeSource} that starts at the real current time and moves
 *       only when a test advances it; requests carry its time. Every lease and TTL is at least a
 *       minute and every test ends within seconds, so a native expiry that counts real time (Redis
 *       {@code PX}) never fires before the logical clock says so.
 *   <li>The randomized model test takes a fresh seed each run and prints it on failure; rerun with
 *       {@code -Didem.tck.seed=<seed>} to replay it.
 * </ul>
 */
public abstract class DedupStoreContract {
  private final StoreFixture fixture = new StoreFixture(this);

  /** Creates the suite; subclasses need no constructor of their own. */
  protected DedupStoreContract() {}

  /**
   * Returns the capabilities the stores of this test must report, declared by the test: the suite
   * runs the checks of exactly these (and skips the others), and fails every check if {@link
   * DedupStore#capabilities()} of the store under test differs.
   *
   * @return the expected capabilities
   */
  protected abstract StoreCapabilities expectedCapabilities();

  /**
   * Returns a new store on fresh storage: empty, or uniquely namespaced on a shared server.
   *
   * <p>A store with a background sweeper should sweep rarely here (e.g. once a minute of real
   * time): some checks assert exactly what a reserve replaced ({@code EXPIRED_LEASE}, {@code
   * EXPIRED_KEY}) right after advancing the clock, and a sweep in between would turn that into
   * "nothing". The {@code Sweeping} checks call {@link DedupStore#sweepExpired} themselves.
   *
   * @param time the clock the store must use for any background work (a sweeper, the outbox);
   *     operations take their time from the requests
   * @return a new store; the suite closes it after the test
   * @throws Exception if the store cannot be created (a missing server should rather make the test
   *     skip, e.g. through {@link ExternalService#require})
   */
  protected abstract DedupStore newStore(TimeSource time) throws Exception;

  /**
   * Returns a new store on fresh storage that holds at most {@code maxKeysPerScope} keys per scope,
   * evicting the least recently used. Called only when the store's {@link
   * StoreCapabilities#boundedKeys()} of {@link #expectedCapabilities()} is true.
   *
   * @param time the clock for background work
   * @param maxKeysPerScope the bound, at least 1
   * @return a new bounded store; the suite closes it after the test
   * @throws Exception if the store cannot be created
   */
  protected DedupStore newBoundedStore(TimeSource time, int maxKeysPerScope) throws Exception {
    throw new UnsupportedOperationException(
        getClass().getName()
            + " tests a store whose capabilities().boundedKeys() is true:"
            + " override newBoundedStore(TimeSource, int)");
  }

  /**
   * Closes {@code store} and opens a new store on the same storage, as a restarted process would.
   * Called only when {@link StoreCapabilities#durable()} of {@link #expectedCapabilities()} is
   * true.
   *
   * @param store a store made by {@link #newStore} (or an earlier reopen); close it here
   * @param time the clock for background work
   * @return the reopened store; the suite closes it after the test
   * @throws Exception if the store cannot be reopened
   */
  protected DedupStore reopen(DedupStore store, TimeSource time) throws Exception {
    throw new UnsupportedOperationException(
        getClass().getName()
            + " tests a store whose capabilities().durable() is true:"
            + " override reopen(DedupStore, TimeSource)");
  }

  /** Gives each test a fresh clock and scope. */
  @BeforeEach
  void startTheFixture() {
    fixture.start();
  }

  /** The lifecycle of DESIGN §3, each answer's fields, inspect and forget in every state. */
  @Nested
  class Lifecycle extends LifecycleChecks {
    Lifecycle() {
      super(fixture);
    }
  }

  /** Stale tokens, run-out leases and takeovers change nothing and answer STALE. */
  @Nested
  class Fencing extends FencingChecks {
    Fencing() {
      super(fixture);
    }
  }

  /** Lease renewal: a fenced extend keeps single flight, and a lapsed holder cannot renew. */
  @Nested
  class Extend extends ExtendChecks {
    Extend() {
      super(fixture);
    }
  }

  /** Leases; sliding, fixed and no TTL; on the manual clock. */
  @Nested
  class LeasesAndTtls extends ExpiryChecks {
    LeasesAndTtls() {
      super(fixture);
    }
  }

  /** Stored results come back byte for byte; other payloads conflict. */
  @Nested
  class Replay extends ReplayChecks {
    Replay() {
      super(fixture);
    }
  }

  /** Scopes are isolated; clear and forget touch only their scope. */
  @Nested
  class Scopes extends ScopeChecks {
    Scopes() {
      super(fixture);
    }
  }

  /** The batch forms agree with the single forms. */
  @Nested
  class Batches extends BatchChecks {
    Batches() {
      super(fixture);
    }
  }

  /** Many threads, overlapping keys: one acquirer per key, no lost commit, no overlap. */
  @Nested
  class Concurrency extends ConcurrencyChecks {
    Concurrency() {
      super(fixture);
    }
  }

  /** Random operations compared with {@link DedupStateMachine}, reproducible from a seed. */
  @Nested
  class RandomizedModel extends ModelChecks {
    RandomizedModel() {
      super(fixture);
    }
  }

  /** Capability {@code boundedKeys}: least-recently-used eviction per scope. */
  @Nested
  class BoundedKeys extends BoundedChecks {
    BoundedKeys() {
      super(fixture);
    }
  }

  /** Capability {@code durable}: everything survives a reopen. */
  @Nested
  class Durability extends DurabilityChecks {
    Durability() {
      super(fixture);
    }
  }

  /** Without {@code nativeExpiry}: sweepExpired removes the dead and only the dead. */
  @Nested
  class Sweeping extends SweepChecks {
    Sweeping() {
      super(fixture);
    }
  }

  /** Capability {@code outbox}: the transactional outbox. */
  @Nested
  class Outbox extends OutboxChecks {
    Outbox() {
      super(fixture);
    }
  }

  /**
   * Capability {@code outbox}: ordering keys (one entry per key at a time, oldest first, across
   * claimers), fenced settles, and the argument contracts every store answers alike.
   */
  @Nested
  class OrderedOutbox extends OrderedOutboxChecks {
    OrderedOutbox() {
      super(fixture);
    }
  }

  /** Capability {@code outbox}: listing, requeueing and purging dead letters. */
  @Nested
  class DeadLetters extends DeadLetterChecks {
    DeadLetters() {
      super(fixture);
    }
  }

  /** The Deduplicator facade on this store, end to end. */
  @Nested
  class Facade extends FacadeChecks {
    Facade() {
      super(fixture);
    }
  }

  /** Invalid requests, capabilities, describe, health and close. */
  @Nested
  class Misuse extends MisuseChecks {
    Misuse() {
      super(fixture);
    }
  }
}
