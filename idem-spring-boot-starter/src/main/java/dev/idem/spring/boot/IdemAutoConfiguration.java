package dev.idem.spring.boot;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.idem.DedupListener;
import dev.idem.Deduplicator;
import dev.idem.spi.DedupStore;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.aop.Advisor;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionBuilder;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.BeanDefinitionRegistryPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;

/**
 * Auto-configures Idem from {@code idem.*} ({@link IdemProperties}): one {@link DedupStore}, a
 * {@link Deduplicator} bean per configured scope (named {@code <scope>Deduplicator}), {@link
 * IdemDeduplicators} for any scope, {@link Idempotent} methods, a health indicator for the store
 * (with Spring Boot's health module) and Micrometer counters (with a {@code MeterRegistry}). Runs
 * after the application's {@code DataSource} and Redis connection factory are configured, so the
 * JDBC and Redis stores can use them. Every bean backs off when the application declares its own.
 */
@AutoConfiguration(
    afterName = {
      "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
      "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration"
    })
@EnableConfigurationProperties(IdemProperties.class)
@Import(IdemAutoConfiguration.ProxyRegistrar.class)
public class IdemAutoConfiguration {

  /** Created by Spring Boot. */
  public IdemAutoConfiguration() {}

  /**
   * Clients the store needs and Idem created (closed after the store).
   *
   * @return the holder
   */
  @Bean
  @ConditionalOnMissingBean
  public IdemOwnedResources idemOwnedResources() {
    return new IdemOwnedResources();
  }

  /**
   * The store, as {@code idem.store.type} says.
   *
   * @param properties the properties
   * @param beans the application's beans (DataSource, Lettuce connection factory)
   * @param owned where clients Idem creates are kept for closing
   * @return the store; closed with the context
   */
  @Bean
  @ConditionalOnMissingBean
  public DedupStore idemDedupStore(
      IdemProperties properties, ListableBeanFactory beans, IdemOwnedResources owned) {
    return IdemStores.create(properties.getStore(), beans, owned.list());
  }

  /**
   * Encodes stored return values of {@link Idempotent} methods as JSON.
   *
   * @return the serializer
   */
  @Bean
  @ConditionalOnMissingBean
  public ResultSerializer idemResultSerializer() {
    return new JacksonResultSerializer(new ObjectMapper().findAndRegisterModules());
  }

  /**
   * The deduplicators by scope, with every {@link DedupListener} bean attached.
   *
   * @param store the store
   * @param properties the properties
   * @param listeners the listener beans
   * @return the registry
   */
  @Bean
  @ConditionalOnMissingBean
  public IdemDeduplicators idemDeduplicators(
      DedupStore store, IdemProperties properties, ObjectProvider<DedupListener> listeners) {
    return new IdemDeduplicators(store, properties.getScopes(), listeners.orderedStream().toList());
  }

  /**
   * The advisor that applies {@link Idempotent}; its interceptor finds the deduplicators on first
   * use, so the store is not created while post-processors are.
   *
   * @param deduplicators the deduplicators, looked up lazily
   * @param serializer the result serializer, looked up lazily
   * @return the advisor
   */
  @Bean
  @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
  public static Advisor idemIdempotentAdvisor(
      ObjectProvider<IdemDeduplicators> deduplicators,
      ObjectProvider<ResultSerializer> serializer) {
    return new DefaultPointcutAdvisor(
        new AnnotationMatchingPointcut(null, Idempotent.class, true),
        new LazyIdempotentInterceptor(deduplicators, serializer));
  }

  /**
   * Registers a {@code <scope>Deduplicator} bean for each {@code idem.scopes.<scope>}.
   *
   * @param environment where the properties are
   * @return the registering post-processor
   */
  @Bean
  public static BeanDefinitionRegistryPostProcessor idemScopeBeans(Environment environment) {
    return new BeanDefinitionRegistryPostProcessor() {
      @Override
      public void postProcessBeanDefinitionRegistry(BeanDefinitionRegistry registry) {
        Map<String, IdemProperties.ScopeProperties> scopes =
            Binder.get(environment)
                .bind(
                    "idem.scopes",
                    Bindable.mapOf(String.class, IdemProperties.ScopeProperties.class))
                .orElse(Map.of());
        BeanFactory beans = (BeanFactory) registry;
        for (String scope : scopes.keySet()) {
          String name = scope.replace('/', '.') + "Deduplicator";
          if (!registry.containsBeanDefinition(name)) {
            registry.registerBeanDefinition(
                name,
                BeanDefinitionBuilder.genericBeanDefinition(
                        Deduplicator.class, () -> beans.getBean(IdemDeduplicators.class).get(scope))
                    .getBeanDefinition());
          }
        }
      }

      @Override
      public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {}
    };
  }

  /** The store's health indicator ({@code idemStore} in {@code /actuator/health}). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(HealthIndicator.class)
  public static class Health {
    /** Created by Spring Boot. */
    public Health() {}

    /**
     * The indicator.
     *
     * @param store the store
     * @return the indicator
     */
    @Bean
    @ConditionalOnMissingBean(name = "idemStoreHealthIndicator")
    public IdemStoreHealthIndicator idemStoreHealthIndicator(DedupStore store) {
      return new IdemStoreHealthIndicator(store);
    }
  }

  /** Micrometer counters for every decision, when a {@code MeterRegistry} bean exists. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(MeterRegistry.class)
  @ConditionalOnProperty(name = "idem.metrics.enabled", matchIfMissing = true)
  public static class Metrics {
    /** Created by Spring Boot. */
    public Metrics() {}

    /**
     * The listener (a no-op when the application has no registry).
     *
     * @param registry the registry, if any
     * @return the listener
     */
    @Bean
    public DedupListener idemMicrometerListener(ObjectProvider<MeterRegistry> registry) {
      MeterRegistry r = registry.getIfUnique();
      return r == null ? DedupListener.NOOP : new MicrometerDedupListener(r);
    }
  }

  /** Makes sure an auto-proxy creator exists (with class proxies), as Boot's AOP set-up does. */
  static class ProxyRegistrar implements ImportBeanDefinitionRegistrar {
    @Override
    public void registerBeanDefinitions(
        AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
      AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
      AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
    }
  }

  /** Holds the clients Idem created for the store and closes them when the context closes. */
  public static final class IdemOwnedResources implements AutoCloseable {
    private final List<Runnable> owned = new ArrayList<>();

    /** Creates an empty holder. */
    public IdemOwnedResources() {}

    List<Runnable> list() {
      return owned;
    }

    @Override
    public void close() {
      owned.forEach(Runnable::run);
    }
  }
}
