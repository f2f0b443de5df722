package dev.idem.server.support;

import dev.idem.server.pipeline.Answer;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.webhook.WebhookAnswers;

/** What a webhook sender is answered when a pipeline processes its request. */
public final class PipelineAnswers {
  private PipelineAnswers() {}

  /**
   * Processes an event as an unsigned webhook and returns the HTTP answer.
   *
   * @param p the pipeline
   * @param request the event
   * @return the answer
   */
  public static Answer answer(Pipeline p, InboundRequest request) {
    return WebhookAnswers.of(p.process(request), p.replays());
  }
}
