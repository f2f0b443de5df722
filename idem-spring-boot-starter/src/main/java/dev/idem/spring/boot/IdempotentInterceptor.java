package dev.idem.spring.boot;

import dev.idem.Decision;
import dev.idem.Deduplicator;
import dev.idem.KeyDerivationException;
import dev.idem.Reservation;
import dev.idem.key.KeyEncoding;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.ExpressionParser;
import org.springframework.expression.spel.standard.SpelExpressionParser;

/**
 * Runs {@link Idempotent} methods once per key. For each call:
 *
 * <ol>
 *   <li>evaluate the key expression over the arguments (null or blank: {@link
 *       KeyDerivationException});
 *   <li>reserve the key in the method's scope;
 *   <li>new: run the method; if it returns, commit the key (with the encoded return value if {@link
 *       Idempotent#storeResult()}); if it throws, release the key and rethrow;
 *   <li>committed: answer as {@link Idempotent#onDuplicate()} says; in flight: as {@link
 *       Idempotent#onInFlight()} says.
 * </ol>
 */
public final class IdempotentInterceptor implements MethodInterceptor {
  private final IdemDeduplicators deduplicators;
  private final ResultSerializer serializer;
  private final ExpressionParser parser = new SpelExpressionParser();
  private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();
  private final Map<Method, Plan> plans = new ConcurrentHashMap<>();

  /**
   * Creates the interceptor.
   *
   * @param deduplicators the deduplicators by scope
   * @param serializer encodes stored return values
   */
  public IdempotentInterceptor(IdemDeduplicators deduplicators, ResultSerializer serializer) {
    this.deduplicators = deduplicators;
    this.serializer = serializer;
  }

  @Override
  public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
    Method method = invocation.getMethod();
    Object target = invocation.getThis();
    Class<?> targetClass =
        target == null ? method.getDeclaringClass() : AopUtils.getTargetClass(target);
    Plan plan = plans.computeIfAbsent(method, m -> plan(m, targetClass));
    String key = key(plan, method, invocation.getArguments(), target);

    Decision decision = plan.dedup.reserve(KeyEncoding.ofString(key));
    if (decision instanceof Decision.Acquired acquired) {
      return run(plan, acquired.reservation(), invocation);
    }
    if (decision instanceof Decision.InFlight f) {
      if (plan.annotation.onInFlight() == Idempotent.OnInFlight.RETURN_NULL) {
        return null;
      }
      throw new IdempotentInFlightException(
          plan.dedup.scope(), key, plan.name, Instant.ofEpochMilli(f.leaseUntilMillis()));
    }
    byte[] stored = decision instanceof Decision.Duplicate d ? d.result() : null;
    switch (plan.annotation.onDuplicate()) {
      case THROW -> throw new IdempotentDuplicateException(plan.dedup.scope(), key, plan.name);
      case RETURN_NULL -> {
        return null;
      }
      default -> {
        return stored == null || plan.isVoid ? null : serializer.decode(stored, plan.returnType);
      }
    }
  }

  private @Nullable Object run(Plan plan, Reservation reservation, MethodInvocation invocation)
      throws Throwable {
    Object result;
    byte[] encoded = null;
    try {
      result = invocation.proceed();
      if (plan.annotation.storeResult() && !plan.isVoid) {
        encoded = serializer.encode(result, plan.returnType);
      }
    } catch (Throwable failure) {
      try {
        reservation.release();
      } catch (RuntimeException releaseFailure) {
        failure.addSuppressed(releaseFailure);
      }
      throw failure;
    }
    reservation.commit(encoded);
    return result;
  }

  private String key(Plan plan, Method method, Object[] args, @Nullable Object target) {
    MethodBasedEvaluationContext context =
        new MethodBasedEvaluationContext(target, method, args, names);
    Object value;
    try {
      value = plan.key.getValue(context);
    } catch (RuntimeException e) {
      throw new KeyDerivationException(
          "the key expression '"
              + plan.annotation.key()
              + "' of "
              + plan.name
              + " failed: "
              + e.getMessage(),
          e);
    }
    String text = value == null ? null : value.toString();
    if (text == null || text.isBlank()) {
      throw new KeyDerivationException(
          "the key expression '"
              + plan.annotation.key()
              + "' of "
              + plan.name
              + " gave "
              + (text == null ? "null" : "a blank value")
              + "; every call needs a key"
              + (names.getParameterNames(method) == null
                  ? " (parameter names are not in the class file: compile with -parameters, as"
                      + " Spring Boot's build plugins do, or write #p0, #p1, ...)"
                  : ""));
    }
    return text;
  }

  private Plan plan(Method method, Class<?> targetClass) {
    Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
    Idempotent annotation = AnnotatedElementUtils.findMergedAnnotation(specific, Idempotent.class);
    if (annotation == null) {
      annotation = AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class);
    }
    if (annotation == null) {
      throw new IllegalStateException(method + " has no @Idempotent");
    }
    String name = targetClass.getSimpleName() + "." + method.getName();
    String scope = annotation.scope().isEmpty() ? name : annotation.scope();
    Duration ttl = annotation.ttl().isEmpty() ? null : parseTtl(annotation.ttl(), name);
    Type returnType = method.getGenericReturnType();
    boolean isVoid = returnType == void.class || returnType == Void.class;
    Expression key;
    try {
      key = parser.parseExpression(annotation.key());
    } catch (RuntimeException e) {
      throw new dev.idem.IdemConfigException(
          "@Idempotent(key = \""
              + annotation.key()
              + "\") on "
              + name
              + " is not a SpEL expression: "
              + e.getMessage());
    }
    return new Plan(annotation, deduplicators.get(scope, ttl), key, name, returnType, isVoid);
  }

  private static Duration parseTtl(String text, String method) {
    try {
      return DurationStyle.detectAndParse(text);
    } catch (IllegalArgumentException e) {
      throw new dev.idem.IdemConfigException(
          "@Idempotent(ttl = \""
              + text
              + "\") on "
              + method
              + " is not a duration; write e.g. 24h, 30m or PT1H");
    }
  }

  private record Plan(
      Idempotent annotation,
      Deduplicator dedup,
      Expression key,
      String name,
      Type returnType,
      boolean isVoid) {}
}
