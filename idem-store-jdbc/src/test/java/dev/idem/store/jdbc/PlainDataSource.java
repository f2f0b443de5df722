package dev.idem.store.jdbc;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/** A data source without a pool: every connection is new, so a test can kill it on its own. */
final class PlainDataSource implements DataSource {
  private final String url;
  private final int isolation;

  PlainDataSource(String url) {
    this(url, -1);
  }

  PlainDataSource(String url, int isolation) {
    this.url = url;
    this.isolation = isolation;
  }

  @Override
  public Connection getConnection() throws SQLException {
    Connection c = DriverManager.getConnection(url);
    if (isolation >= 0) {
      c.setTransactionIsolation(isolation);
    }
    return c;
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return DriverManager.getConnection(url, username, password);
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
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException();
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
