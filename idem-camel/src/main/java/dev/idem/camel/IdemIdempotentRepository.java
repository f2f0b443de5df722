package dev.idem.camel;

import dev.idem.Decision;
import dev.idem.DedupKey;
import dev.idem.Deduplicator;
import dev.idem.Reservation;
import dev.idem.Scope;
import dev.idem.Settlement;
import dev.idem.key.KeyEncoding;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.camel.Exchange;
import org.apache.camel.spi.IdempotentRepository;
import org.apache.camel.support.service.ServiceSupport;
import org.jspecify.annotations.Nullable;

/**
 * A Camel {@link IdempotentRepository} over any Idem {@link DedupStore} (memory, RocksDB, Redis,
 * JDBC), for Camel's own {@code idempotentConsumer}:
 *
 * <pre>{@code
 * IdemIdempotentRepository repo = IdemIdempotentRepository.of(store, Scope.of("orders"));
 * from("jms:orders").idempotentConsumer(header("orderId"), repo).to("bean:shipping");
 * }</pre>
 *
 * <p>How Camel's calls map to Idem's lifecycle, per message id:
 *
 * <ol>
 *   <li>{@link #add(String)} reserves the key in one atomic step: {@code true} only for the one
 *       caller that acquired it. It answers {@code false} both when the key is committed (a
 *       duplicate) and when another exchange holds it now (in flight): Camel's interface has no
 *       third answer, so Camel drops an in-flight duplicate. Use {@link IdemConsumerProcessor} to
 *       retry it instead.
 *   <li>{@link #confirm(String)} commits the reservation this repository holds.
 *   <li>{@link #remove(String)} releases the reservation this repository holds, so a resend is
 *       accepted. It never forgets a committed key or one held by another repository instance: a
 *       failed exchange must not unblock someone else's work. Use {@link #forget(String)} (admin)
 *       for that.
 *   <li>{@link #contains(String)} inspects: {@code true} while the key is in flight or committed.
 *   <li>{@link #clear()} forgets every key of this repository's scope and no other.
 * </ol>
 *
 * <p>A reservation's lease bounds how long a crashed JVM blocks a key; an exchange that outlives
 * the lease loses its key to a resend, and its late {@code confirm} changes nothing (it answers
 * {@code false}). With {@code removeOnFailure(false)} a failed message's key stays in flight until
 * its lease ends, then a resend is accepted (Camel's memory repository would drop resends forever).
 *
 * <p>Camel's non-eager mode ({@code eager(false)}) checks {@code contains} first and calls {@code
 * add} only after the route succeeded: that is check-then-act, so two concurrent exchanges with one
 * id can both run. Keep the default eager mode (or {@link IdemConsumerProcessor}) when the work
 * must run once.
 *
 * <p>Camel calls the {@code Exchange} forms, which keep the reservation on the exchange; the plain
 * forms keep it in this repository, by message id.
 *
 * <p>Thread-safe. The store is the caller's: stopping the repository does not close it.
 */
public final class IdemIdempotentRepository extends ServiceSupport implements IdempotentRepository {
  // Held reservations past this many are swept of those whose lease has run out (a failed
  // exchange with removeOnFailure(false) never settles its reservation).
  private static final int SWEEP_THRESHOLD = 10_000;

  private final Deduplicator dedup;
  private final Map<String, Reservation> held = new ConcurrentHashMap<>();

  private IdemIdempotentRepository(Deduplicator dedup) {
    this.dedup = dedup;
  }

  /**
   * Returns a repository over a store, with the default window (24 h, sliding) and lease (5 min).
   *
   * @param store where keys are kept; shared stores (Redis, JDBC) deduplicate across JVMs
   * @param scope the dedup step, e.g. the route id; two scopes never suppress each other
   * @return the repository
   */
  public static IdemIdempotentRepository of(DedupStore store, Scope scope) {
    return new IdemIdempotentRepository(Deduplicator.builder(store, scope).build());
  }

  /**
   * Returns a repository over a configured deduplicator (window, expiry, lease, listeners, clock).
   *
   * @param dedup the deduplicator
   * @return the repository
   */
  public static IdemIdempotentRepository of(Deduplicator dedup) {
    return new IdemIdempotentRepository(Objects.requireNonNull(dedup, "dedup"));
  }

  /**
   * Returns the deduplicator the repository decides with.
   *
   * @return the deduplicator
   */
  public Deduplicator deduplicator() {
    return dedup;
  }

