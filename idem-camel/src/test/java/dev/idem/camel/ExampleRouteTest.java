package dev.idem.camel;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.store.memory.MemoryDedupStore;
import example.camel.OrdersRoute;
import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/** Runs the example under {@code examples/camel}: each order and payment is handled once. */
class ExampleRouteTest {
  @Test
  void theExampleShipsEachOrderAndPaymentOnce() throws Exception {
    try (MemoryDedupStore store = MemoryDedupStore.builder().build();
        CamelContext camel = new DefaultCamelContext()) {
      OrdersRoute routes = new OrdersRoute(store);
      camel.addRoutes(routes);
      camel.start();
      ProducerTemplate producer = camel.createProducerTemplate();

      for (String id : new String[] {"o1", "o2", "o1"}) {
        producer.sendBodyAndHeader("direct:orders", "{}", "orderId", id);
      }
      for (String id : new String[] {"p1", "p1"}) {
        producer.sendBodyAndHeader("direct:payments", "{}", "paymentId", id);
      }

      assertThat(routes.shipped()).containsExactly("o1", "o2", "payment p1");
    }
  }
}
