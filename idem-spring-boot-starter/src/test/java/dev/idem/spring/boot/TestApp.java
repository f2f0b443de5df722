package dev.idem.spring.boot;

import dev.idem.spring.boot.Idempotent.OnDuplicate;
import dev.idem.spring.boot.Idempotent.OnInFlight;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;

/** The application the starter's tests boot: one service with {@link Idempotent} methods. */
@SpringBootConfiguration
@EnableAutoConfiguration
class TestApp {
  @Bean
  OrderService orderService() {
    return new OrderService();
  }

  @Bean
  MeterRegistry meterRegistry() {
    return new SimpleMeterRegistry();
  }

  record Order(String id, boolean fail) {}

  record Receipt(String orderId, int run) {}

  /** A bean whose methods count their runs. */
  static class OrderService {
    private final AtomicInteger runs = new AtomicInteger();

    /** Returns how many times the methods ran (a method: the bean is a class proxy). */
    public int runs() {
      return runs.get();
    }

    @Idempotent(key = "#order.id", scope = "orders", storeResult = true)
    public Receipt place(Order order) {
      int run = runs.incrementAndGet();
      if (order.fail()) {
        throw new IllegalStateException("payment declined for " + order.id());
      }
      return new Receipt(order.id(), run);
    }

    @Idempotent(key = "#id", scope = "emails", onDuplicate = OnDuplicate.THROW)
    public void send(String id) {
      runs.incrementAndGet();
    }

    @Idempotent(key = "#id", scope = "emails-null", onDuplicate = OnDuplicate.RETURN_NULL)
    public String sendReturningNull(String id) {
      runs.incrementAndGet();
      return "sent " + id;
    }

    @Idempotent(key = "#id", scope = "slow", ttl = "1h")
    public String slow(String id, CountDownLatch release) throws InterruptedException {
      runs.incrementAndGet();
      release.await(20, TimeUnit.SECONDS);
      return "done " + id;
    }

    @Idempotent(key = "#id", scope = "slow", ttl = "1h", onInFlight = OnInFlight.RETURN_NULL)
    public String slowOrNull(String id) {
      runs.incrementAndGet();
      return "done " + id;
    }

    @Idempotent(key = "#order?.id", scope = "orders")
    public String needsAKey(Order order) {
      return "ran";
    }
  }
}
