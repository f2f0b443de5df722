package dev.idem.store.rocksdb;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.StoreException;
import dev.idem.StoreUnavailableException;
import org.junit.jupiter.api.Test;
import org.rocksdb.RocksDBException;
import org.rocksdb.Status;

class RocksDbErrorMappingTest {
  private static RocksDBException error(Status.Code code) {
    return new RocksDBException("boom", new Status(code, Status.SubCode.None, "boom"));
  }

  @Test
  void ioErrorsAndBusyStatesAreRetryableAndSayWhetherTheWriteMayHaveHappened() {
    RuntimeException io = Handles.failure("rocksdb:/d", "commit", error(Status.Code.IOError), true);
    RuntimeException busy =
        Handles.failure("rocksdb:/d", "reserve", error(Status.Code.Busy), false);

    assertThat(io)
        .isInstanceOfSatisfying(
            StoreUnavailableException.class,
            e -> {
              assertThat(e.outcomeUnknown()).isTrue();
              assertThat(e.store()).isEqualTo("rocksdb:/d");
            })
        .hasMessageContaining("commit failed")
        .hasMessageContaining("Check the disk");
    assertThat(busy)
        .isInstanceOfSatisfying(
            StoreUnavailableException.class, e -> assertThat(e.outcomeUnknown()).isFalse());
  }

  @Test
  void corruptionIsNotRetryableAndSaysWhatToDo() {
    RuntimeException corrupt =
        Handles.failure("rocksdb:/d", "inspect", error(Status.Code.Corruption), false);

    assertThat(corrupt)
        .isInstanceOf(StoreException.class)
        .isNotInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("corrupt")
        .hasMessageContaining("backup");
  }

  @Test
  void anErrorWithoutAStatusCountsAsAnIoError() {
    RuntimeException e =
        Handles.failure("rocksdb:/d", "write", new RocksDBException("no status"), true);

    assertThat(e).isInstanceOf(StoreUnavailableException.class);
  }
}
