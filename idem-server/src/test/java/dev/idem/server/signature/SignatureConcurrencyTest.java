package dev.idem.server.signature;

import static dev.idem.server.signature.Requests.headers;
import static dev.idem.server.signature.Requests.hex;
import static dev.idem.server.signature.Requests.hmac;
import static dev.idem.server.signature.Requests.utf8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.ManualTimeSource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class SignatureConcurrencyTest {

  @Test
  void oneVerifierServesManyThreadsWithoutMixingUpTheirMacs() throws Exception {
    // Given one verifier shared by 8 threads, each verifying its own bodies, good and tampered
    SignatureVerifier verifier =
        SignatureVerifiers.create(
            new SignatureSettings(SignatureScheme.GITHUB, "shared", Duration.ofMinutes(5)),
            new ManualTimeSource());
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<int[]>> results = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        int thread = t;
        results.add(
            pool.submit(
                () -> {
                  int accepted = 0;
                  int rejected = 0;
                  for (int i = 0; i < 2_000; i++) {
                    String body = "{\"thread\":" + thread + ",\"i\":" + i + "}";
                    String signature = "sha256=" + hex(hmac(utf8("shared"), body));
                    String sent = i % 3 == 0 ? body + " " : body; // every third one tampered
                    try {
                      verifier.verify(utf8(sent), headers("X-Hub-Signature-256", signature));
                      accepted++;
                    } catch (SignatureException e) {
                      rejected++;
                    }
                  }
                  return new int[] {accepted, rejected};
                }));
      }
      // Then each thread saw exactly its good ones accepted and its tampered ones rejected
      for (Future<int[]> f : results) {
        int[] r = f.get();
        assertThat(r[1]).isEqualTo(667);
        assertThat(r[0]).isEqualTo(1_333);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
