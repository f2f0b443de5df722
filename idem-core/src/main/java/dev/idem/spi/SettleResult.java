package dev.idem.spi;

/** A store's answer to commit and release. */
public enum SettleResult {
  /** The state changed as asked (or, for a repeated commit with the same token, already had). */
  APPLIED,
  /**
   * Nothing changed: the key is not in flight under this token, or its lease ran out (another
   * caller may hold the key now).
   */
  STALE
}
