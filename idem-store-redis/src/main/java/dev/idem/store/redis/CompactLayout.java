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
 * small hash, so Redis keeps them listpack-encoded (about 60 bytes a key instead of a Redis key,
 * its value object and its expiry entry each). Stable: documented in {@code docs/stores/redis.md}.
 *
 * <ul>
 *   <li><b>Shard.</b> A key belongs to shard {@code word0 mod compactShards} of its scope. The
 *       shard's keys are {@code <prefix>{<scope>|<shard hex>}:...}: the braces are a Redis Cluster
 *       hash tag, so everything of one shard is in one slot and the shards spread over the cluster.
 *   <li><b>Buckets.</b> A key's entry (its {@link CompactFormat} value under the field = its
 *       32-byte digest) lives in one bucket hash {@code <shard>:<member>} chosen by its deadline:
 *       buckets are {@code 2^e} milliseconds wide with {@code 2^e} the smallest power of two at or
 *       above an eighth of the time left to the deadline (at least about a second), member {@code
 *       <e>.<deadline / 2^e>} in base 36, so a key with a 24 h window goes into a bucket of about 3
 *       h. Deadlines that never come (no TTL) or come in more than 100 years go into the bucket
 *       {@code f}, which never expires. A bucket hash expires as a whole at its end ({@code
 *       PEXPIRE}), which is after every deadline in it.
 *   <li><b>Directory.</b> {@code <shard>:d} is a sorted set of the shard's buckets scored by their
 *       end; scripts probe its buckets for the key, so a lookup finds it wherever it is. A scope
 *       with one window has about 5 to 9 live buckets per shard.
 *   <li><b>Result keys.</b> A result too long to keep in the value lives in {@code <shard>:r:<key
 *       hex>}, a string with the entry's expiry.
 * </ul>
 *
 * <p>Answers are exact: every deadline is kept to the millisecond in the value and judged by the
 * caller's clock, as in the standard layout. Only reclaiming memory is coarse: a dead entry stays
 * in memory until its bucket ends, at most a quarter of its window (or lease) after its deadline.
 * An in-flight entry is put in the bucket its commit would use (when the window is at least the
 * lease), so that the commit rewrites it in place.
 */
final class CompactLayout {
  /** An eighth of the time left picks the bucket width: 5 to 9 buckets per window. */
  private static final int BUCKETS_PER_WINDOW = 8;

  /** The narrowest bucket, 2^10 ms (about a second). */
  private static final int MIN_EXPONENT = 10;

  /** Deadlines further than this get the bucket that never expires (as the standard layout). */
  static final long MAX_EXPIRY_MILLIS = 100L * 366 * 24 * 3600 * 1000;

