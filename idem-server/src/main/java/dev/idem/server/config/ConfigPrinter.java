package dev.idem.server.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import dev.idem.DedupConfig;
import dev.idem.server.auth.JwtSettings;
import dev.idem.server.deliver.RetryPolicy;
import dev.idem.server.signature.SignatureSettings;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Prints a config as YAML with every default filled in and every secret replaced by {@code ***}
 * (admin token, signature secrets, passwords, credentials in URLs, credential headers): what {@code
 * idem check-config} shows. The output is itself a valid config, secrets aside.
 */
public final class ConfigPrinter {
  private static final ObjectMapper YAML =
      new ObjectMapper(
          YAMLFactory.builder()
              .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
              .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
              .build());

  private ConfigPrinter() {}

  /**
   * Returns the effective config as YAML, secrets masked.
   *
   * @param config the config
   * @return the YAML text
   */
  public static String toYaml(IdemConfig config) {
    Map<String, Object> root = new LinkedHashMap<>();
    ServerSettings s = config.server();
    Map<String, Object> server = new LinkedHashMap<>();
    server.put("host", s.host());
    server.put("port", s.port());
    server.put("admin_token", s.adminToken() == null ? null : Masking.MASK);
    server.put("max_threads", s.maxThreads());
    server.put("shutdown_timeout", Durations.format(s.shutdownTimeout()));
    if (s.logLevel() != null) {
      server.put("log_level", s.logLevel());
    }
    server.put("read_timeout", Durations.format(s.limits().readTimeout()));
    server.put("min_data_rate", DataSizes.format(s.limits().minDataRate()));
    server.put("idle_timeout", Durations.format(s.limits().idleTimeout()));
    server.put("max_header_size", DataSizes.format(s.limits().maxHeaderSize()));
    if (s.managementPort() != null) {
      server.put("management_port", s.managementPort());
    }
    TlsSettings tls = s.tls();
    if (tls != null) {
      Map<String, Object> t = new LinkedHashMap<>();
      if (tls.certificate() != null) {
        t.put("certificate", String.valueOf(tls.certificate()));
        t.put("private_key", String.valueOf(tls.privateKey()));
      } else {
        t.put("keystore", String.valueOf(tls.keystore()));
        if (tls.keystorePassword() != null) {
          t.put("keystore_password", Masking.MASK);
        }
      }
      if (tls.clientCa() != null) {
        t.put("client_ca", String.valueOf(tls.clientCa()));
      }
      t.put("reload_interval", Durations.format(tls.reloadInterval()));
      server.put("tls", t);
    }
    root.put("server", server);
    root.put("store", store(config.store()));
    List<Object> pipelines = new ArrayList<>();
    for (PipelineSettings p : config.pipelines()) {
      pipelines.add(pipeline(p));
    }
    root.put("pipelines", pipelines);
    try {
      return YAML.writeValueAsString(root);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot print the config", e);
    }
  }

