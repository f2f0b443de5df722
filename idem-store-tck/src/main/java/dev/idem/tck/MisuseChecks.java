package dev.idem.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.DedupStore;
import dev.idem.spi.OutboxMessage;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.StoreCapabilities;
import dev.idem.spi.Ttl;
import org.junit.jupiter.api.Test;

/**
 * What a store can rely on never receiving (the request records reject bad fields), and the basics
 * every store answers: capabilities that match its interfaces, a description, a health check, and
 * refusal after {@code close}.
 */
abstract class MisuseChecks extends ContractChecks {

  MisuseChecks(StoreFixture fx) {
    super(fx);
  }

  @Test
  void reserveRequestsWithInvalidFieldsAreRejected() {
    Scope s = scope();
    DedupKey k = newKey();
    long at = now();
    assertThatThrownBy(() -> new ReserveRequest(s, k, null, 0, at, LEASE, SLIDING))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("token");
    assertThatThrownBy(() -> new ReserveRequest(s, k, null, 1, at, 0, SLIDING))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lease");
    assertThatThrownBy(() -> new ReserveRequest(s, k, null, 1, at, -5, SLIDING))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lease");
    assertThatThrownBy(() -> new ReserveRequest(null, k, null, 1, at, LEASE, SLIDING))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("scope");
    assertThatThrownBy(() -> new ReserveRequest(s, null, null, 1, at, LEASE, SLIDING))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("key");
    assertThatThrownBy(() -> new ReserveRequest(s, k, null, 1, at, LEASE, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("ttl");
  }

  @Test
  void settleRequestsWithInvalidFieldsAreRejected() {
    Scope s = scope();
    DedupKey k = newKey();
    long at = now();
    assertThatThrownBy(() -> new CommitRequest(null, k, 1, at, SLIDING, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("scope");
    assertThatThrownBy(() -> new CommitRequest(s, null, 1, at, SLIDING, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("key");
    assertThatThrownBy(() -> new CommitRequest(s, k, 1, at, null, null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("ttl");
    assertThatThrownBy(() -> new ReleaseRequest(null, k, 1, at))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("scope");
    assertThatThrownBy(() -> new ReleaseRequest(s, null, 1, at))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("key");
  }

  @Test
  void ttlsAndOutboxMessagesWithInvalidFieldsAreRejected() {
    DedupKey k = newKey();
    assertThatThrownBy(() -> new Ttl(-1, Expiry.SLIDING))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("negative");
    assertThatThrownBy(() -> new Ttl(1, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new OutboxMessage(" ", k, new byte[0]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("blank");
    assertThatThrownBy(() -> new OutboxMessage("q", null, new byte[0]))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> new OutboxMessage("q", k, null))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void theStoreReportsTheCapabilitiesItsTestDeclares() {
    // fx.capabilities() fails unless store().capabilities() equals expectedCapabilities()
    assertThat(fx.capabilities()).isEqualTo(store().capabilities());
  }

  @Test
  void theCapabilitiesMatchTheInterfacesTheStoreImplements() {
    StoreCapabilities c = fx.capabilities();
    if (c.outbox()) {
      assertThat(store())
          .as("%s says capabilities().outbox(), so it implements OutboxStore", store().describe())
          .isInstanceOf(OutboxStore.class);
    }
  }

  @Test
  void theStoreDescribesItselfAndPassesItsHealthCheck() {
    assertThat(store().describe()).as("describe()").isNotBlank();
    store().checkHealth();
  }

  @Test
  void aClosedStoreRefusesFurtherCalls() {
    DedupStore s = store();
    DedupKey key = newKey();
    fx.close(s);

    assertThatThrownBy(() -> s.reserve(reserveRequest(key, newToken())))
        .as("reserve on a closed store")
        .isInstanceOf(RuntimeException.class);
  }
}
