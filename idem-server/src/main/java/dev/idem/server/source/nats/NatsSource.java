package dev.idem.server.source.nats;

import dev.idem.IdemException;
import dev.idem.TimeSource;
import dev.idem.server.config.Masking;
import dev.idem.server.config.NatsSourceSettings;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Outcome;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.EventSource;
import dev.idem.server.source.OutageLog;
import dev.idem.server.source.SourceMeters;
import io.micrometer.core.instrument.Meter;
import io.nats.client.Connection;
import io.nats.client.ErrorListener;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PublishOptions;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.DeliverPolicy;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsJetStreamMetaData;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pipeline's NATS JetStream source: a durable pull consumer with explicit acks. One thread
 * fetches up to {@code batch} messages at a time; another hands each batch to {@link
 * Pipeline#processAll} (one batch reserve, one batch commit) and answers each outcome, while the
 * next batch is fetched (at most one fetched batch waits for the worker, so at most two batches are
 * unacknowledged):
 *
 * <ul>
 *   <li>accepted, duplicate: {@code ack};
 *   <li>in flight: {@code nak} with the delay the pipeline suggests (at most {@code max_backoff});
 *   <li>store unavailable: {@code nak} with a delay, and no fetch until that backoff (from {@code
 *       backoff}, doubling, at most {@code max_backoff}) has passed: consumption pauses and nothing
 *       is acked;
 *   <li>rejected (not JSON, no key, too large, too deep), conflict: published to {@code
 *       dead_letter} when configured (the reason in headers), then {@code term}; without a dead
 *       letter, logged and {@code term}'d (the message stays in the stream);
 *   <li>failed (delivery or transform; the key was released): {@code nak} with a growing delay,
 *       dead-lettered at the {@code max_attempts}-th delivery.
 * </ul>
 *
 * <p>From its fetch until it is settled, {@code inProgress} is sent for a batch's messages every
 * third of the consumer's ack wait, so long work (or the wait behind the batch before it) is not
 * redelivered. A store outage is logged once ({@link OutageLog}), not per message. A dead letter
 * that JetStream does not confirm is not a term: the message is nak'ed and tried again.
 */
public final class NatsSource implements EventSource {
  private static final Logger LOG = LoggerFactory.getLogger(NatsSource.class);

  /** How long one fetch waits for its batch to fill. */
  static final Duration FETCH_WAIT = Duration.ofMillis(500);

  private final NatsSourceSettings settings;
  private final Pipeline pipeline;
  private final SourceMeters meters;
  private final String where;
  private final OutageLog outage;
  private final Object lifecycle = new Object();
  private volatile boolean running;
  private @Nullable Thread worker;
  private @Nullable Connection connection;
  private @Nullable JetStream js;
  private @Nullable JetStreamSubscription subscription;
  private @Nullable ScheduledExecutorService timer;
  private @Nullable Meter lagGauge;
  private @Nullable Thread fetcher;
  private final SynchronousQueue<Fetched> handoff = new SynchronousQueue<>();
  private Duration ackWait;
  private volatile long pausedUntilNanos = System.nanoTime();
  private Duration lastPause = Duration.ZERO;
  private volatile long pending = -1;

  /**
   * Makes the source; nothing connects until {@link #start}.
   *
   * @param settings the source's settings
   * @param pipeline the pipeline it feeds
   * @param meters the source's meters
   */
  public NatsSource(NatsSourceSettings settings, Pipeline pipeline, SourceMeters meters) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    this.meters = Objects.requireNonNull(meters, "meters");
    this.where =
        "stream "
            + settings.stream()
            + " consumer "
            + settings.durable()
            + " at "
            + Masking.url(settings.url());
    this.ackWait = settings.ackWait();
    this.outage =
        new OutageLog(
            LOG,
            pipeline.id(),
            "nats source (" + where + ")",
            "nothing is acked, the batch is nak'ed and fetching pauses (from backoff "
                + settings.backoff().toMillis()
                + " ms, doubling up to max_backoff "
                + settings.maxBackoff().toMillis()
                + " ms)",
            TimeSource.system(),
            OutageLog.DEFAULT_REMINDER);
  }

  @Override
  public String pipeline() {
    return pipeline.id();
  }

  @Override
  public void start() {
    synchronized (lifecycle) {
      if (running || worker != null) {
        return;
      }
      Connection c;
      try {
        c =
            Nats.connect(
                new Options.Builder()
                    .servers(settings.url().split(","))
                    .connectionName("idem-source-" + pipeline.id())
                    .maxReconnects(-1)
                    .errorListener(new ErrorListener() {})
                    .build());
      } catch (IOException e) {
        throw new IdemException(
            "pipeline "
                + pipeline.id()
                + ": cannot connect to NATS for "
                + where
                + ": "
                + e.getMessage()
                + "; start NATS with JetStream (nats-server -js) or fix source.nats.url",
            e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IdemException("pipeline " + pipeline.id() + ": interrupted connecting to NATS");
      }
      try {
        JetStreamManagement jsm = c.jetStreamManagement();
        ConsumerInfo info = consumer(jsm);
        ackWait = info.getConsumerConfiguration().getAckWait();
        JetStream j = c.jetStream();
        subscription =
            j.subscribe(null, PullSubscribeOptions.bind(settings.stream(), settings.durable()));
        js = j;
      } catch (IOException | JetStreamApiException | RuntimeException e) {
        closeQuietly(c);
        if (e instanceof IdemException ie) {
          throw ie;
        }
        throw new IdemException(
            "pipeline " + pipeline.id() + ": cannot consume " + where + ": " + e.getMessage(), e);
      }
      connection = c;
      timer =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "idem-nats-progress-" + pipeline.id());
                t.setDaemon(true);
                return t;
              });
      lagGauge =
          meters.lag(
              "stream", settings.stream(), this, s -> s.pending < 0 ? Double.NaN : s.pending);
      running = true;
      Thread f = new Thread(this::fetchLoop, "idem-nats-fetch-" + pipeline.id());
      f.setDaemon(true);
      fetcher = f;
      Thread t = new Thread(this::run, "idem-nats-" + pipeline.id());
      t.setDaemon(true);
      worker = t;
      f.start();
      t.start();
      LOG.info("nats source pipeline={} consuming {} (ack_wait {})", pipeline.id(), where, ackWait);
    }
  }

  /** Finds the durable consumer, or creates it with explicit acks. */
  private ConsumerInfo consumer(JetStreamManagement jsm) throws IOException, JetStreamApiException {
    try {
      jsm.getStreamInfo(settings.stream());
    } catch (JetStreamApiException e) {
      if (e.getApiErrorCode() == 10059) {
        throw new IdemException(
            "pipeline "
                + pipeline.id()
                + ": stream "
                + settings.stream()
                + " does not exist at "
                + Masking.url(settings.url())
                + "; create it (e.g. nats stream add "
                + settings.stream()
                + " --subjects '<subject>') or fix source.nats.stream");
      }
      throw e;
    }
    try {
      ConsumerInfo info = jsm.getConsumerInfo(settings.stream(), settings.durable());
      ConsumerConfiguration cc = info.getConsumerConfiguration();
      if (cc.getAckPolicy() != AckPolicy.Explicit) {
        throw new IdemException(
            "pipeline "
                + pipeline.id()
                + ": consumer "
                + settings.durable()
                + " on stream "
                + settings.stream()
                + " has ack policy "
                + cc.getAckPolicy()
                + "; Idem acks each message after it is settled, so it needs explicit acks:"
                + " delete the consumer (Idem creates it) or use another durable");
      }
      if (settings.subject() != null && !settings.subject().equals(cc.getFilterSubject())) {
        LOG.warn(
            "nats source pipeline={}: consumer {} exists with filter subject {}, not {};"
                + " it is used as it is",
            pipeline.id(),
            settings.durable(),
            cc.getFilterSubject(),
            settings.subject());
      }
      return info;
    } catch (JetStreamApiException e) {
      if (e.getApiErrorCode() != 10014) { // consumer not found
        throw e;
      }
    }
    ConsumerConfiguration.Builder b =
        ConsumerConfiguration.builder()
            .durable(settings.durable())
            .ackPolicy(AckPolicy.Explicit)
            .deliverPolicy(DeliverPolicy.All)
            .ackWait(settings.ackWait())
            .maxDeliver(settings.maxDeliver())
            .maxAckPending(Math.max(1_000L, 4L * settings.batch()));
    if (settings.subject() != null) {
      b.filterSubject(settings.subject());
    }
    LOG.info(
        "nats source pipeline={}: creating durable consumer {}", pipeline.id(), settings.durable());
    return jsm.addOrUpdateConsumer(settings.stream(), b.build());
  }

  /** A fetched batch and its in-progress timer, which runs from the fetch until it is answered. */
  private record Fetched(List<Message> messages, @Nullable ScheduledFuture<?> progress) {}

  /**
   * The fetch thread: fetches the next batch while the worker runs the one before, so the wait for
   * the server overlaps the processing. At most one batch waits here for the worker; a batch that
   * cannot be handed over because the source is closing is nak'ed at once (redelivered, never
   * acked).
   */
  private void fetchLoop() {
    JetStreamSubscription sub = Objects.requireNonNull(subscription);
    try {
      while (running) {
        long left = pausedUntilNanos - System.nanoTime();
        if (left > 0) {
          sleep(Duration.ofNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100))));
          continue; // the store was unavailable: nothing is fetched meanwhile
        }
        List<Message> batch;
        try {
          batch = sub.fetch(settings.batch(), FETCH_WAIT);
        } catch (RuntimeException e) {
          if (!running) {
            break;
          }
          LOG.warn("nats source pipeline={}: fetch failed: {}", pipeline.id(), e.toString());
          sleep(settings.backoff());
          continue;
        }
        if (batch.isEmpty()) {
          pending = 0;
          continue;
        }
        Fetched f = new Fetched(batch, startProgress(batch));
        if (!handOver(f)) {
          putBack(f);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private boolean handOver(Fetched f) throws InterruptedException {
    while (running) {
      if (handoff.offer(f, 100, TimeUnit.MILLISECONDS)) {
        return true;
      }
    }
    return false;
  }

  /** Naks a fetched batch that will not be processed (closing), so it is redelivered at once. */
  private void putBack(Fetched f) {
    if (f.progress() != null) {
      f.progress().cancel(false);
    }
    for (Message m : f.messages()) {
      try {
        m.nak();
      } catch (RuntimeException e) {
        LOG.debug("nats source: nak at close failed: {}", e.toString());
      }
    }
  }

  /** The worker thread: runs the fetched batches one after another, until the fetcher stopped. */
  private void run() {
    Thread fetcher = this.fetcher;
    while (true) {
      long left = pausedUntilNanos - System.nanoTime();
      if (left > 0 && running) {
        sleep(Duration.ofNanos(left)); // the store was unavailable: the batch in hand waits too
        continue;
      }
      Fetched f;
      try {
        f = handoff.poll(100, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (f == null) {
        if (!running && (fetcher == null || !fetcher.isAlive())) {
          return;
        }
        continue;
      }
      try {
        handle(f.messages(), f.progress());
      } catch (RuntimeException e) {
        // Not expected: the pipeline answers outcomes. What was not answered is redelivered after
        // the ack wait.
        LOG.error("nats source pipeline={}: a batch failed: {}", pipeline.id(), e.toString(), e);
        sleep(settings.backoff());
      }
    }
  }

  private void handle(List<Message> batch, @Nullable ScheduledFuture<?> progress) {
    int n = batch.size();
    Outcome[] outcomes = new Outcome[n];
    List<InboundRequest> requests = new ArrayList<>(n);
    List<Integer> index = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      Message m = batch.get(i);
      byte[] data = m.getData() == null ? new byte[0] : m.getData();
      if (data.length > settings.maxBody()) {
        outcomes[i] =
            new Outcome.Rejected(
                Outcome.Rejection.BAD_INPUT,
                "body_too_large",
                "the body has "
                    + data.length
                    + " bytes; source.nats.max_body is "
                    + settings.maxBody());
        continue;
      }
      requests.add(new InboundRequest(data, headerLookup(m.getHeaders()), List.of(), metadata(m)));
      index.add(i);
    }
    NatsJetStreamMetaData last = batch.get(n - 1).metaData();
    pending = last.pendingCount();
    List<Outcome> results;
    try {
      results = requests.isEmpty() ? List.of() : pipeline.processAll(requests);
    } finally {
      if (progress != null) {
        progress.cancel(false);
      }
    }
    for (int j = 0; j < results.size(); j++) {
      outcomes[index.get(j)] = results.get(j);
    }
    int unavailable = 0;
    for (Outcome o : outcomes) {
      if (o instanceof Outcome.Unavailable) {
        unavailable++;
      }
    }
    Duration retry = unavailable > 0 ? nextPause() : Duration.ZERO;
    lastPause = retry;
    for (int i = 0; i < n; i++) {
      answer(batch.get(i), outcomes[i], retry);
    }
    outage.observe(results, unavailable);
    if (unavailable > 0) {
      pausedUntilNanos = System.nanoTime() + retry.toNanos();
      LOG.debug(
          "nats source pipeline={}: {} messages answered unavailable; pausing consumption for {} ms"
              + " (nothing acked)",
          pipeline.id(),
          unavailable,
          retry.toMillis());
    }
  }

  /** The next pause after an outage: from backoff, doubling, at most max_backoff. */
  private Duration nextPause() {
    Duration p = lastPause.isZero() ? settings.backoff() : lastPause.multipliedBy(2);
    return p.compareTo(settings.maxBackoff()) > 0 ? settings.maxBackoff() : p;
  }

  private @Nullable ScheduledFuture<?> startProgress(List<Message> batch) {
    ScheduledExecutorService t = timer;
    if (t == null) {
      return null;
    }
    long every = Math.max(100, ackWait.toMillis() / 3);
    try {
      return t.scheduleWithFixedDelay(
          () -> {
            for (Message m : batch) {
              try {
                m.inProgress();
              } catch (RuntimeException e) {
                LOG.debug("nats source: in-progress failed: {}", e.toString());
              }
            }
          },
          every,
          every,
          TimeUnit.MILLISECONDS);
    } catch (RuntimeException e) {
      return null;
    }
  }

  private void answer(Message m, Outcome o, Duration unavailableRetry) {
    meters.count(o);
    try {
      if (o.settled()) {
        m.ack();
      } else if (o instanceof Outcome.InFlight f) {
        m.nakWithDelay(capped(Duration.ofSeconds(f.retryAfterSeconds())));
        meters.count(SourceMeters.Kind.RETRIED);
      } else if (o instanceof Outcome.Unavailable) {
        m.nakWithDelay(unavailableRetry);
        meters.count(SourceMeters.Kind.RETRIED);
      } else if (o instanceof Outcome.Rejected r) {
        deadLetter(m, r.code(), r.message());
      } else if (o instanceof Outcome.Conflict) {
        deadLetter(m, "conflict", "the key was used before with a different payload");
      } else if (o instanceof Outcome.Failed f) {
        long delivered = m.metaData().deliveredCount();
        if (delivered >= settings.maxAttempts()) {
          deadLetter(
              m,
              f.code(),
              f.message() + " (delivery " + delivered + " of " + settings.maxAttempts() + ")");
        } else {
          Duration d =
              settings.backoff().multipliedBy(1L << Math.min(20, Math.max(0, delivered - 1)));
          m.nakWithDelay(capped(d));
          meters.count(SourceMeters.Kind.RETRIED);
        }
      }
    } catch (RuntimeException e) {
      // The connection dropped: the server redelivers what was not acked after the ack wait.
      LOG.warn(
          "nats source pipeline={}: answering {} failed: {}",
          pipeline.id(),
          m.metaData().streamSequence(),
          e.toString());
    }
  }

  private Duration capped(Duration d) {
    return d.compareTo(settings.maxBackoff()) > 0 ? settings.maxBackoff() : d;
  }

  /**
   * Publishes a bad message to the dead-letter subject (JetStream, confirmed), then terms it; a
   * publish that is not confirmed naks it instead, so nothing is dropped.
   */
  private void deadLetter(Message m, String code, String message) {
    NatsJetStreamMetaData meta = m.metaData();
    String dl = settings.deadLetter();
    LOG.warn(
        "nats source pipeline={} stream={} seq={} subject={} deliveries={}: {} ({}): {}",
        pipeline.id(),
        settings.stream(),
        meta.streamSequence(),
        m.getSubject(),
        meta.deliveredCount(),
        dl == null ? "terminated, no dead_letter" : "dead letter to " + dl,
        code,
        message);
    if (dl == null) {
      m.term();
      meters.count(SourceMeters.Kind.SKIPPED);
      return;
    }
    Headers h = new Headers();
    Headers original = m.getHeaders();
    if (original != null) {
      for (String k : original.keySet()) {
        if (!k.equalsIgnoreCase("Nats-Msg-Id")) {
          h.put(k, original.get(k));
        } else {
          h.put("Idem-Original-Msg-Id", original.get(k));
        }
      }
    }
    h.put("Idem-Reason", code);
    h.put("Idem-Reason-Message", message.replaceAll("[\\r\\n]+", " "));
    h.put("Idem-Pipeline", pipeline.id());
    h.put("Idem-Source-Stream", settings.stream());
    h.put("Idem-Source-Subject", m.getSubject());
    h.put("Idem-Source-Sequence", Long.toString(meta.streamSequence()));
    h.put("Idem-Deliveries", Long.toString(meta.deliveredCount()));
    JetStream j = Objects.requireNonNull(js);
    try {
      // One dead letter per original message, however often it is redelivered.
      j.publish(
          dl,
          h,
          m.getData(),
          PublishOptions.builder()
              .messageId(settings.stream() + ":" + meta.streamSequence())
              .build());
      m.term();
      meters.count(SourceMeters.Kind.DEAD_LETTERED);
    } catch (IOException | JetStreamApiException | RuntimeException e) {
      LOG.error(
          "nats source pipeline={}: the dead letter to {} was not confirmed ({}); seq {} is"
              + " retried: does a stream capture {}?",
          pipeline.id(),
          dl,
          e.toString(),
          meta.streamSequence(),
          dl);
      m.nakWithDelay(settings.maxBackoff());
      meters.count(SourceMeters.Kind.RETRIED);
    }
  }

  private Map<String, String> metadata(Message m) {
    NatsJetStreamMetaData meta = m.metaData();
    return Map.of(
        "stream", settings.stream(),
        "consumer", settings.durable(),
        "subject", m.getSubject(),
        "sequence", Long.toString(meta.streamSequence()),
        "delivered", Long.toString(meta.deliveredCount()));
  }

  /** NATS headers by case-insensitive name (NATS header names are case-sensitive). */
  static Function<String, @Nullable String> headerLookup(@Nullable Headers headers) {
    if (headers == null || headers.isEmpty()) {
      return name -> null;
    }
    return name -> {
      String v = headers.getFirst(name);
      if (v != null) {
        return v;
      }
      for (String k : headers.keySet()) {
        if (k.equalsIgnoreCase(name)) {
          return headers.getFirst(k);
        }
      }
      return null;
    };
  }

  private void sleep(Duration d) {
    try {
      long until = System.nanoTime() + d.toNanos();
      while (running) {
        long left = until - System.nanoTime();
        if (left <= 0) {
          return;
        }
        TimeUnit.NANOSECONDS.sleep(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    Thread t;
    Thread f;
    synchronized (lifecycle) {
      running = false;
      t = worker;
      worker = null;
      f = fetcher;
      fetcher = null;
    }
    if (f != null) {
      try {
        f.join(FETCH_WAIT.toMillis() + 5_000); // a fetch returns within its wait
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (t != null) {
      try {
        // The batch in hand is settled and answered; a fetch returns within its wait.
        t.join(Math.max(5_000, ackWait.toMillis()));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (t.isAlive()) {
        LOG.warn(
            "nats source pipeline={}: the batch in hand did not finish; it is redelivered",
            pipeline.id());
        t.interrupt();
      }
    }
    synchronized (lifecycle) {
      ScheduledExecutorService tm = timer;
      if (tm != null) {
        tm.shutdownNow();
        timer = null;
      }
      Meter g = lagGauge;
      if (g != null) {
        meters.remove(g);
        lagGauge = null;
      }
      Connection c = connection;
      connection = null;
      subscription = null;
      js = null;
      if (c != null) {
        try {
          c.flush(Duration.ofSeconds(2)); // the acks reach the server before the connection closes
        } catch (Exception e) {
          LOG.debug("nats source: flush at close failed: {}", e.toString());
        }
        closeQuietly(c);
      }
    }
  }

  private static void closeQuietly(Connection c) {
    try {
      c.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      LOG.debug("nats source: close failed: {}", e.toString());
    }
  }
}
