package dev.idem.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.server.pipeline.Answer;
import dev.idem.server.support.SwitchableStore;
import dev.idem.store.memory.MemoryDedupStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/**
 * Issue 9 §2: under a table lock {@code /health} stayed 200 while every request hung. The check now
 * bounds each store's check: one that does not answer makes it 503, naming the store.
 */
class HealthCheckTest {
  @Test
  void aStoreThatDoesNotAnswerMakesHealth503NamingItAndTheOthersStayUp() {
    // Given two stores, one of which stalls
    MemoryDedupStore fine = MemoryDedupStore.builder().build();
    SwitchableStore stalled = new SwitchableStore();
    CountDownLatch release = new CountDownLatch(1);
    stalled.onHealth(
        () -> {
          try {
            release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    HealthCheck check = new HealthCheck(List.of(fine, stalled), Duration.ofMillis(200));
    try {
      // When /health is asked twice (the second time the first check is still stuck)
      Answer first = check.check();
      Answer second = check.check();

      // Then both answers come, 503 with Retry-After, saying which store did not answer
      for (Answer a : List.of(first, second)) {
        String body = new String(a.body(), StandardCharsets.UTF_8);
        assertThat(a.status()).isEqualTo(503);
        assertThat(a.headers()).containsKey("Retry-After");
        assertThat(body)
            .contains("\"store\":\"switchable\",\"status\":\"down\"")
            .contains("did not answer within 200ms")
            .contains("\"store\":\"memory(maxKeysPerScope=10000)\",\"status\":\"up\"");
      }

      // And once the store answers again, so does /health
      release.countDown();
      assertThat(check.check().status()).isEqualTo(200);
    } finally {
      release.countDown();
    }
  }
}
