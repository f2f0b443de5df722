package dev.idem.spring.boot;

import dev.idem.IdemConfigException;
import dev.idem.spi.DedupStore;
import dev.idem.store.redis.RedisDedupStore;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.util.List;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.util.ClassUtils;

/**
 * The Redis store from {@code idem.store.redis.url}, or the server of the application's Lettuce
 * connection factory. The store gets a client of its own on that server: Idem's store needs a
 * client that rejects commands while disconnected (so a reserve is never replayed late), which is
 * not what the application's client is set to, and changing that would change the application.
 */
final class RedisStores {
  private RedisStores() {}

  static DedupStore create(
      IdemProperties.Redis p, ListableBeanFactory beans, List<Runnable> owned) {
    if (p.getUrl() != null) {
      return RedisDedupStore.builder(p.getUrl()).prefix(p.getPrefix()).build();
    }
    if (!ClassUtils.isPresent(
        "org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory",
        RedisStores.class.getClassLoader())) {
      throw noServer();
    }
    LettuceConnectionFactory factory =
        beans.getBeanProvider(LettuceConnectionFactory.class).getIfUnique();
    if (factory == null) {
      throw noServer();
    }
    if (factory.getClusterConfiguration() != null || factory.getSentinelConfiguration() != null) {
      throw new IdemConfigException(
          "idem.store.type=redis: the application's Redis is a Cluster or Sentinel setup; set"
              + " idem.store.redis.url to its seeds (redis://h1:7000,h2:7001) or"
              + " redis-sentinel://host:26379/0#master");
    }
    RedisStandaloneConfiguration c = factory.getStandaloneConfiguration();
    RedisURI.Builder uri =
        RedisURI.builder()
            .withHost(c.getHostName())
            .withPort(c.getPort())
            .withDatabase(c.getDatabase())
            .withSsl(factory.isUseSsl());
    if (c.getPassword().isPresent()) {
      char[] password = c.getPassword().get();
      if (c.getUsername() != null) {
        uri.withAuthentication(c.getUsername(), password);
      } else {
        uri.withPassword(password);
      }
    }
    RedisClient client = RedisClient.create(uri.build());
    owned.add(client::shutdown);
    client.setOptions(
        ClientOptions.builder()
            .autoReconnect(true)
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .build());
    return RedisDedupStore.builder(client).prefix(p.getPrefix()).build();
  }

  private static IdemConfigException noServer() {
    return new IdemConfigException(
        "idem.store.type=redis needs a Redis server: set spring.data.redis.host/port (with"
            + " spring-boot-starter-data-redis on the class path), or set idem.store.redis.url");
  }
}
