package example.camel;

import dev.idem.DedupConfig;
import dev.idem.Deduplicator;
import dev.idem.Scope;
import dev.idem.camel.IdemConsumerProcessor;
import dev.idem.camel.IdemIdempotentRepository;
import dev.idem.camel.KeyInFlightException;
import dev.idem.spi.DedupStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.camel.builder.RouteBuilder;

/**
 * Two ways to deduplicate orders in a Camel route with Idem. Swap the store for {@code
 * RedisDedupStore.builder("redis://...").build()} or {@code JdbcDedupStore.builder(url).build()}
 * to deduplicate across JVMs.
 */
public final class OrdersRoute extends RouteBuilder {
  private final DedupStore store;
  private final List<String> shipped = new CopyOnWriteArrayList<>();

  /**
   * Creates the routes.
   *
   * @param store where order ids are kept
   */
  public OrdersRoute(DedupStore store) {
    this.store = store;
  }

  /**
   * Returns the order ids shipped so far.
   *
   * @return the shipped order ids, in order
   */
  public List<String> shipped() {
    return shipped;
  }

  @Override
  public void configure() {
    // An exchange whose order id is in flight elsewhere is retried until the holder settles.
    onException(KeyInFlightException.class).maximumRedeliveries(20).redeliveryDelay(250);

    // 1. Camel's own idempotent consumer, with Idem's repository: one line changes.
    from("direct:orders")
        .idempotentConsumer(
            header("orderId"), IdemIdempotentRepository.of(store, Scope.of("orders")))
        .process(e -> shipped.add(e.getMessage().getHeader("orderId", String.class)));

    // 2. Idem's consumer step: an order that is in flight elsewhere is retried, never dropped.
    Deduplicator payments =
        Deduplicator.builder(store, Scope.of("payments"))
            .config(
                DedupConfig.custom().ttl(Duration.ofDays(7)).lease(Duration.ofMinutes(1)).build())
            .build();
    from("direct:payments")
        .process(IdemConsumerProcessor.builder(payments, header("paymentId")).build())
        .process(e -> shipped.add("payment " + e.getMessage().getHeader("paymentId")));
  }
}
