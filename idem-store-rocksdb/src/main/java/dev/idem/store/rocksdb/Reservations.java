package dev.idem.store.rocksdb;

import dev.idem.DedupKey;
import dev.idem.Scope;
import dev.idem.spi.StoredEntry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The store's in-flight reservations, kept in memory only and never written to RocksDB.
 *
 * <p>The store is embedded: whoever holds a reservation runs in this process and dies with it. So a
 * reservation needs no durability, and keeping it out of the write-ahead log means an accepted
 * event costs one durable write (its commit), and a restart after a crash starts with no
 * reservations, so the retry of an event that was in flight at the crash is accepted at once.
 *
 * <p>One hash map per lock stripe of the store; every access to a stripe's map holds that stripe's
 * lock (the store's), so a reservation is read, decided and changed in the same atomic step as the
 * key's stored entry. Reservations keep their token (fencing) and lease (a lapsed one reads as
 * absent, and the sweep removes it), exactly as the stored entries of other stores do.
 *
 * <p>A store closed and opened again on the same directory in the same process takes its
 * predecessor's reservations over ({@link #handOver} / {@link #takeOver}): their holders may still
 * be running, and the contract says a reopen keeps them. The directory's RocksDB lock orders the
 * two (the closing store hands over before it releases the lock; the opening one takes over after
 * it acquired it). The hand-over is refused if the directory now holds another database, or if
 * anything wrote to it in between (another process opened it): the reservations would then no
 * longer match what is stored. A new process finds nothing to take over.
 */
final class Reservations {
  /** Reservations of closed stores, by the real path of their directory, for the next open. */
  private static final ConcurrentHashMap<Path, HandedOver> HANDED_OVER = new ConcurrentHashMap<>();

  private final Stripe[] stripes;

  private Reservations(int stripeCount) {
    stripes = new Stripe[stripeCount];
    for (int i = 0; i < stripeCount; i++) {
      stripes[i] = new Stripe();
    }
  }

  /**
   * Returns the reservations a store closed earlier in this process left for {@code directory}, if
   * the directory still holds the same database, unchanged since; else an empty table.
   *
   * @param directory the store's directory, open (and so locked) by the caller
   * @param sequence the database's latest sequence number, before the caller wrote anything
   * @param stripeCount the caller's number of lock stripes
   */
  static Reservations takeOver(Path directory, long sequence, int stripeCount) {
    HandedOver previous = HANDED_OVER.remove(realPath(directory));
    if (previous != null
        && previous.reservations.stripes.length == stripeCount
        && previous.sequence == sequence
        && previous.database.equals(databaseIdentity(directory))) {
      return previous.reservations;
    }
    return new Reservations(stripeCount);
  }

  /**
   * Leaves these reservations for the next store opened on {@code directory} in this process.
   * Called by a closing store once no operation runs, before it releases the directory.
   *
   * @param sequence the database's latest sequence number, after the store's last write
   */
  void handOver(Path directory, long sequence) {
    if (!isEmpty()) {
      HANDED_OVER.put(
          realPath(directory), new HandedOver(this, databaseIdentity(directory), sequence));
    }
  }

  /** The reservation of a key, or null. The caller holds the key's stripe lock. */
  @Nullable StoredEntry get(int stripe, Scope scope, DedupKey key) {
    return stripes[stripe].map.get(new Slot(scope, key));
  }

  /** Sets (or, with null, removes) a key's reservation. The caller holds the stripe lock. */
  void set(int stripe, Scope scope, DedupKey key, @Nullable StoredEntry entry) {
    Map<Slot, StoredEntry> map = stripes[stripe].map;
    if (entry == null) {
      map.remove(new Slot(scope, key));
    } else {
      map.put(new Slot(scope, key), entry);
    }
  }

  /**
   * Removes every reservation that {@code remove} selects, taking each stripe's lock in turn, and
   * returns the keys removed with their entries.
   *
   * @param locks the store's stripe locks, in stripe order
   */
  List<Removed> removeIf(ReentrantLock[] locks, Predicate<Removed> remove) {
    List<Removed> out = new ArrayList<>();
    for (int i = 0; i < stripes.length; i++) {
      Map<Slot, StoredEntry> map = stripes[i].map;
      locks[i].lock();
      try {
        if (map.isEmpty()) {
          continue;
        }
        for (Iterator<Map.Entry<Slot, StoredEntry>> it = map.entrySet().iterator();
            it.hasNext(); ) {
          Map.Entry<Slot, StoredEntry> e = it.next();
          Removed candidate = new Removed(e.getKey().scope, e.getKey().key, e.getValue());
          if (remove.test(candidate)) {
            it.remove();
            out.add(candidate);
          }
        }
      } finally {
        locks[i].unlock();
      }
    }
    return out;
  }

  private boolean isEmpty() {
    for (Stripe s : stripes) {
      if (!s.map.isEmpty()) {
        return false;
      }
    }
    return true;
  }

  private static Path realPath(Path directory) {
    try {
      return directory.toRealPath();
    } catch (IOException e) {
      // The directory is open, so it exists; should it vanish, the normalized path still names it.
      return directory.toAbsolutePath().normalize();
    }
  }

  /** RocksDB's IDENTITY file: a unique id written when the database was created. */
  private static String databaseIdentity(Path directory) {
    try {
      return Files.readString(directory.resolve("IDENTITY"), StandardCharsets.US_ASCII).strip();
    } catch (IOException e) {
      // No identity to compare: the sequence number check still applies.
      return "";
    }
  }

  /** Reservations left by a closed store, with what identifies the database state they match. */
  private record HandedOver(Reservations reservations, String database, long sequence) {}

  /** A reservation removed by {@link #removeIf}. */
  record Removed(Scope scope, DedupKey key, StoredEntry entry) {}

  /** A key of one scope. */
  private record Slot(Scope scope, DedupKey key) {}

  /** One stripe's reservations; guarded by the store's lock of that stripe. */
  private static final class Stripe {
    final HashMap<Slot, StoredEntry> map = new HashMap<>();
  }
}
