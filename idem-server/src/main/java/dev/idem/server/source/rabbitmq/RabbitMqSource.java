package dev.idem.server.source.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ShutdownSignalException;
import dev.idem.DedupKey;
import dev.idem.IdemException;
import dev.idem.server.config.Masking;
import dev.idem.server.config.RabbitMqSourceSettings;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.pipeline.Outcome;
import dev.idem.server.pipeline.Pipeline;
import dev.idem.server.source.EventSource;
import dev.idem.server.source.OutageLog;
import dev.idem.server.source.Sources;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes a RabbitMQ queue into a pipeline with manual acknowledgements. Each of {@code consumers}
 * consumers has its own channel (basic.qos {@code prefetch}) and its own thread, which takes the
 * messages in hand as one batch ({@link Pipeline#processAll}: one batch reserve) and answers each
 * outcome:
 *
 * <ul>
 *   <li>accepted, duplicate: {@code basic.ack};
 *   <li>in flight, store unavailable: held, then {@code basic.nack(requeue=true)} after {@code
 *       requeue_delay} (doubling while the consumer keeps retrying, up to {@code
 *       max_requeue_delay}): never acknowledged before it is settled;
 *   <li>rejected (bad input: not JSON, no key, too large), conflict: {@code
 *       basic.reject(requeue=false)}, which RabbitMQ routes to the queue's dead-letter exchange
 *       when it has one (and discards otherwise), logged with the reason;
 *   <li>failed (delivery or transform; the key released): requeued after the delay, and rejected to
 *       the dead-letter exchange on its {@code max_attempts}-th failure.
 * </ul>
 *
 * <p>A message held for a delay still counts against the consumer's prefetch, so a store outage
 * stops consumption at {@code consumers * prefetch} messages in hand, none acknowledged. Channel
 * operations run only on the consumer's own thread. Closing cancels the consumers, lets each finish
 * its batch (bounded), and closes the connection: what was not acknowledged is redelivered by the
 * broker, flagged {@code redelivered}.
 */
public final class RabbitMqSource implements EventSource {
  private static final Logger LOG = LoggerFactory.getLogger(RabbitMqSource.class);
  private static final long CLOSE_WAIT_MILLIS = 10_000;
  private static final int ATTEMPTS_REMEMBERED = 10_000;

  private final RabbitMqSourceSettings settings;
  private final Pipeline pipeline;
  private final RabbitMqSourceMeters meters;
  private final String where;
  private final OutageLog outage;
  private final List<Worker> workers = new ArrayList<>();
  private final ScheduledThreadPoolExecutor timer;
  private final Map<DedupKey, Integer> failures =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<DedupKey, Integer> eldest) {
          return size() > ATTEMPTS_REMEMBERED;
        }
      };
  private volatile boolean running;
  private @Nullable Connection connection;
  private @Nullable Channel stats;

  /**
   * Makes the source (nothing is opened until {@link #start}).
   *
   * @param settings the source's settings
   * @param pipeline the pipeline it feeds
   * @param context the pipeline's meters and the clock
   */
  public RabbitMqSource(
      RabbitMqSourceSettings settings, Pipeline pipeline, Sources.Context context) {
    this.settings = Objects.requireNonNull(settings, "settings");
    this.pipeline = Objects.requireNonNull(pipeline, "pipeline");
    this.meters =
        new RabbitMqSourceMeters(context.meters().registry(), pipeline.id(), settings.queue());
    this.where = Masking.url(settings.uri().toString()) + " queue " + settings.queue();
    this.outage =
        new OutageLog(
            LOG,
            pipeline.id(),
            "rabbitmq source (" + where + ")",
            "nothing is acknowledged, the messages are put back (basic.nack, requeue) after"
                + " requeue_delay "
                + settings.requeueDelay().toMillis()
                + " ms, doubling up to max_requeue_delay "
                + settings.maxRequeueDelay().toMillis()
                + " ms",
            context.time(),
            OutageLog.DEFAULT_REMINDER);
    this.timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "idem-rabbitmq-timer-" + pipeline.id());
              t.setDaemon(true);
              return t;
            });
    timer.setRemoveOnCancelPolicy(true);
  }

  @Override
  public String pipeline() {
    return pipeline.id();
  }

  /** The source's meters (for tests in this package). */
  RabbitMqSourceMeters meters() {
    return meters;
  }

  @Override
  public synchronized void start() {
    if (running) {
      return;
    }
    ConnectionFactory factory = new ConnectionFactory();
    try {
      factory.setUri(settings.uri());
      factory.setVirtualHost(RabbitMqSourceSettings.virtualHost(settings.uri()));
    } catch (Exception e) {
      throw new IdemException(
          "pipeline " + pipeline.id() + ": source.rabbitmq.uri is not usable: " + e.getMessage());
    }
    factory.setAutomaticRecoveryEnabled(true);
    factory.setTopologyRecoveryEnabled(true);
    try {
      Connection c = factory.newConnection("idem-" + pipeline.id());
      connection = c;
      Channel probe = c.createChannel();
      try {
        probe.queueDeclarePassive(settings.queue());
      } catch (IOException e) {
        throw new IdemException(
            "pipeline "
                + pipeline.id()
                + ": queue '"
                + settings.queue()
                + "' does not exist on "
                + Masking.url(settings.uri().toString())
                + "; declare it (Idem declares nothing), with a dead-letter exchange"
                + " (x-dead-letter-exchange) for the messages it rejects");
      }
      stats = probe;
      running = true;
      for (int i = 0; i < settings.consumers(); i++) {
        Channel ch = c.createChannel();
        ch.basicQos(settings.prefetch());
        Worker w = new Worker(i, ch);
        workers.add(w);
        w.thread.start();
        w.consumerTag = ch.basicConsume(settings.queue(), false, w.consumer());
      }
    } catch (IOException | TimeoutException e) {
      close();
      throw new IdemException(
          "pipeline "
              + pipeline.id()
              + ": cannot consume "
              + where
              + ": "
              + e.getMessage()
              + "; is RabbitMQ running and the user allowed to read the queue?",
          e);
    } catch (RuntimeException e) {
      close();
      throw e;
    }
    timer.scheduleWithFixedDelay(this::readDepth, 0, 5, TimeUnit.SECONDS);
    LOG.info(
        "rabbitmq source pipeline={} consuming {} consumers={} prefetch={}",
        pipeline.id(),
        where,
        settings.consumers(),
        settings.prefetch());
  }

  private void readDepth() {
    Channel ch = stats;
    try {
      if (ch == null || !ch.isOpen()) {
        Connection c = connection;
        if (c == null || !c.isOpen()) {
          return;
        }
        ch = c.createChannel();
        stats = ch;
      }
      if (ch != null) {
        meters.depth(ch.queueDeclarePassive(settings.queue()).getMessageCount());
      }
    } catch (IOException | RuntimeException e) {
      meters.depth(-1);
    }
  }

  @Override
  public void close() {
    List<Worker> ws;
    synchronized (this) {
      running = false;
      ws = List.copyOf(workers);
    }
    for (Worker w : ws) {
      w.cancel();
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MILLIS);
    for (Worker w : ws) {
      w.inbox.add(Worker.STOP);
      try {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        w.thread.join(Math.max(1, left));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (w.thread.isAlive()) {
        w.thread.interrupt();
      }
    }
    timer.shutdownNow();
    Connection c;
    synchronized (this) {
      c = connection;
      connection = null;
    }
    if (c != null) {
      try {
        c.close(5_000); // the broker requeues every unacknowledged message
      } catch (IOException | RuntimeException e) {
        LOG.debug("closing the connection to {}: {}", where, e.toString());
      }
      LOG.info("rabbitmq source pipeline={} stopped consuming {}", pipeline.id(), where);
    }
  }

  /** One message as the consumer received it. */
  private record Message(Envelope envelope, AMQP.@Nullable BasicProperties props, byte[] body) {}

  /**
   * One consumer: a channel, the queue its broker callbacks fill, and the thread that drains it.
   */
  private final class Worker implements Runnable {
    static final Object STOP = new Object();

    final Channel channel;
    final Thread thread;
    final BlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
    volatile @Nullable String consumerTag;
    int retries;

    /**
     * The delivery tags held for a delayed {@code basic.nack}: unanswered, so a {@code
     * basic.ack(multiple=true)} must not cover them. Used on the worker's thread only.
     */
    final TreeSet<Long> held = new TreeSet<>();

    Worker(int index, Channel channel) {
      this.channel = channel;
      this.thread = new Thread(this, "idem-rabbitmq-" + pipeline.id() + "-" + index);
      thread.setDaemon(true);
    }

    DefaultConsumer consumer() {
      return new DefaultConsumer(channel) {
        @Override
        public void handleDelivery(
            String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body) {
          inbox.add(new Message(envelope, props, body));
        }

        @Override
        public void handleCancel(String tag) {
          LOG.warn(
              "rabbitmq source pipeline={}: the broker cancelled the consumer of {} (queue"
                  + " deleted?); messages in hand are put back",
              pipeline.id(),
              where);
        }

        @Override
        public void handleShutdownSignal(String tag, ShutdownSignalException sig) {
          if (running && !sig.isInitiatedByApplication()) {
            LOG.warn(
                "rabbitmq source pipeline={}: channel to {} closed: {}; it recovers when the"
                    + " broker is back, unacknowledged messages are redelivered",
                pipeline.id(),
                where,
                sig.getMessage());
          }
        }
      };
    }

    void cancel() {
      String tag = consumerTag;
      if (tag != null && channel.isOpen()) {
        try {
          channel.basicCancel(tag);
        } catch (IOException | RuntimeException e) {
          LOG.debug("cancelling the consumer of {}: {}", where, e.toString());
        }
      }
    }

    @Override
    public void run() {
      List<Object> drained = new ArrayList<>();
      while (true) {
        Object first;
        try {
          first = inbox.take();
        } catch (InterruptedException e) {
          return;
        }
        drained.clear();
        drained.add(first);
        inbox.drainTo(drained, Math.max(0, settings.prefetch() * 2));
        List<Message> batch = new ArrayList<>(drained.size());
        boolean stop = false;
        for (Object o : drained) {
          if (o == STOP) {
            stop = true;
          } else if (o instanceof Runnable r) {
            r.run();
          } else if (!stop) {
            batch.add((Message) o);
          }
        }
        if (!batch.isEmpty()) {
          handle(batch);
        }
        if (stop) {
          return; // what is held or queued is requeued by the broker when the connection closes
        }
      }
    }

    private void handle(List<Message> batch) {
      List<InboundRequest> events = new ArrayList<>(batch.size());
      List<Message> processed = new ArrayList<>(batch.size());
      List<Message> acks = new ArrayList<>(batch.size());
      boolean anySettled = false;
      boolean anyRetried = false;
      int putBack = 0;
      for (Message m : batch) {
        if (m.envelope().isRedeliver()) {
          meters.redelivered();
        }
        if (m.body().length > settings.maxBody()) {
          Outcome.Rejected tooLarge =
              new Outcome.Rejected(
                  Outcome.Rejection.BAD_INPUT,
                  "body_too_large",
                  "the body has "
                      + m.body().length
                      + " bytes; max_body is "
                      + settings.maxBody()
                      + " bytes");
          meters.count(tooLarge);
          deadLetter(m, tooLarge.code(), tooLarge.message());
          continue;
        }
        events.add(request(m));
        processed.add(m);
      }
      List<Outcome> outcomes;
      try {
        outcomes = events.isEmpty() ? List.of() : pipeline.processAll(events);
      } catch (RuntimeException e) {
        LOG.error(
            "rabbitmq source pipeline={}: processing {} messages failed; they are put back",
            pipeline.id(),
            events.size(),
            e);
        for (Message m : processed) {
          meters.count(RabbitMqSourceMeters.Kind.RETRIED);
          requeueLater(m);
        }
        retries++;
        return;
      }
      for (int i = 0; i < outcomes.size(); i++) {
        Message m = processed.get(i);
        Outcome o = outcomes.get(i);
        meters.count(o);
        if (LOG.isDebugEnabled()) {
          LOG.debug(
              "rabbitmq source pipeline={} queue={} delivery_tag={} redelivered={} message_id={}"
                  + " outcome={}",
              pipeline.id(),
              settings.queue(),
              m.envelope().getDeliveryTag(),
              m.envelope().isRedeliver(),
              m.props() == null ? null : m.props().getMessageId(),
              RabbitMqSourceMeters.Kind.of(o).tag());
        }
        if (o.settled()) {
          acks.add(m); // acknowledged after the loop, with as few basic.ack frames as is safe
          anySettled = true;
          if (o instanceof Outcome.Accepted a) {
            forget(a.key());
          }
        } else if (o instanceof Outcome.Rejected r) {
          deadLetter(m, r.code(), r.message());
        } else if (o instanceof Outcome.Conflict) {
          deadLetter(
              m, "key_conflict", "the key was used before with a different payload (replay mode)");
        } else if (o instanceof Outcome.Failed f) {
          int attempts = failed(f.key(), m);
          if (attempts >= settings.maxAttempts()) {
            forget(f.key());
            deadLetter(
                m,
                f.code(),
                f.message()
                    + " (failed "
                    + attempts
                    + " times; max_attempts "
                    + settings.maxAttempts()
                    + ")");
          } else {
            LOG.info(
                "rabbitmq source pipeline={} queue={} delivery_tag={} redelivered={}: {} ({}),"
                    + " attempt {} of {}; put back after a delay",
                pipeline.id(),
                settings.queue(),
                m.envelope().getDeliveryTag(),
                m.envelope().isRedeliver(),
                f.code(),
                f.message(),
                attempts,
                settings.maxAttempts());
            meters.count(RabbitMqSourceMeters.Kind.RETRIED);
            requeueLater(m);
            anyRetried = true;
          }
        } else {
          if (o instanceof Outcome.Unavailable u && LOG.isDebugEnabled()) {
            LOG.debug(
                "rabbitmq source pipeline={} queue={} delivery_tag={} redelivered={}: {} ({}); not"
                    + " acknowledged, put back after a delay",
                pipeline.id(),
                settings.queue(),
                m.envelope().getDeliveryTag(),
                m.envelope().isRedeliver(),
                u.code(),
                u.message());
          }
          meters.count(RabbitMqSourceMeters.Kind.RETRIED);
          requeueLater(m);
          anyRetried = true;
          if (o instanceof Outcome.Unavailable) {
            putBack++;
          }
        }
      }
      ackAll(acks);
      outage.observe(outcomes, putBack);
      if (anySettled) {
        retries = 0;
      } else if (anyRetried) {
        retries++;
      }
    }

    private InboundRequest request(Message m) {
      Map<String, String> source = new LinkedHashMap<>();
      source.put("queue", settings.queue());
      source.put("delivery_tag", Long.toString(m.envelope().getDeliveryTag()));
      source.put("redelivered", Boolean.toString(m.envelope().isRedeliver()));
      String messageId = m.props() == null ? null : m.props().getMessageId();
      if (messageId != null) {
        source.put("message_id", messageId);
      }
      return new InboundRequest(m.body(), AmqpHeaders.of(m.props()), List.of(), source);
    }

    /** Counts a failure of a key; the attempt number, at least RabbitMQ's own count. */
    private int failed(DedupKey key, Message m) {
      long deliveryCount = AmqpHeaders.of(m.props()).number("x-delivery-count");
      synchronized (failures) {
        int n = failures.merge(key, 1, Integer::sum);
        if (deliveryCount + 1 > n) {
          n = (int) Math.min(Integer.MAX_VALUE, deliveryCount + 1);
          failures.put(key, n);
        }
        return n;
      }
    }

    private void forget(DedupKey key) {
      synchronized (failures) {
        failures.remove(key);
      }
    }

    /**
     * Acknowledges a batch's settled messages (in delivery-tag order). Every other message of the
     * batch was answered already (rejected, or held for a delayed nack), so one {@code
     * basic.ack(multiple=true)} covers the settled ones below the lowest held tag; a settled one
     * above it is acknowledged on its own, so a held message is never acknowledged.
     */
    private void ackAll(List<Message> acks) {
      if (acks.isEmpty()) {
        return;
      }
      long lowestHeld = held.isEmpty() ? Long.MAX_VALUE : held.first();
      int covered = 0;
      while (covered < acks.size() && acks.get(covered).envelope().getDeliveryTag() < lowestHeld) {
        covered++;
      }
      if (covered == 1) {
        ack(acks.get(0), false);
      } else if (covered > 1) {
        ack(acks.get(covered - 1), true);
      }
      for (int i = covered; i < acks.size(); i++) {
        ack(acks.get(i), false);
      }
    }

    private void ack(Message m, boolean multiple) {
      try {
        channel.basicAck(m.envelope().getDeliveryTag(), multiple);
      } catch (IOException | RuntimeException e) {
        // the channel is gone: the broker redelivers the message, which is then a duplicate
        LOG.warn(
            "rabbitmq source pipeline={}: ack of delivery_tag={}{} failed ({}); the broker will"
                + " redeliver {} and Idem answers {} as a duplicate",
            pipeline.id(),
            multiple ? "<=" : "",
            m.envelope().getDeliveryTag(),
            e.toString(),
            multiple ? "them" : "it",
            multiple ? "each" : "it");
      }
    }

    private void deadLetter(Message m, String code, String message) {
      LOG.warn(
          "rabbitmq source pipeline={} queue={} delivery_tag={} redelivered={} message_id={}:"
              + " rejected {} ({}); basic.reject(requeue=false) sends it to the queue's dead-letter"
              + " exchange; a queue without one (x-dead-letter-exchange argument or policy) discards"
              + " it",
          pipeline.id(),
          settings.queue(),
          m.envelope().getDeliveryTag(),
          m.envelope().isRedeliver(),
          m.props() == null ? null : m.props().getMessageId(),
          code,
          message);
      meters.count(RabbitMqSourceMeters.Kind.DEAD_LETTERED);
      try {
        channel.basicReject(m.envelope().getDeliveryTag(), false);
      } catch (IOException | RuntimeException e) {
        LOG.warn(
            "rabbitmq source pipeline={}: reject of delivery_tag={} failed ({}); the broker will"
                + " redeliver it",
            pipeline.id(),
            m.envelope().getDeliveryTag(),
            e.toString());
      }
    }

    /** Puts a message back after the consumer's current delay; the channel is used here only. */
    private void requeueLater(Message m) {
      long delay = delayMillis();
      long tag = m.envelope().getDeliveryTag();
      Runnable nack =
          () -> {
            held.remove(tag);
            try {
              channel.basicNack(tag, false, true);
            } catch (IOException | RuntimeException e) {
              LOG.debug("nack of delivery_tag={} failed: {}", tag, e.toString());
            }
          };
      held.add(tag);
      try {
        timer.schedule(() -> inbox.add(nack), delay, TimeUnit.MILLISECONDS);
      } catch (RuntimeException e) {
        // closing: the broker requeues the message when the channel closes (still held, so no
        // later multiple ack covers it)
      }
    }

    private long delayMillis() {
      return delay(settings, retries).toMillis();
    }
  }

  /**
   * Returns the delay before a message is put back after {@code retries} consecutive rounds of
   * retries on one consumer.
   *
   * @param settings the settings
   * @param retries the rounds so far
   * @return the delay
   */
  static Duration delay(RabbitMqSourceSettings settings, int retries) {
    long base = settings.requeueDelay().toMillis();
    long max = settings.maxRequeueDelay().toMillis();
    long d = base << Math.min(retries, 20);
    return Duration.ofMillis(d <= 0 || d > max ? max : d);
  }
}
