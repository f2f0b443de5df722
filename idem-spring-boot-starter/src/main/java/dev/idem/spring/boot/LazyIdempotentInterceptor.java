package dev.idem.spring.boot;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;

/** Creates the {@link IdempotentInterceptor} on the first call, when the store can be made. */
final class LazyIdempotentInterceptor implements MethodInterceptor {
  private final ObjectProvider<IdemDeduplicators> deduplicators;
  private final ObjectProvider<ResultSerializer> serializer;
  private volatile @Nullable IdempotentInterceptor delegate;

  LazyIdempotentInterceptor(
      ObjectProvider<IdemDeduplicators> deduplicators,
      ObjectProvider<ResultSerializer> serializer) {
    this.deduplicators = deduplicators;
    this.serializer = serializer;
  }

  @Override
  public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
    IdempotentInterceptor d = delegate;
    if (d == null) {
      synchronized (this) {
        d = delegate;
        if (d == null) {
          d = new IdempotentInterceptor(deduplicators.getObject(), serializer.getObject());
          delegate = d;
        }
      }
    }
    return d.invoke(invocation);
  }
}
