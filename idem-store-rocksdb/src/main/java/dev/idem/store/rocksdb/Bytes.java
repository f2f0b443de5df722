package dev.idem.store.rocksdb;

/** Big-endian fixed-width integers and unsigned LEB128 varints, for the on-disk encodings. */
final class Bytes {
  private Bytes() {}

  static void putLong(byte[] out, int offset, long v) {
    for (int i = 7; i >= 0; i--) {
      out[offset + i] = (byte) v;
      v >>>= 8;
    }
  }

  static long getLong(byte[] in, int offset) {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (in[offset + i] & 0xFF);
    }
    return v;
  }

  static void putInt(byte[] out, int offset, int v) {
    out[offset] = (byte) (v >>> 24);
    out[offset + 1] = (byte) (v >>> 16);
    out[offset + 2] = (byte) (v >>> 8);
    out[offset + 3] = (byte) v;
  }

  static int getInt(byte[] in, int offset) {
    return ((in[offset] & 0xFF) << 24)
        | ((in[offset + 1] & 0xFF) << 16)
        | ((in[offset + 2] & 0xFF) << 8)
        | (in[offset + 3] & 0xFF);
  }

  static int varLongSize(long v) {
    int size = 1;
    while ((v & ~0x7FL) != 0) {
      v >>>= 7;
      size++;
    }
    return size;
  }

  /** Writes {@code v} as an unsigned varint; returns the offset after it. */
  static int putVarLong(byte[] out, int offset, long v) {
    while ((v & ~0x7FL) != 0) {
      out[offset++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    out[offset++] = (byte) v;
    return offset;
  }

  /** The successor of a key in byte order: the key followed by a zero byte. */
  static byte[] successor(byte[] key) {
    byte[] out = new byte[key.length + 1];
    System.arraycopy(key, 0, out, 0, key.length);
    return out;
  }
}
