package dev.idem.spi;

/** A store's answer to commit, release and extend. */
public enum SettleResult {
  /**
   * The state changed as asked (or, for a repeated commit with the same token or an extend that
   * would not lengthen the lease, already had).
   */
  APPLIED,
  /**
   * Nothing changed: the key is not in flight under this token, or its lease ran out (another
   * caller may hold the key now).
   */
  STALE
}