  /** The directory score of the bucket that never ends: 2^53, exact as a Lua number. */
  private static final long FOREVER_END = 1L << 53;

  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] EMPTY = new byte[0];
  private static final byte[] ONE = {'1'};
  private static final byte[] ZERO = {'0'};
  private static final Bucket FOREVER =
      new Bucket(
          "f".getBytes(StandardCharsets.US_ASCII),
          Long.toString(FOREVER_END).getBytes(StandardCharsets.US_ASCII),
          EMPTY);

  private final String prefix;
  private final int shards;
  private final ConcurrentHashMap<Scope, String> scopeHeads = new ConcurrentHashMap<>();

  CompactLayout(String prefix, int shards) {
    this.prefix = prefix;
    this.shards = shards;
  }

  /** One script call: the script, its one key (the shard's directory) and its arguments. */
  record Call(LuaScripts.Script script, byte[] key, byte[][] argv) {}

  /** A bucket: its member name in the directory, its end (decimal) and its PX (empty: none). */
  record Bucket(byte[] member, byte[] end, byte[] px) {}

  // --- names ------------------------------------------------------------------------------------

  /** {@code <prefix>{<scope>|<shard hex>}}: the common head of every key of the key's shard. */
  String shardBase(Scope scope, DedupKey key) {
    String head = scopeHeads.computeIfAbsent(scope, s -> prefix + "{" + s + "|");
    long shard = Long.remainderUnsigned(key.word(0), shards);
    return head + Long.toHexString(shard) + "}";
  }

  /** The shard's directory, {@code <base>:d}: the key every script of the key runs on. */
  byte[] directory(Scope scope, DedupKey key) {
    return (shardBase(scope, key) + ":d").getBytes(StandardCharsets.UTF_8);
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

  /** Whether a key found by {@link #scanPattern} is a bucket hash (not a directory or result). */
  static boolean isBucket(byte[] redisKey) {
    int colon = lastIndexOf(redisKey, (byte) ':');
    if (colon < 0 || colon == redisKey.length - 1) {
      return false;
    }
    if (redisKey.length - colon == 2 && redisKey[colon + 1] == 'f') {
      return true;
    }
    for (int i = colon + 1; i < redisKey.length; i++) {
      if (redisKey[i] == '.') {
        return true;
      }
    }
    return false;
  }

  private static int lastIndexOf(byte[] b, byte c) {
    for (int i = b.length - 1; i >= 0; i--) {
      if (b[i] == c) {
        return i;
      }
    }
    return -1;
  }

  /**
   * The bucket of a deadline, seen from {@code now}.
   *
   * @param deadline the entry's deadline, {@link Long#MAX_VALUE} for never
   * @param now the caller's time
   * @return the bucket; {@link #FOREVER} for never or more than 100 years ahead
   */
  static Bucket bucketFor(long deadline, long now) {
    if (deadline == Long.MAX_VALUE) {
      return FOREVER;
    }
    long left;
    try {
      left = Math.subtractExact(deadline, now);
    } catch (ArithmeticException e) {
      return FOREVER;
    }
    if (left > MAX_EXPIRY_MILLIS) {
      return FOREVER;
    }
    long wanted = Math.max(1, left / BUCKETS_PER_WINDOW);
    int exponent = Math.max(MIN_EXPONENT, 64 - Long.numberOfLeadingZeros(wanted - 1));
    long width = 1L << exponent;
    long number = Math.floorDiv(deadline, width);
    long end;
    try {
      end = Math.multiplyExact(number + 1, width);
    } catch (ArithmeticException e) {
      return FOREVER;
    }
    if (end >= FOREVER_END || end - now > MAX_EXPIRY_MILLIS) {
      return FOREVER;
    }
    String member = Integer.toString(exponent, 36) + "." + Long.toString(number, 36);
    return new Bucket(
        member.getBytes(StandardCharsets.US_ASCII), decimal(end), decimal(Math.max(1, end - now)));
  }

  // --- calls ------------------------------------------------------------------------------------

  Call reserve(ReserveRequest r) {
    long now = r.nowMillis();
    long leaseUntil = r.leaseUntil();
    Fingerprint fingerprint = r.fingerprint();
    Ttl ttl = r.ttl();
    // Put the in-flight entry where its commit will go, if the window outlasts the lease.
    long placeBy = ttl.expires() ? Math.max(leaseUntil, ttl.expiresAt(now)) : leaseUntil;
    Bucket place = bucketFor(placeBy, now);
    byte[] refreshDeadline = EMPTY;
    Bucket refresh = new Bucket(EMPTY, EMPTY, EMPTY);
    byte[] refreshPx = EMPTY;
    if (ttl.expiry() == Expiry.SLIDING && ttl.expires()) {
      long refreshed = ttl.expiresAt(now);
      refreshDeadline = EntryFormat.longBytes(refreshed);
      refresh = bucketFor(refreshed, now);
      refreshPx = px(now, refreshed);
    }
    return new Call(
        CompactScripts.RESERVE,
        directory(r.scope(), r.key()),
        new byte[][] {
          r.key().toBytes(),
          decimal(now),
          resultKey(r.scope(), r.key()),
          place.member(),
          place.end(),
          CompactFormat.inFlight(r.token(), now, leaseUntil, fingerprint),
          place.member(),
          place.end(),
          place.px(),
          fingerprint == null ? EMPTY : fingerprint.toBytes(),
          refreshDeadline,
          refresh.member(),
          refresh.end(),
          refresh.px(),
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
    Bucket bucket = bucketFor(expiresAt, now);
    return new Call(
        CompactScripts.COMMIT,
        directory(c.scope(), c.key()),
        new byte[][] {
          c.key().toBytes(),
          decimal(now),
          resultKey(c.scope(), c.key()),
          bucket.member(),
          bucket.end(),
          EntryFormat.longBytes(c.token()),
          times,
          result == null ? ZERO : ONE,
          result == null ? EMPTY : result,
          bucket.member(),
          bucket.end(),
          bucket.px(),
          px(now, expiresAt)
        });
  }

  Call release(ReleaseRequest r) {
    return new Call(
        CompactScripts.RELEASE,
        directory(r.scope(), r.key()),
        new byte[][] {
          r.key().toBytes(),
          decimal(r.nowMillis()),
          resultKey(r.scope(), r.key()),
          EMPTY,
          EMPTY,
          EntryFormat.longBytes(r.token())
        });
  }

  Call extend(ExtendRequest e) {
    long now = e.nowMillis();
    long until = e.leaseUntil();
    Bucket bucket = bucketFor(until, now);
    return new Call(
        CompactScripts.EXTEND,
        directory(e.scope(), e.key()),
        new byte[][] {
          e.key().toBytes(),
          decimal(now),
          resultKey(e.scope(), e.key()),
          EMPTY,
          EMPTY,
          EntryFormat.longBytes(e.token()),
          EntryFormat.longBytes(until),
          bucket.member(),
          bucket.end(),
          bucket.px()
        });
  }

  Call inspect(Scope scope, DedupKey key, long now) {
    return new Call(
        CompactScripts.INSPECT,
        directory(scope, key),
        new byte[][] {key.toBytes(), decimal(now), resultKey(scope, key), EMPTY, EMPTY});
  }

  Call forget(Scope scope, DedupKey key, long now) {
    return new Call(
        CompactScripts.FORGET,
        directory(scope, key),
        new byte[][] {key.toBytes(), decimal(now), resultKey(scope, key), EMPTY, EMPTY});
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
