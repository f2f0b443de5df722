package dev.idem.kafka.state;

import dev.idem.DedupKey;
import dev.idem.Fingerprint;
import dev.idem.Scope;
import dev.idem.StoreException;
import dev.idem.spi.StoredEntry;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * The bytes of a changelog record, which are also the bytes of the local RocksDB entry: the key is
 * the scope and the dedup key, the value one {@link StoredEntry} (a deleted entry is a tombstone).
 *
 * <pre>
 * key   = u16 scopeLength, scope as UTF-8 ("pipeline/step"), 32 bytes dedup key
 * value = u8 version (1), u8 state (0 in flight, 1 committed), i64 token, i64 since,
 *         i64 deadline, u8 fingerprint present, [32 bytes], i32 result length (-1: none), [bytes]
 * </pre>
 */
final class ChangelogCodec {
  private static final byte VERSION = 1;

  private ChangelogCodec() {}

  static byte[] scopePrefix(Scope scope) {
    byte[] s = scope.toString().getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(2 + s.length);
    b.putShort((short) s.length).put(s);
    return b.array();
  }

  static byte[] key(Scope scope, DedupKey key) {
    byte[] prefix = scopePrefix(scope);
    return ByteBuffer.allocate(prefix.length + 32).put(prefix).put(key.toBytes()).array();
  }

  static byte[] value(StoredEntry e) {
    byte[] fp = e.fingerprint() == null ? null : e.fingerprint().toBytes();
    byte[] result = e.result();
    int size = 2 + 24 + 1 + (fp == null ? 0 : fp.length) + 4 + (result == null ? 0 : result.length);
    ByteBuffer b = ByteBuffer.allocate(size);
    b.put(VERSION);
    b.put((byte) (e.state() == StoredEntry.State.IN_FLIGHT ? 0 : 1));
    b.putLong(e.token()).putLong(e.sinceMillis()).putLong(e.deadlineMillis());
    if (fp == null) {
      b.put((byte) 0);
    } else {
      b.put((byte) 1).put(fp);
    }
    if (result == null) {
      b.putInt(-1);
    } else {
      b.putInt(result.length).put(result);
    }
    return b.array();
  }

  static @Nullable StoredEntry entry(byte @Nullable [] value) {
    if (value == null) {
      return null;
    }
    try {
      ByteBuffer b = ByteBuffer.wrap(value);
      byte version = b.get();
      if (version != VERSION) {
        throw new StoreException(
            "changelog entry of version "
                + version
                + "; this Idem reads version "
                + VERSION
                + ": upgrade Idem on every consumer of the group");
      }
      StoredEntry.State state =
          b.get() == 0 ? StoredEntry.State.IN_FLIGHT : StoredEntry.State.COMMITTED;
      long token = b.getLong();
      long since = b.getLong();
      long deadline = b.getLong();
      Fingerprint fp = null;
      if (b.get() == 1) {
        byte[] d = new byte[32];
        b.get(d);
        fp = Fingerprint.ofDigest(d);
      }
      int n = b.getInt();
      byte[] result = null;
      if (n >= 0) {
        result = new byte[n];
        b.get(result);
      }
      return new StoredEntry(state, token, since, deadline, fp, result);
    } catch (RuntimeException e) {
      if (e instanceof StoreException se) {
        throw se;
      }
      throw new StoreException("unreadable changelog entry (" + value.length + " bytes)", e);
    }
  }
}
