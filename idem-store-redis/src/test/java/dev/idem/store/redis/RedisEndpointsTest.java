package dev.idem.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslVerifyMode;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** URI parsing and option mapping, without a server. */
class RedisEndpointsTest {
  private static final Duration TIMEOUT = Duration.ofMillis(1500);

  private static RedisEndpoints parse(String... uris) {
    return RedisEndpoints.parse(List.of(uris), false, TIMEOUT);
  }

  @Test
  void standaloneWithPasswordAndDatabase() {
    RedisEndpoints e = parse("redis://:s3cret@10.0.0.5:6380/2");

    assertThat(e.topology()).isEqualTo(RedisEndpoints.Topology.STANDALONE);
    RedisURI uri = e.uris().get(0);
    assertThat(uri.getHost()).isEqualTo("10.0.0.5");
    assertThat(uri.getPort()).isEqualTo(6380);
    assertThat(uri.getDatabase()).isEqualTo(2);
    assertThat(new String(uri.getCredentialsProvider().resolveCredentials().block().getPassword()))
        .isEqualTo("s3cret");
    assertThat(uri.isSsl()).isFalse();
    assertThat(uri.getTimeout()).isEqualTo(TIMEOUT);
    assertThat(e.description()).isEqualTo("redis://10.0.0.5:6380/2").doesNotContain("s3cret");
  }

  @Test
  void tlsWithUserAndPassword() {
    RedisEndpoints e = parse("rediss://app:pw@cache.example:6390");

    RedisURI uri = e.uris().get(0);
    assertThat(uri.isSsl()).isTrue();
    assertThat(uri.getVerifyMode()).isEqualTo(SslVerifyMode.FULL);
    assertThat(uri.getCredentialsProvider().resolveCredentials().block().getUsername())
        .isEqualTo("app");
    assertThat(e.description()).isEqualTo("rediss://cache.example:6390");
  }

  @Test
  void sentinelNeedsAMasterAndKeepsAllSentinels() {
    RedisEndpoints e = parse("redis-sentinel://:pw@s1:26379,s2:26380/1#mymaster");

    assertThat(e.topology()).isEqualTo(RedisEndpoints.Topology.SENTINEL);
    RedisURI uri = e.uris().get(0);
    assertThat(uri.getSentinelMasterId()).isEqualTo("mymaster");
    assertThat(uri.getSentinels()).hasSize(2);
    assertThat(uri.getDatabase()).isEqualTo(1);
    assertThat(e.description()).isEqualTo("redis-sentinel://s1:26379,s2:26380/1#mymaster");
    assertThatThrownBy(() -> parse("redis-sentinel://s1:26379"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("master");
  }

  @Test
  void severalSeedsAreACluster() {
    RedisEndpoints commaSeparated = parse("redis://:pw@h1:7000,h2:7001, h3:7002");
    RedisEndpoints separate = parse("redis://h1:7000", "redis://h2:7001");
    RedisEndpoints forced = RedisEndpoints.parse(List.of("redis://h1:7000"), true, TIMEOUT);

    assertThat(commaSeparated.topology()).isEqualTo(RedisEndpoints.Topology.CLUSTER);
    assertThat(commaSeparated.uris())
        .extracting(RedisURI::getPort)
        .containsExactly(7000, 7001, 7002);
    assertThat(commaSeparated.uris())
        .allSatisfy(
            u ->
                assertThat(
                        new String(
                            u.getCredentialsProvider().resolveCredentials().block().getPassword()))
                    .isEqualTo("pw"));
    assertThat(commaSeparated.description()).isEqualTo("redis-cluster://h1:7000,h2:7001,h3:7002");
    assertThat(separate.topology()).isEqualTo(RedisEndpoints.Topology.CLUSTER);
    assertThat(forced.topology()).isEqualTo(RedisEndpoints.Topology.CLUSTER);
    assertThat(parse("rediss://h1:7000,h2:7001").description())
        .isEqualTo("rediss-cluster://h1:7000,h2:7001");
  }

  @Test
  void badUrisAreConfigErrorsWithoutThePassword() {
    assertThatThrownBy(() -> parse("http://:hunter2@h:1"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("scheme 'http'")
        .hasMessageNotContaining("hunter2");
    assertThatThrownBy(() -> parse("127.0.0.1:6379"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("no scheme");
    assertThatThrownBy(() -> parse(" "))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("blank");
    assertThatThrownBy(() -> RedisEndpoints.parse(List.of(), false, TIMEOUT))
        .isInstanceOf(IdemConfigException.class);
    assertThatThrownBy(() -> parse("redis://h1:7000/3", "redis://h2:7000/3"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("database 0");
    assertThatThrownBy(() -> parse("redis-sentinel://s1#m", "redis://h:1"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("Sentinel");
    assertThatThrownBy(() -> parse("redis://h1:7000,,h2:1"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("empty host");
  }

  @Test
  void masksPasswords() {
    assertThat(RedisEndpoints.mask("redis://user:pa:ss@h:1/0")).isEqualTo("redis://user:***@h:1/0");
    assertThat(RedisEndpoints.mask("redis://:pw@h:1")).isEqualTo("redis://:***@h:1");
    assertThat(RedisEndpoints.mask("redis://h:1")).isEqualTo("redis://h:1");
  }

  @Test
  void storeCreatedClientsFailClosedAndTimeOut() {
    RedisDedupStoreConfig config =
        new RedisDedupStoreConfig("idem:", TIMEOUT, Duration.ofSeconds(3));

    var options = RedisDedupStore.Builder.clientOptions(config);
    var cluster = RedisDedupStore.Builder.clusterOptions(config);

    for (var o : List.of(options, cluster)) {
      assertThat(o.getDisconnectedBehavior())
          .isEqualTo(io.lettuce.core.ClientOptions.DisconnectedBehavior.REJECT_COMMANDS);
      assertThat(o.isAutoReconnect()).isTrue();
      assertThat(o.getTimeoutOptions().isTimeoutCommands()).isTrue();
      assertThat(o.getSocketOptions().getConnectTimeout()).isEqualTo(Duration.ofSeconds(3));
    }
    assertThat(cluster.getTopologyRefreshOptions().isPeriodicRefreshEnabled()).isTrue();
    assertThat(cluster.getTopologyRefreshOptions().getAdaptiveRefreshTriggers()).isNotEmpty();
  }
}
