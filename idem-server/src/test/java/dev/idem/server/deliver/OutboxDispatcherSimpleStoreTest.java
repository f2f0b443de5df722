package dev.idem.server.deliver;

import dev.idem.ManualTimeSource;
import dev.idem.spi.OutboxStore;

/** The dispatcher's guarantees over {@link SimpleOutboxStore}, the in-test reference outbox. */
class OutboxDispatcherSimpleStoreTest extends OutboxDispatcherContract {

  @Override
  TestOutbox newOutbox(ManualTimeSource clock) {
    SimpleOutboxStore store = new SimpleOutboxStore();
    return new TestOutbox() {
      @Override
      public OutboxStore store() {
        return store;
      }

      @Override
      public void enqueue(String queue, byte[] payload) {
        store.append(queue, payload, clock.wallMillis());
      }
    };
  }
}
