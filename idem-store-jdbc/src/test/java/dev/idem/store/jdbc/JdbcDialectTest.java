package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import org.junit.jupiter.api.Test;

/** Choosing the dialect from URLs and product names, and keeping passwords out of messages. */
class JdbcDialectTest {

  @Test
  void theDialectComesFromTheUrlScheme() {
    assertThat(JdbcDialect.fromUrl("jdbc:postgresql://db:5432/idem"))
        .isEqualTo(JdbcDialect.POSTGRESQL);
    assertThat(JdbcDialect.fromUrl("JDBC:MariaDB://db/idem")).isEqualTo(JdbcDialect.MARIADB);
    assertThat(JdbcDialect.fromUrl(" jdbc:h2:mem:x")).isEqualTo(JdbcDialect.H2);
  }

  @Test
  void anUnsupportedUrlListsTheSupportedOnesWithoutRepeatingThePassword() {
    assertThatThrownBy(
            () -> JdbcDialect.fromUrl("jdbc:oracle:thin:@db:1521/x?user=u&password=hunter2"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("jdbc:postgresql:")
        .hasMessageContaining("jdbc:mariadb:")
        .hasMessageContaining("jdbc:h2:")
        .hasMessageNotContaining("hunter2");
  }

  @Test
  void mysqlIsRefusedWithTheReason() {
    assertThatThrownBy(() -> JdbcDialect.fromUrl("jdbc:mysql://db/idem"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("RETURNING")
        .hasMessageContaining("MariaDB");
  }

  @Test
  void somethingThatIsNotAJdbcUrlSaysSo() {
    assertThatThrownBy(() -> JdbcDialect.fromUrl("postgresql://db/idem"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("starts with jdbc:");
    assertThatThrownBy(() -> JdbcDialect.fromUrl(" "))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("empty");
  }

  @Test
  void theDialectComesFromTheProductNameForADataSource() {
    assertThat(JdbcDialect.fromProductName("PostgreSQL")).isEqualTo(JdbcDialect.POSTGRESQL);
    assertThat(JdbcDialect.fromProductName("MariaDB")).isEqualTo(JdbcDialect.MARIADB);
    assertThat(JdbcDialect.fromProductName("H2")).isEqualTo(JdbcDialect.H2);
    assertThatThrownBy(() -> JdbcDialect.fromProductName("MySQL"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("'MySQL' is not supported");
  }

  @Test
  void versionsBelowTheMinimumAreRefused() {
    assertThat(JdbcDialect.MARIADB.supportsVersion(10, 6)).isTrue();
    assertThat(JdbcDialect.MARIADB.supportsVersion(11, 0)).isTrue();
    assertThat(JdbcDialect.MARIADB.supportsVersion(10, 5)).isFalse();
    assertThat(JdbcDialect.POSTGRESQL.supportsVersion(9, 6)).isFalse();
    assertThat(JdbcDialect.H2.supportsVersion(1, 4)).isFalse();
    assertThat(JdbcDialect.MARIADB.minimumVersion()).isEqualTo("10.6");
  }

  @Test
  void passwordsAreMaskedInEverySyntax() {
    assertThat(JdbcUrls.redact("jdbc:postgresql://db/x?user=u&password=s3cr3t&ssl=true"))
        .isEqualTo("jdbc:postgresql://db/x?user=u&password=***&ssl=true");
    assertThat(JdbcUrls.redact("jdbc:h2:tcp://db/x;USER=sa;PASSWORD=s3cr3t;MODE=x"))
        .isEqualTo("jdbc:h2:tcp://db/x;USER=sa;PASSWORD=***;MODE=x");
    assertThat(JdbcUrls.redact("jdbc:mariadb://u:s3cr3t@db/x?sslPassword=k3y"))
        .isEqualTo("jdbc:mariadb://***@db/x?sslPassword=***");
    assertThat(JdbcUrls.redact("jdbc:postgresql://db/x?pwd=s3cr3t")).doesNotContain("s3cr3t");
  }
}
