package dev.idem.server.deliver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DedupKey;
import dev.idem.spi.PendingEntry;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The markers a blocked or operator-retried outbox entry carries in its last error. */
class BlockedKeysTest {
  private static final DedupKey KEY = DedupKey.ofWords(1, 2, 3, 4);

  private static PendingEntry entry(String orderingKey, String lastError) {
    byte[] payload =
        DeliveryCodec.encode(
            new Delivery(
                "orders",
                "orders:1",
                orderingKey,
                "{}".getBytes(StandardCharsets.UTF_8),
                Map.of()));
    return new PendingEntry(
        7, "orders", KEY, payload, 3, 1_000, BlockedKeys.PARKED_UNTIL, lastError);
  }

  @Test
  void aBlockedEntryReadsBackWithWhenHowOftenAndWhy() {
    String error = BlockedKeys.blockedError(1_234, 3, "HTTP 400: bad total");

    assertThat(BlockedKeys.isBlocked(error)).isTrue();
    assertThat(BlockedKeys.displayError(error)).isEqualTo("HTTP 400: bad total");
    assertThat(BlockedKeys.of(entry("A", error), DeliveryCodec::decode))
        .hasValueSatisfying(
            b -> {
              assertThat(b.id()).isEqualTo(7);
              assertThat(b.orderingKey()).isEqualTo("A");
              assertThat(b.attempts()).isEqualTo(3);
              assertThat(b.claims()).isEqualTo(3);
              assertThat(b.sinceMillis()).isEqualTo(1_234);
              assertThat(b.lastError()).isEqualTo("HTTP 400: bad total");
            });
  }

  @Test
  void aRetriedEntryCountsItsAttemptsFromTheRetryAndKeepsThatAcrossFailures() {
    String retried = BlockedKeys.attemptsFromError(5, "retried by an operator: HTTP 503");
    String failedAgain =
        BlockedKeys.attemptsFromError(BlockedKeys.attemptsFrom(retried), "HTTP 503 again");

    assertThat(BlockedKeys.attemptsFrom(retried)).isEqualTo(5);
    assertThat(BlockedKeys.attemptsFrom(failedAgain)).isEqualTo(5);
    assertThat(BlockedKeys.displayError(failedAgain)).isEqualTo("HTTP 503 again");
    assertThat(BlockedKeys.isBlocked(failedAgain)).isFalse();
    assertThat(BlockedKeys.attemptsFromError(0, "HTTP 503")).isEqualTo("HTTP 503");
  }

  @Test
  void plainErrorsAndDownstreamTextThatLooksLikeAMarkerInsideAreNotMarkers() {
    assertThat(BlockedKeys.attemptsFrom(null)).isZero();
    assertThat(BlockedKeys.attemptsFrom("HTTP 503")).isZero();
    assertThat(BlockedKeys.isBlocked("HTTP 500: [idem:blocked since=1 attempts=1] x")).isFalse();
    assertThat(BlockedKeys.displayError("HTTP 503")).isEqualTo("HTTP 503");
    assertThat(BlockedKeys.displayError(null)).isNull();
  }

  @Test
  void anEntryWithoutAnOrderingKeyOrAnUndecodablePayloadIsNotABlockedKey() {
    String error = BlockedKeys.blockedError(1, 1, "HTTP 400");
    assertThat(BlockedKeys.of(entry(null, error), DeliveryCodec::decode)).isEmpty();
    PendingEntry garbage = new PendingEntry(8, "orders", KEY, new byte[] {1, 2}, 1, 1, 1, error);
    assertThat(BlockedKeys.of(garbage, DeliveryCodec::decode)).isEmpty();
  }
}
