package dev.idem.server.transform;

import java.util.List;

/**
 * Turns one JSON event into zero, one or several JSON events. Zero means the event is dropped (its
 * dedup reservation is released, so a resend may try again); several means a fan-out (the dedup key
 * commits once every child is delivered). Create one with {@code Transforms.jq(String)}.
 * Thread-safe.
 */
public interface Transform {

  /**
   * Applies the transform.
   *
   * @param json the event body, UTF-8 JSON
   * @return the output events, UTF-8 JSON each, in order
   * @throws TransformException if the program fails on this input
   */
  List<byte[]> apply(byte[] json);
}
