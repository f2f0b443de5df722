package dev.idem.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.Deduplicator;
import dev.idem.KeyDerivationException;
import dev.idem.Scope;
import dev.idem.key.KeyEncoding;
import dev.idem.spi.DedupStore;
import dev.idem.spi.KeyState;
import dev.idem.spring.boot.TestApp.Order;
import dev.idem.spring.boot.TestApp.OrderService;
import dev.idem.spring.boot.TestApp.Receipt;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.health.contributor.Status;

/**
 * What every store must give a Spring Boot application through the starter; each subclass boots
 * {@link TestApp} on one store.
 */
abstract class StarterContract {
  @Autowired OrderService service;
  @Autowired DedupStore store;
  @Autowired IdemDeduplicators deduplicators;
  @Autowired IdemStoreHealthIndicator health;
  @Autowired MeterRegistry meters;

  @Autowired
  @Qualifier("ordersDeduplicator")
  Deduplicator orders;

  final String id = UUID.randomUUID().toString();

  /** Removes this test's keys (each test uses keys of its own, in shared stores too). */
  @AfterEach
  void clearScopes() {
    for (String scope : new String[] {"orders", "emails", "emails-null"}) {
      deduplicators.get(scope).forget(KeyEncoding.ofString(id));
    }
    deduplicators.get("slow", Duration.ofHours(1)).forget(KeyEncoding.ofString(id));
  }

  @Test
  void aMethodRunsOncePerKeyAndDuplicatesGetTheStoredResult() {
    int before = service.runs();

    Receipt first = service.place(new Order(id, false));
    Receipt again = service.place(new Order(id, false));

    assertThat(service.runs() - before).isEqualTo(1);
    assertThat(again).isEqualTo(first);
    assertThat(orders.inspect(KeyEncoding.ofString(id))).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aMethodThatThrowsReleasesItsKeySoARetryRuns() {
    int before = service.runs();

    assertThatThrownBy(() -> service.place(new Order(id, true)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("payment declined");
    assertThat(orders.inspect(KeyEncoding.ofString(id))).isInstanceOf(KeyState.Absent.class);
    Receipt retried = service.place(new Order(id, false));

    assertThat(service.runs() - before).isEqualTo(2);
    assertThat(retried.orderId()).isEqualTo(id);
  }

  @Test
  void duplicatesThrowOrGetNullWhenTheAnnotationSaysSo() {
    service.send(id);
    assertThatThrownBy(() -> service.send(id))
        .isInstanceOf(IdempotentDuplicateException.class)
        .hasMessageContaining("already ran for key '" + id + "'");

    assertThat(service.sendReturningNull(id)).isEqualTo("sent " + id);
    assertThat(service.sendReturningNull(id)).isNull();
  }

  @Test
  void aCallWhileAnotherHoldsTheKeyThrowsOrGetsNullAndNeverRuns() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<String> holder =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return service.slow(id, release);
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
            });
    Deduplicator slow = deduplicators.get("slow", Duration.ofHours(1));
    await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> slow.inspect(KeyEncoding.ofString(id)) instanceof KeyState.InFlight);
    int before = service.runs();

    assertThatThrownBy(() -> service.slow(id, release))
        .isInstanceOf(IdempotentInFlightException.class)
        .hasMessageContaining("retry later");
    assertThat(service.slowOrNull(id)).isNull();
    assertThat(service.runs()).isEqualTo(before);

    release.countDown();
    assertThat(holder.get(20, TimeUnit.SECONDS)).isEqualTo("done " + id);
    assertThat(service.slowOrNull(id)).as("now a duplicate").isNull();
    assertThat(service.runs()).isEqualTo(before);
  }

  @Test
  void aCallWithoutAKeyFailsSayingSo() {
    assertThatThrownBy(() -> service.needsAKey(null))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("'#order?.id'")
        .hasMessageContaining("gave null");
  }

  @Test
  void eachConfiguredScopeIsADeduplicatorBeanWithItsSettings() {
    assertThat(orders.scope()).isEqualTo(Scope.of("orders"));
    assertThat(orders.config().ttl()).isEqualTo(Duration.ofHours(2));
    assertThat(orders.config().lease()).isEqualTo(Duration.ofSeconds(30));
    assertThat(orders.store()).isSameAs(store);
  }

  @Test
  void theStoreHasAHealthIndicatorAndDecisionsAreCounted() {
    service.place(new Order(id, false));
    service.place(new Order(id, false));

    assertThat(health.health().getStatus()).isEqualTo(Status.UP);
    assertThat(health.health().getDetails()).containsEntry("store", store.describe());
    assertThat(meters.counter("idem.decisions", "scope", "orders/dedup", "outcome", "pass").count())
        .isPositive();
    assertThat(
            meters
                .counter("idem.decisions", "scope", "orders/dedup", "outcome", "duplicate")
                .count())
        .isPositive();
  }
}
