package dev.idem.server.config;

import dev.idem.IdemConfigException;
import dev.idem.server.deliver.HttpSinkSettings;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * Where a pipeline delivers: exactly one of {@code http}, {@code file}, {@code stdout}, {@code
 * jdbc}, {@code nats}.
 */
public sealed interface SinkSettings
    permits SinkSettings.Http,
        SinkSettings.File,
        SinkSettings.Stdout,
        SinkSettings.Jdbc,
        SinkSettings.Nats {

  /**
   * {@code deliver.http}: POST each event as JSON.
   *
   * @param url an http or https URL
   * @param headers extra request headers (e.g. Authorization)
   * @param timeout per attempt
   */
  record Http(URI url, Map<String, String> headers, Duration timeout) implements SinkSettings {
    /** The default timeout per attempt: 10 seconds. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);

    /** The longest timeout per attempt: 10 minutes. */
    public static final Duration MAX_TIMEOUT = Duration.ofMinutes(10);

    /**
     * Validates the fields with the HTTP sink's own rules.
     *
     * @throws IdemConfigException naming the field
     */
    public Http {
      Objects.requireNonNull(url, "url");
      headers = Map.copyOf(headers);
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.compareTo(MAX_TIMEOUT) > 0) {
        throw new IdemConfigException(
            "timeout must be at most 10m, got " + Durations.format(timeout));
      }
      // The sink's own settings hold the rules (URL form, reserved and malformed headers,
      // timeout), so a config that loads is one the sink accepts.
      new HttpSinkSettings(url, headers, timeout);
    }

    /** Hides credential headers. */
    @Override
    public String toString() {
      Map<String, String> shown = new TreeMap<>();
      headers.forEach((k, v) -> shown.put(k, Masking.isSecretHeader(k) ? Masking.MASK : v));
      return "Http[url="
          + Masking.url(url.toString())
          + ", headers="
          + shown
          + ", timeout="
          + timeout
          + "]";
    }
  }

  /**
   * {@code deliver.file}: append each event as one JSON line.
   *
   * @param path the file (created if missing)
   */
  record File(Path path) implements SinkSettings {
    /** Validates the field. */
    public File {
      Objects.requireNonNull(path, "path");
    }
  }

  /** {@code deliver.stdout}: print each event as one JSON line. */
  record Stdout() implements SinkSettings {}

  /**
   * {@code deliver.jdbc}: insert each event into a table.
   *
   * @param url the JDBC URL
   * @param table the table name
   * @param username the user, if not in the URL
   * @param password the password, if not in the URL
   */
  record Jdbc(String url, String table, @Nullable String username, @Nullable String password)
      implements SinkSettings {
    /**
     * Validates the fields.
     *
     * @throws IdemConfigException naming the field
     */
    public Jdbc {
      Objects.requireNonNull(url, "url");
      Objects.requireNonNull(table, "table");
      if (!url.startsWith("jdbc:")) {
        throw new IdemConfigException(
            "url: '" + Masking.url(url) + "' is not a JDBC URL (e.g. jdbc:postgresql://host/db)");
      }
      if (!table.matches("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?")) {
        throw new IdemConfigException(
            "table: '"
                + table
                + "' is not a table name; use letters, digits and _ (schema.table allowed)");
      }
    }

    /** Hides the password. */
    @Override
    public String toString() {
      return "Jdbc[url="
          + Masking.url(url)
          + ", table="
          + table
          + (username == null ? "" : ", username=" + username)
          + (password == null ? "" : ", password=***")
          + "]";
    }
  }

  /**
   * {@code deliver.nats}: publish each event to a JetStream subject and wait for the stream's
   * publish ack (the confirmation), with {@code Idempotency-Key} and {@code Nats-Msg-Id} (the same
   * value, so the stream's duplicate window drops Idem's own retries too).
   *
   * @param url the server URL(s), e.g. {@code nats://127.0.0.1:4222}
   * @param subject the subject to publish to (no wildcards); a stream must capture it
   * @param stream the stream expected to store it, or null for any
   * @param timeout how long to wait for the publish ack
   */
  record Nats(String url, String subject, @Nullable String stream, Duration timeout)
      implements SinkSettings {
    /** The default publish-ack timeout: 5 seconds. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

    /**
     * Validates the fields.
     *
     * @throws IdemConfigException naming the field
     */
    public Nats {
      Objects.requireNonNull(url, "url");
      Objects.requireNonNull(subject, "subject");
      Objects.requireNonNull(timeout, "timeout");
      NatsSourceSettings.checkUrl(url);
      NatsSourceSettings.checkSubject(subject, "subject", false);
      if (stream != null && !stream.matches("[A-Za-z0-9_-]+")) {
        throw new IdemConfigException(
            "stream: '" + stream + "' is not a stream name; use letters, digits, - and _");
      }
      if (timeout.toMillis() < 1 || timeout.compareTo(Http.MAX_TIMEOUT) > 0) {
        throw new IdemConfigException(
            "timeout must be from 1ms to 10m, got " + Durations.format(timeout));
      }
    }

    /** Hides credentials in the URL. */
    @Override
    public String toString() {
      return "Nats[url="
          + Masking.url(url)
          + ", subject="
          + subject
          + (stream == null ? "" : ", stream=" + stream)
          + ", timeout="
          + timeout
          + "]";
    }
  }
}
