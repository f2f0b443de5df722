package dev.idem;

/** How a committed key's time to live is counted. */
public enum Expiry {
  /**
   * The window restarts at every duplicate hit: an actively repeating duplicate stays suppressed,
   * and a key expires once it has been quiet for the whole window. The default.
   */
  SLIDING,
  /** The window is counted from the first commit; duplicate hits do not extend it. */
  FIXED
}
