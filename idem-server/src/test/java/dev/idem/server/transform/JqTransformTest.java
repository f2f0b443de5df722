package dev.idem.server.transform;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdemConfigException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class JqTransformTest {

  private static byte[] json(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static List<String> run(Transform t, String input) {
    List<String> out = new ArrayList<>();
    for (byte[] b : t.apply(json(input))) {
      out.add(new String(b, StandardCharsets.UTF_8));
    }
    return out;
  }

  @Test
  void theDesignExampleProjectsFields() {
    Transform t = Transforms.jq("{id: .id, total: .total_price}");

    assertThat(run(t, "{\"id\":\"o-1\",\"total_price\":\"29.99\",\"email\":\"a@b.c\"}"))
        .containsExactly("{\"id\":\"o-1\",\"total\":\"29.99\"}");
  }

  @Test
  void selectDropsAnEventWithZeroOutputs() {
    Transform t = Transforms.jq("select(.status == \"paid\")");

    assertThat(run(t, "{\"status\":\"pending\"}")).isEmpty();
    assertThat(run(t, "{\"status\":\"paid\"}")).containsExactly("{\"status\":\"paid\"}");
  }

  @Test
  void iteratingAnArrayFansOutInOrder() {
    Transform t = Transforms.jq(".items[]");

    assertThat(run(t, "{\"items\":[{\"sku\":\"a\"},{\"sku\":\"b\"},{\"sku\":\"c\"}]}"))
        .containsExactly("{\"sku\":\"a\"}", "{\"sku\":\"b\"}", "{\"sku\":\"c\"}");
  }

  @Test
  void outputsMayBeAnyJsonValue() {
    assertThat(
            run(Transforms.jq(".a, .b, .c, .d"), "{\"a\":1,\"b\":\"x\",\"c\":null,\"d\":[true]}"))
        .containsExactly("1", "\"x\"", "null", "[true]");
  }

  @Test
  void largeNumbersAndUnicodePassThrough() {
    assertThat(
            run(
                Transforms.jq("{id: .id, name}"),
                "{\"id\":820982911946154508,\"name\":\"Zoë 日本\"}"))
        .containsExactly("{\"id\":820982911946154508,\"name\":\"Zoë 日本\"}");
  }

  @Test
  void aSyntaxErrorIsAConfigErrorQuotingTheProgramAndThePosition() {
    assertThatThrownBy(() -> Transforms.jq("{id: .id"))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("transform.jq '{id: .id'")
        .hasMessageContaining("line 1, column 8")
        .hasMessageContaining("expected");
    assertThatThrownBy(() -> Transforms.jq("  "))
        .isInstanceOf(IdemConfigException.class)
        .hasMessageContaining("empty");
  }

  @Test
  void aRuntimeErrorIsATransformErrorNamingTheProgram() {
    Transform t = Transforms.jq(".items[] | .price - 1");

    assertThatThrownBy(() -> t.apply(json("{\"items\":[{\"price\":\"x\"}]}")))
        .isInstanceOf(TransformException.class)
        .hasMessageContaining("jq program '.items[] | .price - 1' failed");
    assertThatThrownBy(() -> Transforms.jq("error(\"no customer\")").apply(json("{}")))
        .isInstanceOf(TransformException.class)
        .hasMessageContaining("no customer");
  }

  @Test
  void anUnknownFunctionFailsWhenItRunsAndSaysWhich() {
    Transform t = Transforms.jq("selct(.a)");

    assertThatThrownBy(() -> t.apply(json("{\"a\":1}")))
        .isInstanceOf(TransformException.class)
        .hasMessageContaining("selct/1");
  }

  @Test
  void inputThatIsNotJsonIsATransformError() {
    Transform t = Transforms.jq(".");

    assertThatThrownBy(() -> t.apply(json("{not json")))
        .isInstanceOf(TransformException.class)
        .hasMessageContaining("not JSON");
    assertThatThrownBy(() -> t.apply(json("")))
        .isInstanceOf(TransformException.class)
        .hasMessageContaining("empty");
  }

  @Test
  void variablesBoundInOneRunDoNotLeakIntoAnother() {
    Transform t = Transforms.jq(".a as $x | {x: $x}");

    assertThat(run(t, "{\"a\":1}")).containsExactly("{\"x\":1}");
    assertThat(run(t, "{\"a\":2}")).containsExactly("{\"x\":2}");
  }

  @Test
  void oneTransformIsSafeUnderConcurrentUse() throws Exception {
    // Given one compiled program with variables, a fan-out and a builtin, shared by 8 threads
    Transform t = Transforms.jq(".n as $n | .items[] | {n: $n, v: (. * $n), s: (tostring)}");
    int threads = 8;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    try {
      List<Future<Integer>> results = new ArrayList<>();
      for (int th = 0; th < threads; th++) {
        int n = th + 1;
        results.add(
            pool.submit(
                () -> {
                  start.await();
                  int checked = 0;
                  for (int i = 0; i < 200; i++) {
                    List<String> out =
                        run(t, "{\"n\":" + n + ",\"items\":[" + i + "," + (i + 1) + "]}");
                    // Then every output belongs to this thread's input
                    assertThat(out)
                        .containsExactly(
                            "{\"n\":" + n + ",\"v\":" + (i * n) + ",\"s\":\"" + i + "\"}",
                            "{\"n\":"
                                + n
                                + ",\"v\":"
                                + ((i + 1) * n)
                                + ",\"s\":\""
                                + (i + 1)
                                + "\"}");
                    checked++;
                  }
                  return checked;
                }));
      }
      start.countDown();
      for (Future<Integer> f : results) {
        assertThat(f.get()).isEqualTo(200);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
