package dev.idem.server.auth;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.IdemConfigException;
import dev.idem.TimeSource;
import dev.idem.key.Principal;
import dev.idem.server.auth.CallerException.Reason;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Takes the caller's principal chain from a header (or a broker message's property, read through
 * the same lookup) that a <em>trusted upstream</em> set ({@code auth.principal_header}). Nothing is
 * verified: whoever can reach the source can claim any principal, so use it only where every
 * producer that can reach the source is trusted (a gateway that authenticated the caller and
 * overwrites the header, a broker whose publish permissions are locked down). Transport-neutral: it
 * reads a header lookup.
 *
 * <p>The value is either a subject alone ({@code svc-billing}: the chain of one principal with an
 * empty issuer), or a JSON array of links, the caller first, then each delegate, outermost first:
 * {@code [{"iss":"https://idp","sub":"alice"},{"iss":"https://idp","sub":"svc-billing"}]} ({@code
 * iss} may be left out: empty). A missing, blank or malformed value is {@code 401
 * missing_principal}; more than {@link #MAX_LINKS} links is {@code 403 delegation_too_deep}.
 */
public final class HeaderCallers implements CallerAuthenticator {
  /** The longest chain accepted. */
  public static final int MAX_LINKS = 11;

  private static final ObjectMapper JSON = new ObjectMapper();

  private final String header;
  private final CallerRefusals refusals;

  private HeaderCallers(String source, String header, TimeSource time) {
    this.header = header;
    this.refusals = new CallerRefusals(source, time);
  }

  /**
   * Makes the authenticator of one source.
   *
   * @param source the pipeline id, for the log
   * @param header the header (or message property) name
   * @param time the clock of the log's rate limit
   * @return the authenticator
   * @throws IdemConfigException if the name is not a header name
   */
  public static HeaderCallers create(String source, String header, TimeSource time) {
    checkName(header);
    return new HeaderCallers(
        Objects.requireNonNull(source, "source"), header, Objects.requireNonNull(time, "time"));
  }

  /**
   * Checks a header name.
   *
   * @param header the name
   * @throws IdemConfigException if it is not a header name
   */
  public static void checkName(String header) {
    if (!header.matches("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}")) {
      throw new IdemConfigException(
          "principal_header: '" + header + "' is not a header name (e.g. X-Principal)");
    }
  }

  @Override
  public List<Principal> principals(Function<String, @Nullable String> headers) {
    try {
      return parse(headers.apply(header));
    } catch (CallerException e) {
      refusals.log(e);
      throw e;
    }
  }

  private List<Principal> parse(@Nullable String value) {
    if (value == null || value.isBlank()) {
      throw new CallerException(Reason.MISSING_PRINCIPAL, "no " + header + " header");
    }
    String v = value.strip();
    if (!v.startsWith("[")) {
      return List.of(new Principal("", v));
    }
    JsonNode array;
    try {
      array = JSON.readTree(v);
    } catch (IOException e) {
      throw new CallerException(Reason.MISSING_PRINCIPAL, header + " is not a JSON array");
    }
    if (!array.isArray() || array.isEmpty()) {
      throw new CallerException(
          Reason.MISSING_PRINCIPAL, header + " is not a non-empty JSON array of {iss, sub}");
    }
    if (array.size() > MAX_LINKS) {
      throw new CallerException(
          Reason.DELEGATION_TOO_DEEP, header + " has more than " + MAX_LINKS + " links");
    }
    List<Principal> chain = new ArrayList<>();
    for (JsonNode link : array) {
      JsonNode iss = link.get("iss");
      JsonNode sub = link.get("sub");
      if (!link.isObject()
          || sub == null
          || !sub.isTextual()
          || sub.asText().isBlank()
          || (iss != null && !iss.isTextual())) {
        throw new CallerException(
            Reason.MISSING_PRINCIPAL,
            header + ": each link is {\"iss\": text, \"sub\": non-blank text}");
      }
      chain.add(new Principal(iss == null ? "" : iss.asText(), sub.asText()));
    }
    return List.copyOf(chain);
  }
}
