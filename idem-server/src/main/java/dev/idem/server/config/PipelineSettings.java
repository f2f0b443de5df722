package dev.idem.server.config;

import dev.idem.IdemConfigException;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * One pipeline: source, then dedup, ordering, transform and delivery, each optional but the source
 * and the delivery.
 *
 * @param id 1 to 64 characters of letters, digits, {@code _ . -}; names the dedup scope, the outbox
 *     queue, metrics and admin URLs
 * @param source where the events come from
 * @param dedup the dedup step, or null for none (every event is delivered)
 * @param ordering the ordering step, or null for none
 * @param jq the jq transform program, or null for none
 * @param deliver the delivery
 * @param tenant where each event's tenant is read ({@code tenant}), or null for keys shared by
 *     every sender; with one, keys are scoped per tenant
 */
public record PipelineSettings(
    String id,
    SourceSettings source,
    @Nullable DedupSettings dedup,
    @Nullable OrderingSettings ordering,
    @Nullable String jq,
    DeliverSettings deliver,
    @Nullable TenantSpec tenant) {
  private static final Pattern ID = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

  /**
   * Validates the fields.
   *
   * @throws IdemConfigException naming the field
   */
  public PipelineSettings {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(deliver, "deliver");
    if (!ID.matcher(id).matches()) {
      throw new IdemConfigException(
          "id: '" + id + "' is not allowed; use 1 to 64 letters, digits, '_', '.' or '-'");
    }
    if (jq != null && jq.isBlank()) {
      throw new IdemConfigException(
          "transform.jq is blank; write a jq program or remove transform");
    }
    if (tenant != null && dedup == null) {
      throw new IdemConfigException("tenant scopes the dedup keys; add dedup, or remove tenant");
    }
  }

  /**
   * Makes a pipeline without tenants.
   *
   * @param id the pipeline id
   * @param webhook the webhook source
   * @param dedup the dedup step, or null
   * @param ordering the ordering step, or null
   * @param jq the jq program, or null
   * @param deliver the delivery
   * @throws IdemConfigException naming the field
   */
  public PipelineSettings(
      String id,
      WebhookSettings webhook,
      @Nullable DedupSettings dedup,
      @Nullable OrderingSettings ordering,
      @Nullable String jq,
      DeliverSettings deliver) {
    this(id, webhook, dedup, ordering, jq, deliver, null);
  }

  /**
   * Returns the webhook source, if this pipeline's source is a webhook.
   *
   * @return the webhook settings, or null for another source
   */
  public @Nullable WebhookSettings webhook() {
    return source instanceof WebhookSettings w ? w : null;
  }
}
