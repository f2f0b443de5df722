package dev.idem.store.redis;

import dev.idem.IdemConfigException;
import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Where the store connects, parsed from URIs: standalone ({@code redis://}, {@code rediss://},
 * {@code redis-socket://}), Sentinel ({@code redis-sentinel://}, {@code rediss-sentinel://}) or
 * Cluster (several seeds, as several URIs or as comma-separated hosts in one {@code redis://} or
 * {@code rediss://} URI, or one seed with {@code cluster(true)}). Passwords, user names, TLS and
 * the database pass through to Lettuce unchanged; the description never contains a password.
 *
 * @param topology how the servers are arranged
 * @param uris the standalone or Sentinel URI (one), or the cluster seeds
 * @param description for logs: the scheme and hosts, never the credentials
 */
record RedisEndpoints(Topology topology, List<RedisURI> uris, String description) {

  /** How the servers are arranged. */
  enum Topology {
    STANDALONE,
    SENTINEL,
    CLUSTER
  }

  private static final Pattern PASSWORD = Pattern.compile("(://[^:@/]*:)[^@]*@");

  /**
   * Parses URIs.
   *
   * @param texts one or more URIs
   * @param cluster whether a single seed is a cluster node
   * @param commandTimeout set as each URI's timeout (Lettuce's per-connection default)
   * @return the endpoints
   * @throws IdemConfigException if a URI is malformed or the combination makes no sense
   */
  static RedisEndpoints parse(List<String> texts, boolean cluster, Duration commandTimeout) {
    if (texts.isEmpty()) {
      throw new IdemConfigException(
          "redis uri: give at least one, e.g. redis://127.0.0.1:6379 (or several cluster seeds)");
    }
    List<RedisURI> uris = new ArrayList<>();
    boolean sentinel = false;
    for (String text : texts) {
      if (text == null || text.isBlank()) {
        throw new IdemConfigException(
            "redis uri must not be blank: use redis://host:port, rediss://host:port (TLS),"
                + " redis-sentinel://host:26379#master or several cluster seeds");
      }
      String scheme = scheme(text);
      switch (scheme) {
        case "redis", "rediss" -> {
          for (String seed : splitHosts(text, scheme)) {
            uris.add(create(seed, text));
          }
        }
        case "redis-socket" -> uris.add(create(text, text));
        case "redis-sentinel", "rediss-sentinel" -> {
          RedisURI uri = create(text, text);
          if (uri.getSentinelMasterId() == null || uri.getSentinelMasterId().isBlank()) {
            throw new IdemConfigException(
                "redis uri '"
                    + mask(text)
                    + "' names no Sentinel master: add it as the fragment, e.g."
                    + " redis-sentinel://127.0.0.1:26379#mymaster");
          }
          uris.add(uri);
          sentinel = true;
        }
        default ->
            throw new IdemConfigException(
                "redis uri '"
                    + mask(text)
                    + "' has scheme '"
                    + scheme
                    + "': use redis://, rediss:// (TLS), redis-socket://, redis-sentinel:// or"
                    + " rediss-sentinel://");
      }
    }
    Topology topology =
        sentinel
            ? Topology.SENTINEL
            : cluster || uris.size() > 1 ? Topology.CLUSTER : Topology.STANDALONE;
    if (topology == Topology.SENTINEL && (uris.size() > 1 || cluster)) {
      throw new IdemConfigException(
          "redis uri: a Sentinel URI stands alone; list several Sentinels inside it, e.g."
              + " redis-sentinel://s1:26379,s2:26379#mymaster");
    }
    if (topology == Topology.CLUSTER) {
      for (RedisURI uri : uris) {
        if (uri.getSocket() != null) {
          throw new IdemConfigException(
              "redis uri: cluster seeds must be redis:// or rediss:// host addresses, not a"
                  + " socket");
        }
        if (uri.getDatabase() != 0) {
          throw new IdemConfigException(
              "redis uri: Redis Cluster has only database 0, but a seed names database "
                  + uri.getDatabase()
                  + "; remove the /"
                  + uri.getDatabase()
                  + " path");
        }
      }
    }
    for (RedisURI uri : uris) {
      uri.setTimeout(commandTimeout);
    }
    return new RedisEndpoints(topology, List.copyOf(uris), describe(topology, uris));
  }

  /**
   * Replaces the password in a URI with {@code ***}, for messages.
   *
   * @param uri the URI text
   * @return the text without the password
   */
  static String mask(String uri) {
    return PASSWORD.matcher(uri).replaceFirst("$1***@");
  }

  private static String scheme(String text) {
    int at = text.indexOf("://");
    if (at <= 0) {
      throw new IdemConfigException(
          "redis uri '"
              + mask(text)
              + "' has no scheme: use redis://host:port, rediss://host:port (TLS),"
              + " redis-sentinel://host:26379#master or several cluster seeds");
    }
    return text.substring(0, at).toLowerCase(Locale.ROOT);
  }

  /** Splits {@code redis://[userinfo@]h1:p1,h2:p2[/db][?query]} into one URI per host. */
  private static List<String> splitHosts(String text, String scheme) {
    String rest = text.substring(scheme.length() + 3);
    int pathAt = indexOfAny(rest, "/?#");
    String authority = pathAt < 0 ? rest : rest.substring(0, pathAt);
    String tail = pathAt < 0 ? "" : rest.substring(pathAt);
    int userAt = authority.lastIndexOf('@');
    String userInfo = userAt < 0 ? "" : authority.substring(0, userAt + 1);
    String hosts = authority.substring(userAt + 1);
    if (hosts.indexOf(',') < 0) {
      return List.of(text);
    }
    List<String> out = new ArrayList<>();
    for (String host : hosts.split(",", -1)) {
      if (host.isBlank()) {
        throw new IdemConfigException(
            "redis uri '" + mask(text) + "' has an empty host in its list of cluster seeds");
      }
      out.add(scheme + "://" + userInfo + host.strip() + tail);
    }
    return out;
  }

  private static int indexOfAny(String s, String chars) {
    for (int i = 0; i < s.length(); i++) {
      if (chars.indexOf(s.charAt(i)) >= 0) {
        return i;
      }
    }
    return -1;
  }

  private static RedisURI create(String text, String original) {
    try {
      return RedisURI.create(text);
    } catch (RuntimeException e) {
      throw new IdemConfigException(
          "redis uri '"
              + mask(original)
              + "' is not valid ("
              + mask(String.valueOf(e.getMessage()))
              + "): use redis://[:password@]host:port[/db], rediss:// for TLS,"
              + " redis-sentinel://host:26379[,host2:26379]#master, or several cluster seeds");
    }
  }

  private static String describe(Topology topology, List<RedisURI> uris) {
    StringBuilder d = new StringBuilder();
    RedisURI first = uris.get(0);
    switch (topology) {
      case STANDALONE -> {
        if (first.getSocket() != null) {
          d.append("redis-socket://").append(first.getSocket());
        } else {
          d.append(first.isSsl() ? "rediss://" : "redis://").append(hostPort(first));
        }
        if (first.getDatabase() != 0) {
          d.append('/').append(first.getDatabase());
        }
      }
      case SENTINEL -> {
        d.append(first.isSsl() ? "rediss-sentinel://" : "redis-sentinel://");
        List<RedisURI> sentinels = first.getSentinels();
        for (int i = 0; i < sentinels.size(); i++) {
          d.append(i == 0 ? "" : ",").append(hostPort(sentinels.get(i)));
        }
        if (first.getDatabase() != 0) {
          d.append('/').append(first.getDatabase());
        }
        d.append('#').append(first.getSentinelMasterId());
      }
      case CLUSTER -> {
        d.append(first.isSsl() ? "rediss-cluster://" : "redis-cluster://");
        for (int i = 0; i < uris.size(); i++) {
          d.append(i == 0 ? "" : ",").append(hostPort(uris.get(i)));
        }
      }
    }
    return d.toString();
  }

  private static String hostPort(RedisURI uri) {
    String host = uri.getHost();
    if (host != null && host.indexOf(':') >= 0) {
      host = "[" + host + "]";
    }
    return host + ":" + uri.getPort();
  }
}
