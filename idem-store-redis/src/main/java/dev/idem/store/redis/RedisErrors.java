package dev.idem.store.redis;

import dev.idem.IdemException;
import dev.idem.StoreException;
import dev.idem.StoreUnavailableException;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandInterruptedException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.jspecify.annotations.Nullable;

/** Every message the Redis store throws, and the mapping of Lettuce's exceptions, in one place. */
final class RedisErrors {
  private RedisErrors() {}

  /** Answers that mean Redis refused the command without running it; retry later. */
  private static final String[] REFUSED = {
    "LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "NOREPLICAS", "MISCONF"
  };

  static StoreException badValue(String key) {
    return new StoreException(
        "Redis key '"
            + key
            + "' holds a value that is not an Idem v1 entry: another application writes under"
            + " Idem's prefix, or a newer Idem wrote it. Give Idem a prefix no one else uses"
            + " (RedisDedupStore.builder(..).prefix(..)), or delete the key (DEL "
            + key
            + ").");
  }

  static StoreException wrongType(String key) {
    return new StoreException(
        "Redis key '"
            + key
            + "' holds a non-string value (WRONGTYPE): another application writes under Idem's"
            + " prefix. Give Idem a prefix no one else uses (RedisDedupStore.builder(..)"
            + ".prefix(..)), or delete the key (DEL "
            + key
            + ").");
  }

  static StoreException unexpectedReply(String what, @Nullable Object reply, String store) {
    return new StoreException(
        "Redis answered "
            + what
            + " on "
            + store
            + " with "
            + reply
            + ", which Idem's script never returns: is something rewriting Idem's scripts or"
            + " proxying Redis?");
  }

  static IllegalStateException closed(String store) {
    return new IllegalStateException("the Redis store " + store + " is closed; open a new one");
  }

  static StoreUnavailableException timedOut(String store, String what, Duration timeout) {
    return new StoreUnavailableException(
        store,
        true,
        what
            + " on "
            + store
            + " got no answer within "
            + timeout.toMillis()
            + " ms: the outcome is unknown (it may have been applied; an in-flight entry it left"
            + " is healed by its lease). Check Redis latency (SLOWLOG, a blocked or swapping"
            + " server) or raise commandTimeout.");
  }

  static StoreUnavailableException interrupted(String store, String what) {
    Thread.currentThread().interrupt();
    return new StoreUnavailableException(
        store,
        true,
        "interrupted while waiting for "
            + what
            + " on "
            + store
            + ": the outcome is unknown (an in-flight entry it left is healed by its lease)");
  }

  /**
   * Maps a failure of one command.
   *
   * @param failure what Lettuce threw or completed the command with
   * @param store the store's description
   * @param what the operation, e.g. {@code reserve}
   * @param key the Redis key, or null for commands without one
   * @param timeout the command timeout, for the message
   * @return the exception to throw
   */
  static IdemException map(
      Throwable failure, String store, String what, @Nullable String key, Duration timeout) {
    Throwable t = failure;
    while ((t instanceof ExecutionException || t instanceof CompletionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    if (t instanceof IdemException idem) {
      return idem;
    }
    if (t instanceof RedisCommandTimeoutException || t instanceof CancellationException) {
      return timedOut(store, what, timeout);
    }
    if (t instanceof RedisCommandInterruptedException) {
      return interrupted(store, what);
    }
    String message = String.valueOf(t.getMessage());
    if (t instanceof RedisConnectionException) {
      return new StoreUnavailableException(
          store,
          false,
          what
              + " was not sent: cannot connect to "
              + store
              + " ("
              + message
              + "). Check that Redis runs and is reachable; the store reconnects by itself.",
          t);
    }
    if (t instanceof RedisCommandExecutionException) {
      return commandError(t, message, store, what, key);
    }
    if (t instanceof RedisException && isRejected(message)) {
      return new StoreUnavailableException(
          store,
          false,
          what
              + " was not sent: not connected to "
              + store
              + " (commands are rejected while the connection is down, never queued). The store"
              + " reconnects by itself; retry later.",
          t);
    }
    return new StoreUnavailableException(
        store,
        true,
        what
            + " on "
            + store
            + " failed after it may have been sent ("
            + message
            + "): the outcome is unknown (an in-flight entry it left is healed by its lease).",
        t);
  }

  private static IdemException commandError(
      Throwable t, String message, String store, String what, @Nullable String key) {
    if (message.startsWith("WRONGTYPE")) {
      return key == null ? new StoreException(message, t) : wrongType(key);
    }
    if (message.contains("IDEM_BAD_VALUE")) {
      return key == null ? new StoreException(message, t) : badValue(key);
    }
    if (message.startsWith("OOM")) {
      return new StoreUnavailableException(
          store,
          false,
          "Redis "
              + store
              + " refused "
              + what
              + ": out of memory ("
              + message
              + "). Nothing was written. Give Redis more maxmemory or shorten the TTLs; keep"
              + " maxmemory-policy noeviction so committed keys are never evicted silently.",
          t);
    }
    for (String code : REFUSED) {
      if (message.startsWith(code)) {
        return new StoreUnavailableException(
            store,
            false,
            "Redis " + store + " refused " + what + " (" + message + "); retry later.",
            t);
      }
    }
    return new StoreException(
        "Redis " + store + " answered " + what + " with an error: " + message, t);
  }

  private static boolean isRejected(String message) {
    String m = message.toLowerCase(java.util.Locale.ROOT);
    return m.contains("not connected") || m.contains("commands are rejected");
  }
}
