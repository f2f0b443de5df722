package dev.idem.spring.boot;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs a Spring bean method once per key: the first call with a key runs the method and commits the
 * key when it returns (optionally storing the return value), or releases it when it throws, so a
 * retry runs it again. Calls with a committed key, or with a key another call holds right now, do
 * not run the method; {@link #onDuplicate()} and {@link #onInFlight()} say what they get instead.
 *
 * <pre>{@code
 * @Idempotent(key = "#order.id", scope = "orders", ttl = "24h", storeResult = true)
 * public Receipt place(Order order) { ... }
 * }</pre>
 *
 * <p>Works on public methods of Spring beans called through the bean (not from inside the same
 * object), like {@code @Transactional}. A method with a primitive return type cannot answer null:
 * use {@link OnDuplicate#RETURN_RESULT} with {@link #storeResult()}, or {@code THROW}.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

  /**
   * The key: a SpEL expression over the method's arguments ({@code #order.id}, {@code #p0}, {@code
   * #id + ':' + #version}). Its value, as text, is the key; null or blank fails the call.
   *
   * @return the key expression
   */
  String key();

  /**
   * The scope (a dedup step): {@code pipeline} or {@code pipeline/step}. Settings come from {@code
   * idem.scopes.<scope>.*}; empty means the class's simple name and the method's name.
   *
   * @return the scope
   */
  String scope() default "";

  /**
   * The window for this method, overriding the scope's {@code ttl}: a Spring duration such as
   * {@code 24h}, {@code 30m} or {@code PT1H}. Empty means the scope's.
   *
   * @return the window
   */
  String ttl() default "";

  /**
   * Whether to store the return value (as JSON) so that duplicates get it back.
   *
   * @return true to store it
   */
  boolean storeResult() default false;

  /**
   * What a call with a committed key gets.
   *
   * @return the behaviour (default: the stored result, or null if none was stored)
   */
  OnDuplicate onDuplicate() default OnDuplicate.RETURN_RESULT;

  /**
   * What a call gets while another call holds its key.
   *
   * @return the behaviour (default: {@link IdempotentInFlightException})
   */
  OnInFlight onInFlight() default OnInFlight.THROW;

  /** What a call with a committed key gets. */
  enum OnDuplicate {
    /** The stored return value ({@link Idempotent#storeResult()}), or null if none is stored. */
    RETURN_RESULT,
    /** Null. */
    RETURN_NULL,
    /** {@link IdempotentDuplicateException}. */
    THROW
  }

  /** What a call gets while another call holds its key. */
  enum OnInFlight {
    /** {@link IdempotentInFlightException}: the caller may retry later. */
    THROW,
    /** Null. */
    RETURN_NULL
  }
}
