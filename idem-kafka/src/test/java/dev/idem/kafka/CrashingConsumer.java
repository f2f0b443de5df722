package dev.idem.kafka;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/**
 * A real {@link KafkaConsumer} behind a proxy that can die at one chosen point: once armed, its
 * next offset commit after acting on a record throws instead of committing, as if the process were
 * killed between the key commit and the offset commit. Everything else goes to the real consumer
 * and broker.
 */
final class CrashingConsumer {
  /** What the crash throws. */
  static final class SimulatedCrash extends RuntimeException {
    private static final long serialVersionUID = 1L;

    SimulatedCrash() {
      super("simulated crash before the offset commit");
    }
  }

  private final KafkaConsumer<String, String> delegate;
  private final AtomicBoolean crash = new AtomicBoolean();
  private final AtomicInteger actedSinceCommit = new AtomicInteger();
  private final Consumer<String, String> proxy;

  @SuppressWarnings("unchecked")
  CrashingConsumer(KafkaConsumer<String, String> delegate) {
    this.delegate = delegate;
    this.proxy =
        (Consumer<String, String>)
            Proxy.newProxyInstance(
                Consumer.class.getClassLoader(),
                new Class<?>[] {Consumer.class},
                (p, method, args) -> {
                  boolean commit = method.getName().equals("commitSync");
                  if (commit && crash.get() && actedSinceCommit.get() > 0) {
                    throw new SimulatedCrash();
                  }
                  try {
                    Object result = method.invoke(delegate, args);
                    if (commit) {
                      actedSinceCommit.set(0);
                    }
                    return result;
                  } catch (InvocationTargetException e) {
                    throw e.getCause();
                  }
                });
  }

  Consumer<String, String> proxy() {
    return proxy;
  }

  KafkaConsumer<String, String> delegate() {
    return delegate;
  }

  void crashAtNextOffsetCommit() {
    crash.set(true);
  }

  void acted() {
    actedSinceCommit.incrementAndGet();
  }

  int actedSinceLastOffsetCommit() {
    return actedSinceCommit.get();
  }
}
