package dev.idem.server.source.webhook;

import dev.idem.TimeSource;
import dev.idem.server.auth.CallerAuthenticator;
import dev.idem.server.auth.CallerException;
import dev.idem.server.pipeline.Answer;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Outcome;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.signature.SignatureException;
import dev.idem.server.signature.SignatureVerifier;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pipeline's webhook edge: verifies the provider's signature and the caller's token (both before
 * anything is reserved), hands the event to the {@link Pipeline}, and answers its outcome as the
 * webhook contract says ({@link WebhookAnswers}). A rejected signature is logged through a
 * rate-limited {@link RejectionLog} (pipeline, reason, the provider's delivery id).
 *
 * <p>Thread-safe; each call runs on the caller's thread.
 */
public final class WebhookSource {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookSource.class);

  /** The default bound on rejection log lines: 10 per second per pipeline. */
  public static final int DEFAULT_MAX_REJECTION_LINES_PER_SECOND =
      RejectionLog.DEFAULT_MAX_PER_SECOND;

  private final Pipeline pipeline;
  private final @Nullable SignatureVerifier verifier;
  private final @Nullable CallerAuthenticator callers;
  private final RejectionLog rejections;

  /**
   * Creates the edge.
   *
   * @param pipeline the pipeline
   * @param verifier the provider's signature check, or null for none
   * @param callers the caller authentication, or null for none
   * @param time the clock of the rejection log
   * @param maxRejectionLinesPerSecond at most this many rejection lines a second, at least 1
   */
  public WebhookSource(
      Pipeline pipeline,
      @Nullable SignatureVerifier verifier,
      @Nullable CallerAuthenticator callers,
      TimeSource time,
      int maxRejectionLinesPerSecond) {
    this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    this.verifier = verifier;
    this.callers = callers;
    this.rejections = new RejectionLog(LOG, pipeline.id(), time, maxRejectionLinesPerSecond);
  }

  /**
   * Creates an edge with no signature check and no caller authentication.
   *
   * @param pipeline the pipeline
   * @return the edge
   */
  public static WebhookSource unsigned(Pipeline pipeline) {
    return new WebhookSource(
        pipeline, null, null, TimeSource.system(), DEFAULT_MAX_REJECTION_LINES_PER_SECOND);
  }

  /**
   * Returns the pipeline.
   *
   * @return the pipeline
   */
  public Pipeline pipeline() {
    return pipeline;
  }

  /**
   * Handles one webhook request.
   *
   * @param request the request's body and headers
   * @return the HTTP answer
   */
  public Answer handle(InboundRequest request) {
    return WebhookAnswers.of(process(request), pipeline.replays());
  }

  /**
   * Handles one webhook request as {@link #handle} does, answering once the pipeline's outcome is
   * settled ({@link Pipeline#processAsync}): a plain commit's sync is not waited for on this
   * thread.
   *
   * @param request the request's body and headers
   * @return completes with the HTTP answer; its dependents must not block
   */
  public CompletionStage<Answer> handleAsync(InboundRequest request) {
    Admission a = admit(request);
    if (a.refused() != null) {
      return CompletableFuture.completedFuture(WebhookAnswers.of(a.refused(), pipeline.replays()));
    }
    return pipeline
        .processAsync(a.request())
        .thenApply(outcome -> WebhookAnswers.of(outcome, pipeline.replays()));
  }

  /**
   * Checks the request's signature and caller, then processes it.
   *
   * @param request the request's body and headers
   * @return the outcome
   */
  public Outcome process(InboundRequest request) {
    Admission a = admit(request);
    return a.refused() != null ? a.refused() : pipeline.process(a.request());
  }

  /** A request after the signature and caller checks: refused, or the event to process. */
  private record Admission(@Nullable Outcome refused, InboundRequest request) {}

  private Admission admit(InboundRequest request) {
    byte[] body = request.body();
    SignatureVerifier v = verifier;
    if (v != null) {
      try {
        body = v.verifiedBody(body, request.headers());
      } catch (SignatureException e) {
        InboundRequest raw = request;
        rejections.rejected(
            "signature", e.reason().name(), () -> deliveryIdOf(v, raw), 401, e.getMessage());
        return new Admission(
            new Outcome.Rejected(
                Outcome.Rejection.BAD_SIGNATURE,
                "invalid_signature",
                e.getMessage() + "; nothing was recorded for this request"),
            request);
      }
      // The event's body differs from the raw body only for a wrapped event (GitHub forms).
      request = body == request.body() ? request : request.withBody(body);
    }
    if (callers != null) {
      try {
        request = request.withPrincipals(callers.principals(request.headers()));
      } catch (CallerException e) {
        return new Admission(refused(e), request);
      }
    }
    return new Admission(null, request);
  }

  /**
   * The outcome for a refused caller; each says that nothing was recorded.
   *
   * @param e why the caller was refused
   * @return unauthenticated ({@code invalid_token}, {@code client_certificate_required}, {@code
   *     missing_principal}), forbidden ({@code delegation_too_deep}, {@code
   *     client_certificate_not_accepted}) or unavailable ({@code keys_unavailable})
   */
  public static Outcome refused(CallerException e) {
    String message = e.getMessage() + "; nothing was recorded for this request";
    return switch (e.reason()) {
      case INVALID_TOKEN, CLIENT_CERTIFICATE_REQUIRED, MISSING_PRINCIPAL ->
          new Outcome.Rejected(Outcome.Rejection.UNAUTHENTICATED, e.reason().code(), message);
      case DELEGATION_TOO_DEEP, CLIENT_CERTIFICATE_NOT_ACCEPTED ->
          new Outcome.Rejected(Outcome.Rejection.FORBIDDEN, e.reason().code(), message);
      case KEYS_UNAVAILABLE ->
          new Outcome.Unavailable(
              null, e.reason().code(), message, Pipeline.STORE_RETRY_AFTER_SECONDS);
    };
  }

  /** The provider's delivery id of a rejected request, for the log line; null if it has none. */
  private static @Nullable String deliveryIdOf(SignatureVerifier v, InboundRequest request) {
    try {
      return v.deliveryId(request.body(), request.headers()).orElse(null);
    } catch (RuntimeException e) {
      return null; // an unsigned body need not parse; the line just has no delivery id
    }
  }
}
