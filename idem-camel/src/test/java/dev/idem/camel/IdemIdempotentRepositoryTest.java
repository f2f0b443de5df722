package dev.idem.camel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.KeyDerivationException;
import dev.idem.Scope;
import dev.idem.spi.KeyState;
import dev.idem.store.memory.MemoryDedupStore;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The repository's calls one by one, outside a route. */
class IdemIdempotentRepositoryTest {
  private final MemoryDedupStore store = MemoryDedupStore.builder().build();
  private final IdemIdempotentRepository repo =
      IdemIdempotentRepository.of(store, Scope.of("camel-api"));

  @AfterEach
  void close() {
    store.close();
  }

  @Test
  void addReservesConfirmCommitsAndContainsSeesBoth() {
    assertThat(repo.contains("a")).isFalse();
    assertThat(repo.add("a")).isTrue();
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.InFlight.class);
    assertThat(repo.contains("a")).isTrue();
    assertThat(repo.add("a")).as("in flight").isFalse();

    assertThat(repo.confirm("a")).isTrue();

    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Committed.class);
    assertThat(repo.add("a")).as("committed").isFalse();
    assertThat(repo.confirm("a")).as("nothing held any more").isFalse();
  }

  @Test
  void removeReleasesOnlyAReservationItHolds() {
    repo.add("a");
    assertThat(repo.remove("a")).isTrue();
    assertThat(repo.contains("a")).isFalse();

    repo.add("b");
    repo.confirm("b");
    assertThat(repo.remove("b")).as("a committed key is not released").isFalse();
    assertThat(repo.contains("b")).isTrue();

    assertThat(repo.forget("b")).isTrue();
    assertThat(repo.contains("b")).isFalse();
  }

  @Test
  void anExchangeSettlesOnlyTheReservationItMade() {
    CamelContext camel = new DefaultCamelContext();
    Exchange holder = new DefaultExchange(camel);
    Exchange other = new DefaultExchange(camel);

    assertThat(repo.add(holder, "a")).isTrue();
    assertThat(repo.add(other, "a")).isFalse();
    assertThat(repo.confirm(other, "a")).as("the other exchange holds nothing").isFalse();
    assertThat(repo.contains("a")).isTrue();

    assertThat(repo.confirm(holder, "a")).isTrue();
    assertThat(repo.inspect("a")).isInstanceOf(KeyState.Committed.class);
  }

  @Test
  void aBlankMessageIdIsAClearError() {
    assertThatThrownBy(() -> repo.add(" "))
        .isInstanceOf(KeyDerivationException.class)
        .hasMessageContaining("blank key");
  }
}
