package example.springboot;

import dev.idem.spring.boot.Idempotent;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Service;

/**
 * A Spring Boot application that ships each order once. With {@code idem-spring-boot-starter} on
 * the class path, all it needs is the annotation, and (for a shared store) two properties:
 *
 * <pre>
 * idem.store.type=redis               # uses spring.data.redis.* ; or jdbc (spring.datasource.*)
 * idem.scopes.orders.ttl=7d
 * </pre>
 */
@SpringBootApplication
public class ShippingApplication {
  /**
   * Starts the application.
   *
   * @param args the command line
   */
  public static void main(String[] args) {
    SpringApplication.run(ShippingApplication.class, args);
  }

  /** An order to ship. */
  public record Order(String id, String address) {}

  /** A shipping label. */
  public record Label(String orderId, String tracking) {}

  /** Ships orders. */
  @Service
  public static class Shipping {
    private final List<String> shipped = new CopyOnWriteArrayList<>();

    /** Creates the service. */
    public Shipping() {}

    /**
     * Ships an order once per order id; a repeated call gets the first call's label back.
     *
     * @param order the order
     * @return its label
     */
    @Idempotent(key = "#order.id", scope = "orders", storeResult = true)
    public Label ship(Order order) {
      shipped.add(order.id());
      return new Label(order.id(), "TRK-" + shipped.size());
    }

    /**
     * Returns the ids of the orders shipped so far.
     *
     * @return the ids, in order
     */
    public List<String> shipped() {
      return List.copyOf(shipped);
    }
  }
}
