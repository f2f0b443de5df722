package dev.idem.server.deliver;

import dev.idem.StoreUnavailableException;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.SettleResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Passes every call to a real outbox and records what the dispatcher asked for: which entries it
 * rescheduled, to when, and why (entries named by their idempotency key). Claims can be made to
 * fail, as a store that is down.
 */
final class RecordingOutbox implements OutboxStore {
  /** One reschedule call. */
  record Reschedule(String key, long notBefore, String error) {}

  private final OutboxStore delegate;
  private final Map<Long, String> keysById = new HashMap<>();
  private final List<Reschedule> reschedules = new ArrayList<>();
  private final List<String> acknowledged = new ArrayList<>();
  private volatile boolean claimsFail;
  private int claims;

  RecordingOutbox(OutboxStore delegate) {
    this.delegate = delegate;
  }

  void failClaims(boolean fail) {
    claimsFail = fail;
  }

  synchronized List<Reschedule> reschedules() {
    return List.copyOf(reschedules);
  }

  synchronized List<Reschedule> reschedulesOf(String key) {
    return reschedules.stream().filter(r -> r.key().equals(key)).toList();
  }

  synchronized List<String> acknowledged() {
    return List.copyOf(acknowledged);
  }

  synchronized int claims() {
    return claims;
  }

  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages) {
    return delegate.commitAndEnqueue(commit, messages);
  }

  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    synchronized (this) {
      claims++;
    }
    if (claimsFail) {
      throw new StoreUnavailableException("test", false, "the test store is down");
    }
    List<OutboxRecord> records = delegate.claim(queue, max, nowMillis, claimMillis);
    synchronized (this) {
      for (OutboxRecord r : records) {
        keysById.put(r.id(), keyOf(r.payload()));
      }
    }
    return records;
  }

  private static String keyOf(byte[] payload) {
    try {
      return DeliveryCodec.decode(payload).idempotencyKey();
    } catch (IllegalArgumentException e) {
      return "undecodable";
    }
  }

  @Override
  public boolean acknowledge(String queue, long id) {
    synchronized (this) {
      acknowledged.add(keysById.get(id));
    }
    return delegate.acknowledge(queue, id);
  }

  @Override
  public boolean acknowledge(OutboxRecord claimed) {
    synchronized (this) {
      acknowledged.add(keysById.get(claimed.id()));
    }
    return delegate.acknowledge(claimed);
  }

  @Override
  public boolean reschedule(OutboxRecord claimed, long notBeforeMillis, String error) {
    synchronized (this) {
      reschedules.add(new Reschedule(keysById.get(claimed.id()), notBeforeMillis, error));
    }
    return delegate.reschedule(claimed, notBeforeMillis, error);
  }

  @Override
  public boolean deadLetter(OutboxRecord claimed, String reason, long nowMillis) {
    return delegate.deadLetter(claimed, reason, nowMillis);
  }

  @Override
  public void reschedule(String queue, long id, long notBeforeMillis, String error) {
    synchronized (this) {
      reschedules.add(new Reschedule(keysById.get(id), notBeforeMillis, error));
    }
    delegate.reschedule(queue, id, notBeforeMillis, error);
  }

  @Override
  public void deadLetter(String queue, long id, String reason, long nowMillis) {
    delegate.deadLetter(queue, id, reason, nowMillis);
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, int limit) {
    return delegate.deadLetters(queue, limit);
  }

  @Override
  public long releaseClaimsOfEarlierRuns(String queue) {
    return delegate.releaseClaimsOfEarlierRuns(queue);
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, DeadLetterQuery query) {
    return delegate.deadLetters(queue, query);
  }

  @Override
  public Optional<DeadLetter> findDeadLetter(String queue, long id) {
    return delegate.findDeadLetter(queue, id);
  }

  @Override
  public OptionalLong requeueDeadLetter(String queue, long id, long nowMillis) {
    return delegate.requeueDeadLetter(queue, id, nowMillis);
  }

  @Override
  public boolean purgeDeadLetter(String queue, long id) {
    return delegate.purgeDeadLetter(queue, id);
  }

  @Override
  public long purgeDeadLetters(String queue) {
    return delegate.purgeDeadLetters(queue);
  }

  @Override
  public List<PendingEntry> pending(String queue, int limit) {
    return delegate.pending(queue, limit);
  }

  @Override
  public long depth(String queue) {
    return delegate.depth(queue);
  }
}
