package dev.idem.server.auth;

import dev.idem.IdemException;

/**
 * A request whose caller is not accepted. The message is short and fixed (it goes to the caller);
 * the detail, for the operator's log only, is {@link #detail()}.
 */
public final class CallerException extends IdemException {
  private static final long serialVersionUID = 1L;

  /** Why a caller was refused. */
  public enum Reason {
    /** No token, or a token that does not verify: {@code 401 invalid_token}. */
    INVALID_TOKEN(401, "invalid_token", "a valid bearer token is required"),
    /** More nested {@code act} claims than allowed: {@code 403 delegation_too_deep}. */
    DELEGATION_TOO_DEEP(
        403,
        "delegation_too_deep",
        "the token's delegation chain (act) is deeper than this source accepts"),
    /** The keys cannot be fetched now: {@code 503 keys_unavailable}, retry later. */
    KEYS_UNAVAILABLE(
        503, "keys_unavailable", "the keys that verify the token cannot be fetched now; retry"),
    /** No verified client certificate (mutual TLS): {@code 401 client_certificate_required}. */
    CLIENT_CERTIFICATE_REQUIRED(
        401,
        "client_certificate_required",
        "a client certificate issued by a CA this service trusts is required (mutual TLS)"),
    /**
     * A verified client certificate from a CA this source does not accept: {@code 403
     * client_certificate_not_accepted}.
     */
    CLIENT_CERTIFICATE_NOT_ACCEPTED(
        403,
        "client_certificate_not_accepted",
        "this source does not accept client certificates issued by this certificate's CA"),
    /**
     * No principal, or a malformed one, in the header a trusted producer sets: {@code 401
     * missing_principal}.
     */
    MISSING_PRINCIPAL(
        401,
        "missing_principal",
        "the principal header set by the trusted producer is missing or malformed");

    private final int status;
    private final String code;
    private final String message;

    Reason(int status, String code, String message) {
      this.status = status;
      this.code = code;
      this.message = message;
    }

    /**
     * Returns the HTTP status.
     *
     * @return the status
     */
    public int status() {
      return status;
    }

    /**
     * Returns the machine-readable error code.
     *
     * @return the code
     */
    public String code() {
      return code;
    }
  }

  private final Reason reason;
  private final String detail;

  /**
   * Creates the exception.
   *
   * @param reason why the caller was refused
   * @param detail what exactly failed, for the log
   */
  public CallerException(Reason reason, String detail) {
    super(reason.message);
    this.reason = reason;
    this.detail = detail;
  }

  /**
   * Returns why the caller was refused.
   *
   * @return the reason
   */
  public Reason reason() {
    return reason;
  }

  /**
   * Returns what exactly failed (for the operator's log, never for the caller).
   *
   * @return the detail
   */
  public String detail() {
    return detail;
  }
}
