package dev.idem.server.config;

import java.util.Locale;

/** What a duplicate gets ({@code dedup.mode}). */
public enum DedupMode implements ConfigName {
  /** Duplicates are dropped and answered {@code 200 {"accepted":true,"duplicate":true}}. */
  DROP,
  /**
   * The first delivery's answer is stored and returned to every duplicate; the same key with a
   * different payload is a conflict ({@code 422}). Needs {@code deliver.mode: sync}.
   */
  REPLAY;

  @Override
  public String configName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