  /**
   * Reserves the key.
   *
   * @param messageId the message id
   * @return true if this call acquired the key; false if it is committed or in flight
   * @throws dev.idem.StoreUnavailableException if the store did not answer (Camel fails the
   *     exchange, and its error handler may retry)
   */
  @Override
  public boolean add(String messageId) {
    Decision decision = dedup.reserve(key(messageId));
    if (!(decision instanceof Decision.Acquired acquired)) {
      return false;
    }
    if (held.size() > SWEEP_THRESHOLD) {
      sweepLapsed();
    }
    held.put(messageId, acquired.reservation());
    return true;
  }

  /**
   * Reserves the key for one exchange (what Camel's {@code idempotentConsumer} calls). The
   * reservation travels with the exchange, so that only this exchange's {@code confirm} or {@code
   * remove} settles it, even if its lease ran out and another exchange took the key over.
   *
   * @param exchange the exchange
   * @param messageId the message id
   * @return true if this call acquired the key; false if it is committed or in flight
   */
  @Override
  public boolean add(Exchange exchange, String messageId) {
    Decision decision = dedup.reserve(key(messageId));
    if (!(decision instanceof Decision.Acquired acquired)) {
      return false;
    }
    exchange.setProperty(property(messageId), acquired.reservation());
    return true;
  }

  /**
   * Commits the reservation the exchange holds for the key.
   *
   * @param exchange the exchange
   * @param messageId the message id
   * @return true if committed; false if the exchange held none or its lease had run out
   */
  @Override
  public boolean confirm(Exchange exchange, String messageId) {
    Reservation reservation = takeFrom(exchange, messageId);
    return reservation == null ? confirm(messageId) : reservation.commit() == Settlement.COMMITTED;
  }

  /**
   * Releases the reservation the exchange holds for the key.
   *
   * @param exchange the exchange
   * @param messageId the message id
   * @return true if released; false if the exchange held none or its lease had run out
   */
  @Override
  public boolean remove(Exchange exchange, String messageId) {
    Reservation reservation = takeFrom(exchange, messageId);
    return reservation == null ? remove(messageId) : reservation.release() == Settlement.RELEASED;
  }

  /**
   * Returns whether the key is in flight or committed now (a sliding window is not refreshed).
   *
   * @param messageId the message id
   * @return true if in flight or committed
   */
  @Override
  public boolean contains(String messageId) {
    return !(dedup.inspect(key(messageId)) instanceof KeyState.Absent);
  }

  /**
   * Releases the reservation this repository holds for the key, so a resend is accepted.
   *
   * @param messageId the message id
   * @return true if a held reservation was released; false if this repository held none, or its
   *     lease had run out
   */
  @Override
  public boolean remove(String messageId) {
    Reservation reservation = held.remove(messageId);
    return reservation != null && reservation.release() == Settlement.RELEASED;
  }

  /**
   * Commits the reservation this repository holds for the key: later messages with it are
   * duplicates until the window passes.
   *
   * @param messageId the message id
   * @return true if committed; false if this repository held no reservation for it, or its lease
   *     had run out (a resend may have taken the key over)
   */
  @Override
  public boolean confirm(String messageId) {
    Reservation reservation = held.remove(messageId);
    return reservation != null && reservation.commit() == Settlement.COMMITTED;
  }

  /**
   * Forgets every key of this repository's scope (committed and in flight); other scopes in the
   * same store are untouched.
   */
  @Override
  public void clear() {
    held.clear();
    dedup.clear();
  }

  /**
   * Forgets one key (admin): the next message with it is new, even if it was committed.
   *
   * @param messageId the message id
   * @return whether the store had an entry for it
   */
  public boolean forget(String messageId) {
    held.remove(messageId);
    return dedup.forget(key(messageId));
  }

  /**
   * Returns the key's state now, for checks and admin.
   *
   * @param messageId the message id
   * @return absent, in flight or committed
   */
  public KeyState inspect(String messageId) {
    return dedup.inspect(key(messageId));
  }

  private @Nullable Reservation takeFrom(Exchange exchange, String messageId) {
    return exchange.removeProperty(property(messageId)) instanceof Reservation r ? r : null;
  }

  private String property(String messageId) {
    return "IdemReservation:" + dedup.scope() + ":" + messageId;
  }

  private void sweepLapsed() {
    // Wall time is close enough here: this only bounds the map of unsettled reservations.
    Instant now = Instant.now();
    held.values().removeIf(r -> r.leaseUntil().isBefore(now));
  }

  private static DedupKey key(String messageId) {
    return KeyEncoding.ofString(messageId);
  }

  @Override
  public String toString() {
    return "IdemIdempotentRepository[" + dedup.scope() + " on " + dedup.store().describe() + "]";
  }
}
