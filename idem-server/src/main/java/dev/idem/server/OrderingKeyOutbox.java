package dev.idem.server;

import dev.idem.server.deliver.Delivery;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DeadLetter;
import dev.idem.spi.DeadLetterQuery;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxRecord;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.PendingEntry;
import dev.idem.spi.SettleResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Function;

/**
 * The outbox a pipeline with {@code ordering:} enqueues through: it gives each message without an
 * {@link OutboxMessage#orderingKey()} the ordering key of the delivery it encodes, so that the
 * store hands out one entry per ordering key at a time (order across restarts and instances). Every
 * other call passes through. A payload that cannot be decoded is enqueued as it is.
 *
 * <p>A stopgap until the pipeline sets the ordering key on the messages itself; it is harmless then
 * (it only fills a missing key).
 */
final class OrderingKeyOutbox implements OutboxStore {
  private final OutboxStore delegate;
  private final Function<byte[], Delivery> decoder;

  OrderingKeyOutbox(OutboxStore delegate, Function<byte[], Delivery> decoder) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.decoder = Objects.requireNonNull(decoder, "decoder");
  }

  @Override
  public SettleResult commitAndEnqueue(CommitRequest commit, List<OutboxMessage> messages) {
    List<OutboxMessage> keyed = new ArrayList<>(messages.size());
    for (OutboxMessage m : messages) {
      keyed.add(withOrderingKey(m));
    }
    return delegate.commitAndEnqueue(commit, keyed);
  }

  private OutboxMessage withOrderingKey(OutboxMessage m) {
    if (m.orderingKey() != null) {
      return m;
    }
    String orderingKey;
    try {
      orderingKey = decoder.apply(m.payload()).orderingKey();
    } catch (RuntimeException e) {
      return m; // the dispatcher dead-letters what it cannot decode
    }
    if (orderingKey == null
        || orderingKey.isEmpty()
        || orderingKey.length() > OutboxMessage.MAX_ORDERING_KEY_LENGTH) {
      return m; // ordered by the dispatcher's lanes only
    }
    return new OutboxMessage(m.queue(), m.key(), m.payload(), orderingKey);
  }

  @Override
  public List<OutboxRecord> claim(String queue, int max, long nowMillis, long claimMillis) {
    return delegate.claim(queue, max, nowMillis, claimMillis);
  }

  @Override
  public long releaseClaimsOfEarlierRuns(String queue) {
    return delegate.releaseClaimsOfEarlierRuns(queue);
  }

  @Override
  public boolean acknowledge(String queue, long id) {
    return delegate.acknowledge(queue, id);
  }

  @Override
  public boolean acknowledge(OutboxRecord claimed) {
    return delegate.acknowledge(claimed);
  }

  @Override
  public void reschedule(String queue, long id, long notBeforeMillis, String error) {
    delegate.reschedule(queue, id, notBeforeMillis, error);
  }

  @Override
  public boolean reschedule(OutboxRecord claimed, long notBeforeMillis, String error) {
    return delegate.reschedule(claimed, notBeforeMillis, error);
  }

  @Override
  public void deadLetter(String queue, long id, String reason, long nowMillis) {
    delegate.deadLetter(queue, id, reason, nowMillis);
  }

  @Override
  public boolean deadLetter(OutboxRecord claimed, String reason, long nowMillis) {
    return delegate.deadLetter(claimed, reason, nowMillis);
  }

  @Override
  public List<DeadLetter> deadLetters(String queue, int limit) {
    return delegate.deadLetters(queue, limit);
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
