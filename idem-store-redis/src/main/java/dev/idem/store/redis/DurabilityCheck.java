package dev.idem.store.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Reads what a Redis server's settings risk for deduplication: a committed key that Redis forgets
 * (evicted under memory pressure, or lost in a restart) lets a duplicate through. A pure function
 * of {@code CONFIG GET maxmemory-policy maxmemory appendonly save}, so it is tested without I/O.
 */
final class DurabilityCheck {
  /** The settings it reads. */
  static final String[] SETTINGS = {"maxmemory-policy", "maxmemory", "appendonly", "save"};

  private DurabilityCheck() {}

  /**
   * Returns one sentence per risk, empty if none.
   *
   * @param config the server's answer to {@code CONFIG GET} of {@link #SETTINGS}
   * @return what each risky setting means, and how to fix it
   */
  static List<String> risks(Map<String, String> config) {
    List<String> risks = new ArrayList<>(2);
    String policy = config.get("maxmemory-policy");
    if (policy == null) {
      risks.add("cannot read maxmemory-policy: make sure it is noeviction");
    } else if (!policy.equalsIgnoreCase("noeviction")) {
      String limit = config.getOrDefault("maxmemory", "?");
      risks.add(
          "maxmemory-policy is "
              + policy.toLowerCase(Locale.ROOT)
              + " (maxmemory "
              + limit
              + "): when memory is full Redis evicts committed keys and their duplicates are"
              + " delivered again; set maxmemory-policy noeviction (writes then fail, answered 503,"
              + " instead)");
    }
    String aof = config.get("appendonly");
    String save = config.get("save");
    if (aof == null) {
      risks.add("cannot read appendonly: make sure persistence is on (appendonly yes)");
    } else if (!aof.equalsIgnoreCase("yes")) {
      risks.add(
          save == null || save.isBlank()
              ? "persistence is off (appendonly no, no save points): a Redis restart forgets every"
                  + " committed key and their duplicates are delivered again; set appendonly yes"
              : "appendonly is no (RDB snapshots only, save '"
                  + save
                  + "'): a Redis restart forgets the keys committed since the last snapshot; set"
                  + " appendonly yes");
    }
    return risks;
  }
}
