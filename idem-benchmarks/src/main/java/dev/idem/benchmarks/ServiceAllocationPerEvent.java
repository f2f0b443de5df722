package dev.idem.benchmarks;

import dev.idem.TimeSource;
import dev.idem.server.DefaultEdge;
import dev.idem.server.ServiceAssembly;
import dev.idem.server.ServiceRuntime;
import dev.idem.server.config.ConfigLoader;
import dev.idem.server.config.IdemConfig;
import dev.idem.server.pipeline.Answer;
import dev.idem.server.pipeline.InboundRequest;
import dev.idem.server.source.webhook.WebhookSource;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Bytes allocated per webhook event by the service below the HTTP server: the service benchmark's
 * pipeline (memory store, key {@code source.id}, sync delivery to a JSON-lines file), assembled
 * from its YAML as {@code idem serve} does, fed the benchmark's events ({@code service-dup50.lua}:
 * half of them repeat the id sent 1001 events earlier) on one thread through {@link
 * WebhookSource#handle}. It reads the thread's allocation counter around a run of events, so the
 * figure does not depend on the machine's load (no timing). Run: {@code java -cp
 * idem-server/target/idem.jar:idem-benchmarks/target/classes
 * dev.idem.benchmarks.ServiceAllocationPerEvent [events]}.
 */
public final class ServiceAllocationPerEvent {
  private ServiceAllocationPerEvent() {}

  public static void main(String[] args) throws Exception {
    int events = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
    Path dir = Files.createTempDirectory("idem-alloc");
    Path out = dir.resolve("delivered.jsonl");
    String yaml =
        """
        server: { host: 127.0.0.1, port: 0 }
        store: { type: memory, max_keys: 1000000 }
        pipelines:
          - id: bench
            source: { webhook: { path: /hooks/bench } }
            dedup: { key: source.id, window: 1h }
            deliver: { mode: sync, file: { path: "%s" } }
        """
            .formatted(out);
    IdemConfig config = ConfigLoader.parse("bench.yaml", yaml, n -> null);
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    Map<String, String> headers = Map.of("content-type", "application/json");
    try (ServiceRuntime runtime =
        ServiceAssembly.assemble(config, new DefaultEdge(), TimeSource.system())) {
      WebhookSource hook = runtime.webhooks().get(0);
      long driver = 0;
      long driverCpu = 0;
      com.sun.management.OperatingSystemMXBean os =
          (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
      for (String phase : new String[] {"warm1", "warm2", "driver", "measure"}) {
        long before = threads.getCurrentThreadAllocatedBytes();
        long cpuBefore = threads.getCurrentThreadCpuTime();
        long processBefore = os.getProcessCpuTime();
        int accepted = 0;
        for (int n = 1; n <= events; n++) {
          int id = n % 2 == 0 && n > 1001 ? n - 1001 : n;
          byte[] body =
              body(phase.equals("driver") ? "measure" : phase, id); // same length as measured
          if (phase.equals("driver")) {
            accepted += body.length > 0 ? 1 : 0; // the driver's own cost: the body alone
            continue;
          }
          Answer a = hook.handle(new InboundRequest(body, name -> headers.get(name.toLowerCase())));
          if (a.status() == 202) {
            accepted++;
          }
        }
        long bytes = threads.getCurrentThreadAllocatedBytes() - before;
        long cpu = threads.getCurrentThreadCpuTime() - cpuBefore;
        long process = os.getProcessCpuTime() - processBefore;
        if (phase.equals("driver")) {
          driver = bytes;
          driverCpu = cpu;
        } else if (phase.equals("measure")) {
          // CPU time depends on the machine far less than elapsed time does, but more than the
          // allocation count: other processes still evict the caches and share the cores' time.
          System.out.printf(
              "events=%d accepted=%d bytes/event=%.0f (the service's, after the driver's own %.0f"
                  + " bytes/event for making the body) thread_cpu_ns/event=%.0f"
                  + " process_cpu_ns/event=%.0f (driver's own %.0f, not subtracted from the"
                  + " process figure)%n",
              events,
              accepted,
              (double) (bytes - driver) / events,
              (double) driver / events,
              (double) (cpu - driverCpu) / events,
              (double) process / events,
              (double) driverCpu / events);
        }
      }
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(dir);
    }
  }

  private static byte[] body(String phase, int id) {
    return ("{\"id\":\""
            + phase
            + "-0-"
            + id
            + "\",\"type\":\"order.paid\",\"amount\":4200,\"currency\":\"eur\","
            + "\"customer\":{\"id\":\"c-"
            + (id % 97)
            + "\"}}")
        .getBytes(StandardCharsets.UTF_8);
  }
}
