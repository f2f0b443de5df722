package dev.idem.store.redis;

import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A three-master Redis Cluster of private redis-server processes on free loopback ports, created
 * with {@code redis-cli --cluster create}. {@link #close()} kills the processes and deletes their
 * files, also when starting failed half-way.
 */
final class RedisClusterFixture implements AutoCloseable {
  private final Path dir;
  private final List<RedisProcess> nodes = new ArrayList<>();
  private RedisClusterClient client;

  private RedisClusterFixture(Path dir) {
    this.dir = dir;
  }

  static RedisClusterFixture start() throws Exception {
    RedisProcess.requireInstalled();
    RedisClusterFixture f =
        new RedisClusterFixture(Files.createTempDirectory("idem-redis-cluster"));
    try {
      for (int i = 0; i < 3; i++) {
        int port = RedisProcess.freePort();
        f.nodes.add(
            RedisProcess.start(
                f.dir,
                port,
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                f.dir.resolve("nodes-" + port + ".conf").toString()));
      }
      List<String> create = new ArrayList<>(List.of("--cluster", "create"));
      for (RedisProcess node : f.nodes) {
        create.add("127.0.0.1:" + node.port());
      }
      create.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
      f.nodes.get(0).cli(create.toArray(new String[0]));
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(f::allOk);
      return f;
    } catch (Exception | Error e) {
      f.close();
      throw e;
    }
  }

  private boolean allOk() throws IOException, InterruptedException {
    for (RedisProcess node : nodes) {
      if (!node.cli("CLUSTER", "INFO").contains("cluster_state:ok")) {
        return false;
      }
    }
    return true;
  }

  List<RedisProcess> nodes() {
    return nodes;
  }

  /** The seeds as one URI: {@code redis://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3}. */
  String uri() {
    StringBuilder u = new StringBuilder("redis://");
    for (int i = 0; i < nodes.size(); i++) {
      u.append(i == 0 ? "" : ",").append("127.0.0.1:").append(nodes.get(i).port());
    }
    return u.toString();
  }

  /** A shared cluster client with the options the store gives its own clients. */
  synchronized RedisClusterClient client() {
    if (client == null) {
      List<RedisURI> seeds = new ArrayList<>();
      for (RedisProcess node : nodes) {
        seeds.add(RedisURI.create("127.0.0.1", node.port()));
      }
      client = RedisClusterClient.create(seeds);
      client.setOptions(RedisDedupStore.Builder.clusterOptions(RedisDedupStoreConfig.ofDefaults()));
    }
    return client;
  }

  @Override
  public void close() {
    try {
      if (client != null) {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      }
    } finally {
      nodes.forEach(RedisProcess::stop);
      deleteQuietly(dir);
    }
  }

  private static void deleteQuietly(Path dir) {
    try (var files = Files.walk(dir)) {
      files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // best effort: a temp directory
    }
  }
}
