package dev.idem.benchmarks;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.ReserveResult;
import dev.idem.spi.SettleResult;
import dev.idem.spi.Ttl;
import dev.idem.store.jdbc.JdbcDedupStore;
import dev.idem.store.jdbc.JdbcLayout;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * Statements the server sees per new key (one reserve and one commit) in each JDBC layout on
 * MariaDB: the store runs on one connection of its own, and the session's {@code Questions} and
 * {@code Com_*} counters ({@code SHOW SESSION STATUS}) are read before and after {@code --keys}
 * keys. Each statement is one round trip, so {@code Questions} per key is the round trips per key
 * (the two {@code SHOW} statements are taken off).
 *
 * <pre>
 * java -cp idem-benchmarks/target/benchmarks.jar dev.idem.benchmarks.JdbcRoundTrips \
 *     --url 'jdbc:mariadb://127.0.0.1:3306/test?user=root' --keys 2000
 * </pre>
 *
 * Works in {@code --database} (default {@code idem_round_trips}), created and dropped.
 */
public final class JdbcRoundTrips {
  private static final Scope SCOPE = Scope.of("bench", "trips");
  private static final Ttl TTL = new Ttl(Duration.ofHours(24).toMillis(), Expiry.FIXED);

  private JdbcRoundTrips() {}

  public static void main(String[] args) throws Exception {
    String url = "jdbc:mariadb://127.0.0.1:3306/test?user=root";
    int keys = 2000;
    String db = "idem_round_trips";
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--url" -> url = args[++i];
        case "--keys" -> keys = Integer.parseInt(args[++i]);
        case "--database" -> db = args[++i];
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (!db.matches("[a-z][a-z0-9_]{0,40}")) {
      throw new IllegalArgumentException("--database: lower-case letters, digits and _ only");
    }
    try (Connection admin = DriverManager.getConnection(url);
        Statement st = admin.createStatement()) {
      st.execute("DROP DATABASE IF EXISTS " + db);
      st.execute("CREATE DATABASE " + db);
    }
    String dbUrl = url.replaceFirst("/[^/?]*(\\?|$)", "/" + db + "$1");
    try (Connection c = DriverManager.getConnection(dbUrl)) {
      c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
      for (JdbcLayout layout : JdbcLayout.values()) {
        try (JdbcDedupStore store =
            JdbcDedupStore.builder(new OneConnection(c))
                .tablePrefix(layout.name().toLowerCase(Locale.ROOT) + "_")
                .layout(layout)
                .sweepInterval(Duration.ZERO)
                .build()) {
          run(store, 10, c); // the day partition, and warm statements
          Map<String, Long> before = status(c);
          run(store, keys, c);
          Map<String, Long> after = status(c);
          StringBuilder sb = new StringBuilder();
          for (Map.Entry<String, Long> e : after.entrySet()) {
            long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
            if (e.getKey().startsWith("Com_") && d > 0 && !e.getKey().equals("Com_show_status")) {
              sb.append(String.format(Locale.ROOT, " %s %.2f", e.getKey(), d / (double) keys));
            }
          }
          long questions = after.get("Questions") - before.get("Questions") - 1;
          System.out.printf(
              Locale.ROOT,
              "%-12s %.2f statements (round trips) per new key (reserve + commit):%s%n",
              layout,
              questions / (double) keys,
              sb);
        }
      }
    } finally {
      try (Connection admin = DriverManager.getConnection(url);
          Statement st = admin.createStatement()) {
        st.execute("DROP DATABASE IF EXISTS " + db);
      }
    }
  }

  private static void run(JdbcDedupStore store, int keys, Connection c) {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    for (int i = 0; i < keys; i++) {
      DedupKey key =
          DedupKey.ofWords(
              random.nextLong(), random.nextLong(), random.nextLong(), random.nextLong());
      long token = random.nextLong() | 1;
      long now = System.currentTimeMillis();
      ReserveResult r =
          store.reserve(new ReserveRequest(SCOPE, key, null, token, now, 60_000, TTL));
      if (!(r instanceof ReserveResult.Acquired)) {
        throw new IllegalStateException("a new random key answered " + r);
      }
      SettleResult s = store.commit(new CommitRequest(SCOPE, key, token, now, TTL, null));
      if (s != SettleResult.APPLIED) {
        throw new IllegalStateException("commit answered " + s);
      }
    }
  }

  private static Map<String, Long> status(Connection c) throws SQLException {
    Map<String, Long> out = new TreeMap<>();
    try (Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SHOW SESSION STATUS")) {
      while (rs.next()) {
        String name = rs.getString(1);
        if (name.equals("Questions") || name.startsWith("Com_")) {
          out.put(name, Long.parseLong(rs.getString(2)));
        }
      }
    }
    return out;
  }

  /** Hands out the one connection, whose close() does nothing, so that one session does all. */
  private static final class OneConnection implements DataSource {
    private final Connection proxy;

    OneConnection(Connection c) {
      proxy =
          (Connection)
              Proxy.newProxyInstance(
                  Connection.class.getClassLoader(),
                  new Class<?>[] {Connection.class},
                  (p, method, a) -> {
                    if (method.getName().equals("close")) {
                      return null;
                    }
                    try {
                      return method.invoke(c, a);
                    } catch (InvocationTargetException e) {
                      throw e.getCause();
                    }
                  });
    }

    @Override
    public Connection getConnection() {
      return proxy;
    }

    @Override
    public Connection getConnection(String user, String password) {
      return proxy;
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return 0;
    }

    @Override
    public Logger getParentLogger() {
      return Logger.getGlobal();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
      throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
      return false;
    }
  }
}
