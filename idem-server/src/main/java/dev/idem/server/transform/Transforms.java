package dev.idem.server.transform;

import dev.idem.IdemConfigException;

/**
 * Makes {@link Transform}s.
 *
 * <p>Transforms are jq programs run by jackson-jq (the jq 1.6 dialect). jq was chosen over JSLT and
 * JOLT because webhook users already know it from the command line ({@code jq '{id: .id}'}), it can
 * drop an event ({@code select}) and fan one out ({@code .items[]}) with no extra concepts, and
 * jackson-jq runs it on the Jackson trees Idem already parses, with no native code.
 */
public final class Transforms {
  private Transforms() {}

  /**
   * Compiles a jq program once, at config time.
   *
   * <p>Syntax errors fail here. Names are resolved when the program runs, so a call of a function
   * that does not exist (a typo such as {@code selct}) fails each event it reaches with a {@link
   * TransformException} that names it; run {@code idem key} or a test event after editing a
   * program.
   *
   * @param program the jq program, e.g. {@code {id: .id, total: .total_price}}
   * @return the transform; thread-safe
   * @throws IdemConfigException quoting the program and the parser's error
   */
  public static Transform jq(String program) {
    return JqTransform.compile(program);
  }
}
