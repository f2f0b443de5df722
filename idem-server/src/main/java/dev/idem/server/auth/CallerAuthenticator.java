package dev.idem.server.auth;

import dev.idem.key.Principal;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/** Authenticates the caller of one request and returns its principal chain. Thread-safe. */
public interface CallerAuthenticator {

  /**
   * Authenticates a request's caller.
   *
   * @param headers the request's headers, by case-insensitive name
   * @return the principal chain, the caller first, then each delegate (outermost first); not empty
   * @throws CallerException if the caller is not accepted
   */
  List<Principal> principals(Function<String, @Nullable String> headers);
}
