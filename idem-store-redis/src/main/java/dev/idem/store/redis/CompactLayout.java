package dev.idem.store.redis;

import dev.idem.DedupKey;
import dev.idem.Expiry;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.spi.CommitRequest;
import dev.idem.spi.ExtendRequest;
import dev.idem.spi.ReleaseRequest;
import dev.idem.spi.ReserveRequest;
import dev.idem.spi.Ttl;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The compact key layout ({@link RedisDedupStoreConfig.Layout#COMPACT}): many keys of one scope per
 * small hash, so Redis keeps them listpack-encoded (about 62 bytes a key instead of a Redis key,
 * its value object and its expiry entry each). Stable: documented in {@code docs/stores/redis.md}.
 *
 * <ul>
 *   <li><b>Shard.</b> A key belongs to shard {@code word0 mod compactShards} of its scope. The
 *       shard's keys are {@code <prefix>{<scope>|<shard hex>}:...}: the braces are a Redis Cluster
 *       hash tag, so everything of one shard is in one slot and the shards spread over the cluster.
 *   <li><b>Shard hash.</b> {@code <shard>:h} holds every entry of the shard: field = the key's
 *       32-byte digest, value = its {@link CompactFormat} entry, plus one meta field {@code m} (see
 *       {@link CompactScripts}). A key is in exactly one place, so a lookup is one {@code HGET},
 *       also for a key that is not there.
 *   <li><b>Reclaiming.</b> The hash expires as a whole ({@code PEXPIRE}) one sweep interval after
 *       the last deadline written into it; a reserve that inserts a key removes the shard's dead
 *       entries once per sweep interval (an eighth of the window, at least about a second).
 *   <li><b>Result keys.</b> A result too long to keep in the value lives in {@code <shard>:r:<key
 *       hex>}, a string with the entry's expiry.
 * </ul>
 *
 * <p>Answers are exact: every deadline is kept to the millisecond in the value and judged by the
 * caller's clock, as in the standard layout. Only reclaiming memory is coarse: a dead entry stays
 * until the first inserting reserve in its shard after the next sweep is due (in a shard that takes
 * writes, within about an eighth of its window), or until the whole hash expires.
 */
final class CompactLayout {
  /** An eighth of the window (or lease) is the sweep interval. */
  private static final int SWEEPS_PER_WINDOW = 8;

  /** The shortest sweep interval, 1,024 ms. */
  private static final long MIN_INTERVAL = 1024;

  /** Deadlines further than this never expire the hash (as the standard layout). */
  static final long MAX_EXPIRY_MILLIS = 100L * 366 * 24 * 3600 * 1000;

  /** The shard hash's meta field (every other field is a 32-byte key digest). */
  static final byte[] META_FIELD = {'m'};

  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] EMPTY = new byte[0];
  private static final byte[] ONE = {'1'};
  private static final byte[] ZERO = {'0'};

  private final String prefix;
  private final int shards;
  private final ConcurrentHashMap<Scope, String> scopeHeads = new ConcurrentHashMap<>();

  CompactLayout(String prefix, int shards) {
    this.prefix = prefix;
    this.shards = shards;
  }

  /** One script call: the script, its one key (the shard's directory) and its arguments. */
  record Call(LuaScripts.Script script, byte[] key, byte[][] argv) {}

  // --- names ------------------------------------------------------------------------------------

  /** {@code <prefix>{<scope>|<shard hex>}}: the common head of every key of the key's shard. */
  String shardBase(Scope scope, DedupKey key) {
    String head = scopeHeads.computeIfAbsent(scope, s -> prefix + "{" + s + "|");
    long shard = Long.remainderUnsigned(key.word(0), shards);
    return head + Long.toHexString(shard) + "}";
  }

  /** The shard's hash, {@code <base>:h}: the key every script of the key runs on. */
  byte[] shardHash(Scope scope, DedupKey key) {
    return (shardBase(scope, key) + ":h").getBytes(StandardCharsets.UTF_8);
  }

  /** The key's result key, {@code <base>:r:<key hex>}. */
  byte[] resultKey(Scope scope, DedupKey key) {
    byte[] base = (shardBase(scope, key) + ":r:").getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[base.length + 64];
    System.arraycopy(base, 0, out, 0, base.length);
    int at = base.length;
    for (int w = 0; w < 4; w++) {
      long word = key.word(w);
      for (int shift = 60; shift >= 0; shift -= 4) {
        out[at++] = HEX[(int) (word >>> shift) & 0xf];
      }
    }
    return out;
  }

  /**
   * The SCAN pattern for every key of one scope in this layout: the prefix (glob characters
   * escaped), {@code {}, the scope, {@code |} and anything (a scope has no glob characters and no
   * {@code |}, so no other scope matches).
   */
  byte[] scanPattern(Scope scope) {
    StringBuilder p = new StringBuilder(prefix.length() + 80);
    for (int i = 0; i < prefix.length(); i++) {
      char c = prefix.charAt(i);
      if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
        p.append('\\');
      }
      p.append(c);
    }
    p.append("\\{").append(scope).append("|*");
    return p.toString().getBytes(StandardCharsets.UTF_8);
  }

  /** Whether a key found by {@link #scanPattern} is a shard hash (not a result key). */
  static boolean isShardHash(byte[] redisKey) {
    int n = redisKey.length;
    return n >= 2 && redisKey[n - 1] == 'h' && redisKey[n - 2] == ':';
  }

  /**
   * The sweep interval for a window or lease: an eighth of it, at least {@link #MIN_INTERVAL}.
   *
   * @param span the window (or lease) in milliseconds
   * @return the interval, decimal
   */
  static byte[] interval(long span) {
    return decimal(Math.max(MIN_INTERVAL, span / SWEEPS_PER_WINDOW));
  }

  // --- calls ------------------------------------------------------------------------------------

  Call reserve(ReserveRequest r) {
    long now = r.nowMillis();
    long leaseUntil = r.leaseUntil();
    Fingerprint fingerprint = r.fingerprint();
    Ttl ttl = r.ttl();
    long lease = span(now, leaseUntil);
    long span = ttl.expires() ? Math.max(lease, ttl.millis()) : lease;
    byte[] refreshDeadline = EMPTY;
    byte[] refreshPx = EMPTY;
    if (ttl.expiry() == Expiry.SLIDING && ttl.expires()) {
      long refreshed = ttl.expiresAt(now);
      refreshDeadline = EntryFormat.longBytes(refreshed);
      refreshPx = px(now, refreshed);
    }
    return new Call(
        CompactScripts.RESERVE,
        shardHash(r.scope(), r.key()),
        new byte[][] {
          r.key().toBytes(),
          decimal(now),
          resultKey(r.scope(), r.key()),
          interval(span),
          CompactFormat.inFlight(r.token(), now, leaseUntil, fingerprint),
          fingerprint == null ? EMPTY : fingerprint.toBytes(),
          refreshDeadline,
          refreshPx
        });
  }

  Call commit(CommitRequest c) {
    long now = c.nowMillis();
    long expiresAt = c.ttl().expiresAt(now);
    byte[] times = new byte[16];
    EntryFormat.putLong(times, 0, now);
    EntryFormat.putLong(times, 8, expiresAt);
    byte[] result = c.result();
    return new Call(
        CompactScripts.COMMIT,
        shardHash(c.scope(), c.key()),
        new byte[][] {
          c.key().toBytes(),
          decimal(now),
          resultKey(c.scope(), c.key()),
          interval(c.ttl().expires() ? c.ttl().millis() : 0),
          EntryFormat.longBytes(c.token()),
          times,
          result == null ? ZERO : ONE,
          result == null ? EMPTY : result,
          px(now, expiresAt)
        });
  }

  Call release(ReleaseRequest r) {
    return new Call(
        CompactScripts.RELEASE,
        shardHash(r.scope(), r.key()),
        new byte[][] {
          r.key().toBytes(),
          decimal(r.nowMillis()),
          resultKey(r.scope(), r.key()),
          EntryFormat.longBytes(r.token())
        });
  }

  Call extend(ExtendRequest e) {
    long now = e.nowMillis();
    long until = e.leaseUntil();
    return new Call(
        CompactScripts.EXTEND,
        shardHash(e.scope(), e.key()),
        new byte[][] {
          e.key().toBytes(),
          decimal(now),
          resultKey(e.scope(), e.key()),
          interval(span(now, until)),
          EntryFormat.longBytes(e.token()),
          EntryFormat.longBytes(until)
        });
  }

  Call inspect(Scope scope, DedupKey key, long now) {
    return new Call(
        CompactScripts.INSPECT,
        shardHash(scope, key),
        new byte[][] {key.toBytes(), decimal(now), resultKey(scope, key)});
  }

  Call forget(Scope scope, DedupKey key, long now) {
    return new Call(
        CompactScripts.FORGET,
        shardHash(scope, key),
        new byte[][] {key.toBytes(), decimal(now), resultKey(scope, key)});
  }

  /** {@code to - from}, 0 if negative, {@link Long#MAX_VALUE} if it overflows. */
  private static long span(long from, long to) {
    try {
      return Math.max(0, Math.subtractExact(to, from));
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE;
    }
  }

  /** Relative Redis expiry for a deadline, as decimal text; empty for "no expiry". */
  private static byte[] px(long now, long deadline) {
    if (deadline == Long.MAX_VALUE) {
      return EMPTY;
    }
    long left = deadline - now;
    return left > MAX_EXPIRY_MILLIS ? EMPTY : decimal(Math.max(1, left));
  }

  private static byte[] decimal(long value) {
    return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
  }
}