  private static Map<String, Object> store(StoreSettings st) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("type", st.type().configName());
    if (st.path() != null) {
      m.put("path", st.path().toString());
    }
    if (st.durability() != null) {
      m.put("durability", st.durability().configName());
    }
    if (st.url() != null) {
      m.put("url", Masking.url(st.url()));
    }
    if (st.prefix() != null) {
      m.put("prefix", st.prefix());
    }
    if (st.username() != null) {
      m.put("username", st.username());
    }
    if (st.password() != null) {
      m.put("password", Masking.MASK);
    }
    if (st.maxKeys() != null) {
      m.put("max_keys", st.maxKeys());
    }
    if (st.instanceId() != null) {
      m.put("instance_id", st.instanceId());
    }
    return m;
  }

  private static Map<String, Object> jwt(JwtSettings j) {
    Map<String, Object> m = new LinkedHashMap<>();
    if (j.issuer() != null) {
      m.put("issuer", j.issuer());
    }
    if (j.audience() != null) {
      m.put("audience", j.audience());
    }
    if (j.jwksUrl() != null) {
      m.put("jwks_url", Masking.url(String.valueOf(j.jwksUrl())));
    }
    if (j.publicKey() != null) {
      m.put("public_key", String.valueOf(j.publicKey()));
    }
    if (j.secret() != null) {
      m.put("secret", Masking.MASK);
    }
    m.put("algorithms", j.algorithms());
    m.put("leeway", Durations.format(j.leeway()));
    m.put("max_delegation_depth", j.maxDelegationDepth());
    return m;
  }

  private static Map<String, Object> webhook(WebhookSettings w) {
    Map<String, Object> webhook = new LinkedHashMap<>();
    webhook.put("path", w.path());
    webhook.put("max_body", DataSizes.format(w.maxBody()));
    webhook.put("max_depth", w.maxDepth());
    SignatureSettings sig = w.signature();
    if (sig != null) {
      Map<String, Object> sm = new LinkedHashMap<>();
      sm.put("scheme", sig.scheme().configName());
      if (sig.secrets().size() == 1) {
        sm.put("secret", Masking.MASK);
      } else {
        sm.put("secrets", java.util.Collections.nCopies(sig.secrets().size(), Masking.MASK));
      }
      sm.put("tolerance", Durations.format(sig.tolerance()));
      webhook.put("signature", sm);
    }
    if (w.jwt() != null) {
      webhook.put("auth", Map.of("jwt", jwt(Objects.requireNonNull(w.jwt()))));
    }
    if (w.mtls() != null) {
      Path ca = Objects.requireNonNull(w.mtls()).ca();
      webhook.put("auth", Map.of("mtls", ca == null ? Map.of() : Map.of("ca", ca.toString())));
    }
    if (w.principalHeader() != null) {
      webhook.put("auth", Map.of("principal_header", Objects.requireNonNull(w.principalHeader())));
    }
    return webhook;
  }

  private static Map<String, Object> pipeline(PipelineSettings p) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("id", p.id());
    if (p.tenant() != null) {
      m.put("tenant", String.valueOf(p.tenant()));
    }
    WebhookSettings hook = p.webhook();
    m.put(
        "source", Map.of(p.source().type(), hook == null ? p.source().printable() : webhook(hook)));
    DedupSettings d = p.dedup();
    if (d != null) {
      Map<String, Object> dm = new LinkedHashMap<>();
      if (d.key() != null) {
        dm.put("key", d.key().composite() ? d.key().expressions() : d.key().expressions().get(0));
      }
      DedupConfig c = d.config();
      dm.put("window", c.ttl() == null ? "forever" : Durations.format(c.ttl()));
      dm.put("expiry", c.expiry().name().toLowerCase(java.util.Locale.ROOT));
      if (d.maxKeys() != null) {
        dm.put("max_keys", d.maxKeys());
      }
      dm.put("lease", Durations.format(c.lease()));
      dm.put("mode", d.mode().configName());
      if (d.store() != null) {
        dm.put("store", store(d.store()));
      }
      m.put("dedup", dm);
    }
    OrderingSettings o = p.ordering();
    if (o != null) {
      Map<String, Object> om = new LinkedHashMap<>();
      om.put("key", o.key().composite() ? o.key().expressions() : o.key().expressions().get(0));
      om.put("mode", o.mode().configName());
      om.put("lock_ttl", Durations.format(o.lockTtl()));
      if (o.sequence() != null) {
        om.put("sequence", o.sequence());
        om.put("gap_timeout", Durations.format(o.gapTimeout()));
      }
      om.put("max_attempts", o.maxAttempts());
      om.put("on_failure", o.onFailure().configName());
      m.put("ordering", om);
    }
    if (p.jq() != null) {
      m.put("transform", Map.of("jq", p.jq()));
    }
    Map<String, Object> dv = new LinkedHashMap<>();
    DeliverSettings del = p.deliver();
    dv.put("mode", del.mode().configName());
    RetryPolicy r = del.retry();
    dv.put("retries", r.retries());
    dv.put("backoff", Durations.format(r.initialBackoff()));
    dv.put("max_backoff", Durations.format(r.maxBackoff()));
    SinkSettings sink = del.sink();
    if (sink instanceof SinkSettings.Http h) {
      Map<String, Object> hm = new LinkedHashMap<>();
      hm.put("url", Masking.url(h.url().toString()));
      if (!h.headers().isEmpty()) {
        Map<String, String> headers = new TreeMap<>();
        h.headers().forEach((k, v) -> headers.put(k, Masking.isSecretHeader(k) ? Masking.MASK : v));
        hm.put("headers", headers);
      }
      hm.put("timeout", Durations.format(h.timeout()));
      dv.put("http", hm);
    } else if (sink instanceof SinkSettings.File f) {
      dv.put("file", Map.of("path", f.path().toString()));
    } else if (sink instanceof SinkSettings.Jdbc j) {
      Map<String, Object> jm = new LinkedHashMap<>();
      jm.put("url", Masking.url(j.url()));
      jm.put("table", j.table());
      if (j.username() != null) {
        jm.put("username", j.username());
      }
      if (j.password() != null) {
        jm.put("password", Masking.MASK);
      }
      dv.put("jdbc", jm);
    } else if (sink instanceof SinkSettings.Nats n) {
      Map<String, Object> nm = new LinkedHashMap<>();
      nm.put("url", Masking.url(n.url()));
      nm.put("subject", n.subject());
      if (n.stream() != null) {
        nm.put("stream", n.stream());
      }
      nm.put("timeout", Durations.format(n.timeout()));
      dv.put("nats", nm);
    } else if (sink instanceof SinkSettings.Kafka k) {
      Map<String, Object> km = new LinkedHashMap<>();
      km.put("bootstrap", k.bootstrap());
      km.put("topic", k.topic());
      if (k.key() != null) {
        km.put("key", k.key());
      }
      km.put("timeout", Durations.format(k.timeout()));
      if (!k.properties().isEmpty()) {
        km.put("properties", KafkaSourceSettings.maskedProperties(k.properties()));
      }
      dv.put("kafka", km);
    } else if (sink instanceof SinkSettings.RabbitMq q) {
      Map<String, Object> qm = new LinkedHashMap<>();
      qm.put("uri", Masking.url(q.uri().toString()));
      qm.put("exchange", q.exchange());
      qm.put("routing_key", q.routingKey());
      qm.put("timeout", Durations.format(q.timeout()));
      dv.put("rabbitmq", qm);
    } else {
      dv.put("stdout", Map.of());
    }
    m.put("deliver", dv);
    return m;
  }
}
