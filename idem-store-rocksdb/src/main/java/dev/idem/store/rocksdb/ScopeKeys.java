package dev.idem.store.rocksdb;

import dev.idem.DedupKey;
import dev.idem.Scope;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * The byte keys of one scope (see {@code docs/stores/rocksdb.md}, "On-disk layout").
 *
 * <pre>
 * entry key  = prefix | digest(32)
 * index key  = prefix | deadline(8, big-endian, sign bit flipped) | digest(32)
 * prefix     = length(1) | ASCII of "pipeline/step"
 * </pre>
 *
 * <p>The length byte makes prefixes prefix-free, so every key of a scope lies in {@code [prefix,
 * upper)} and {@code clear(scope)} is one range delete per column family.
 */
final class ScopeKeys {
  static final int DIGEST_BYTES = 32;
  static final int DEADLINE_BYTES = 8;

  final Scope scope;
  final byte[] prefix;
  final byte[] upper;
  final int hash;

  ScopeKeys(Scope scope) {
    this.scope = scope;
    byte[] text = scope.toString().getBytes(StandardCharsets.US_ASCII);
    // Scope parts are 1-64 characters of [A-Za-z0-9_.-], so the text is at most 129 bytes.
    this.prefix = new byte[1 + text.length];
    prefix[0] = (byte) text.length;
    System.arraycopy(text, 0, prefix, 1, text.length);
    // Every byte of the text is below 0x7f, so incrementing the last byte cannot overflow.
    this.upper = Arrays.copyOf(prefix, prefix.length);
    upper[upper.length - 1]++;
    this.hash = Arrays.hashCode(prefix) * 0x9E3779B9;
  }

  /** Rebuilds the scope from the prefix at the start of a stored key, or null if malformed. */
  static @Nullable ScopeKeys fromStoredKey(byte[] storedKey) {
    int length = storedKey.length == 0 ? -1 : storedKey[0] & 0xFF;
    if (length <= 0 || storedKey.length < 1 + length) {
      return null;
    }
    try {
      return new ScopeKeys(
          Scope.parse(new String(storedKey, 1, length, StandardCharsets.US_ASCII)));
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** Whether {@code storedKey} starts with this scope's prefix. */
  boolean owns(byte[] storedKey) {
    return storedKey.length >= prefix.length
        && Arrays.equals(storedKey, 0, prefix.length, prefix, 0, prefix.length);
  }

  byte[] entryKey(DedupKey key) {
    byte[] out = Arrays.copyOf(prefix, prefix.length + DIGEST_BYTES);
    putDigest(out, prefix.length, key);
    return out;
  }

  byte[] indexKey(long deadlineMillis, DedupKey key) {
    byte[] out = Arrays.copyOf(prefix, prefix.length + DEADLINE_BYTES + DIGEST_BYTES);
    Bytes.putLong(out, prefix.length, deadlineMillis ^ Long.MIN_VALUE);
    putDigest(out, prefix.length + DEADLINE_BYTES, key);
    return out;
  }

  /** The smallest index key of this scope with a deadline of at least {@code deadlineMillis}. */
  byte[] indexFloor(long deadlineMillis) {
    byte[] out = Arrays.copyOf(prefix, prefix.length + DEADLINE_BYTES);
    Bytes.putLong(out, prefix.length, deadlineMillis ^ Long.MIN_VALUE);
    return out;
  }

  /** The deadline of an index key of this scope. */
  long indexDeadline(byte[] indexKey) {
    return Bytes.getLong(indexKey, prefix.length) ^ Long.MIN_VALUE;
  }

  /** The dedup key of an index key of this scope. */
  DedupKey indexDigest(byte[] indexKey) {
    return digestAt(indexKey, prefix.length + DEADLINE_BYTES);
  }

  /** The dedup key of an entry key of this scope. */
  DedupKey entryDigest(byte[] entryKey) {
    return digestAt(entryKey, prefix.length);
  }

  boolean isIndexKey(byte[] storedKey) {
    return storedKey.length == prefix.length + DEADLINE_BYTES + DIGEST_BYTES;
  }

  boolean isEntryKey(byte[] storedKey) {
    return storedKey.length == prefix.length + DIGEST_BYTES;
  }

  private static DedupKey digestAt(byte[] bytes, int offset) {
    return DedupKey.ofWords(
        Bytes.getLong(bytes, offset),
        Bytes.getLong(bytes, offset + 8),
        Bytes.getLong(bytes, offset + 16),
        Bytes.getLong(bytes, offset + 24));
  }

  private static void putDigest(byte[] out, int offset, DedupKey key) {
    Bytes.putLong(out, offset, key.word(0));
    Bytes.putLong(out, offset + 8, key.word(1));
    Bytes.putLong(out, offset + 16, key.word(2));
    Bytes.putLong(out, offset + 24, key.word(3));
  }
}
