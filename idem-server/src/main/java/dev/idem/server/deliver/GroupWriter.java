package dev.idem.server.deliver;

import java.io.IOException;
import org.jspecify.annotations.Nullable;

/**
 * Writes records (whole lines) to an {@link Output} in groups, the way a database commits a group:
 * a caller appends its record to the open group and waits; the first caller that finds no write
 * running takes the open group and writes it with one call (one {@code write(2)}, and one flush to
 * disk when the output forces), while later callers fill the next group. Each caller returns only
 * after the group holding its record was written, and learns that write's error if it failed.
 *
 * <p>Under concurrent load this turns one system call (and, with {@code fsync}, one disk flush) per
 * record into one per group, and a lock held across each system call into a lock held for a copy. A
 * lone caller writes its own record at once, as before. Records are written whole and in the order
 * they were appended; a group's records never interleave with another group's.
 *
 * <p>The wait is not interruptible: once a record is appended it is written by whoever leads its
 * group, so a caller cannot take it back; an interrupt is kept and set again on return.
 */
final class GroupWriter {
  /** Where groups go. Called by one leader at a time, never concurrently. */
  interface Output {
    /**
     * Writes the first {@code length} bytes of {@code bytes} whole (and forces them to disk if the
     * output promises that) before returning.
     */
    void write(byte[] bytes, int length) throws IOException;

    /** Releases the output; called once, after the last group was written. */
    void close() throws IOException;
  }

  /** What a caller learns of its record's group. */
  private static final class Group {
    boolean written; // guarded by lock
    @Nullable IOException failure; // guarded by lock; null when the write succeeded
  }

  private static final int INITIAL_BUFFER = 16 * 1024;

  /** A buffer that grew past this (one burst of big records) is dropped after its write. */
  private static final int KEPT_BUFFER = 1024 * 1024;

  private final Output output;
  private final Object lock = new Object();
  private byte[] filling = new byte[INITIAL_BUFFER]; // guarded by lock: the open group's bytes
  private int filled; // guarded by lock
  private byte[] spare = new byte[INITIAL_BUFFER]; // guarded by lock; null while a write uses it
  private Group open = new Group(); // guarded by lock
  private boolean writing; // guarded by lock: a leader is writing a group
  private boolean closed; // guarded by lock

  GroupWriter(Output output) {
    this.output = output;
  }

  /**
   * Appends {@code record} and returns once its group was written.
   *
   * @return false, writing nothing, when the writer is closed
   * @throws IOException what the write of the record's group threw (a new exception, the cause
   *     being the one the group's writer saw)
   */
  boolean write(byte[] record) throws IOException {
    Group mine;
    boolean interrupted = false;
    try {
      synchronized (lock) {
        if (closed) {
          return false;
        }
        append(record);
        mine = open;
      }
      while (true) {
        byte[] bytes;
        int length;
        Group group;
        synchronized (lock) {
          while (!mine.written && writing) {
            try {
              lock.wait();
            } catch (InterruptedException e) {
              interrupted = true;
            }
          }
          if (mine.written) {
            break;
          }
          // Nobody writes and the open group holds this record: lead it.
          writing = true;
          group = open;
          bytes = filling;
          length = filled;
          open = new Group();
          filling = spare != null ? spare : new byte[INITIAL_BUFFER];
          spare = null;
          filled = 0;
        }
        lead(group, bytes, length);
      }
      synchronized (lock) {
        if (mine.failure != null) {
          throw new IOException(mine.failure.getMessage(), mine.failure);
        }
      }
      return true;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void lead(Group group, byte[] bytes, int length) {
    // Until the write returns, the group counts as failed: an Error thrown out of it must not let
    // the group's callers believe their records were written. The exception for that case is made
    // only then: made up front, its 40-frame stack trace cost about 330 B and 2% of the service's
    // CPU per group.
    boolean completed = false;
    @Nullable IOException failure = null;
    try {
      output.write(bytes, length);
      completed = true;
    } catch (IOException e) {
      failure = e;
    } catch (RuntimeException e) {
      failure = new IOException(e.toString(), e);
    } finally {
      if (!completed && failure == null) {
        failure = new IOException("the write of this group did not complete");
      }
      synchronized (lock) {
        group.written = true;
        group.failure = failure;
        if (bytes.length <= KEPT_BUFFER) {
          spare = bytes;
        }
        writing = false;
        // The group's callers return; one caller of the open group (if any) leads it next.
        lock.notifyAll();
      }
    }
  }

  /** Copies the record into the open group's buffer, growing it. Under the lock. */
  private void append(byte[] record) {
    int needed = filled + record.length;
    if (needed > filling.length) {
      byte[] bigger = new byte[Math.max(needed, filling.length * 2)];
      System.arraycopy(filling, 0, bigger, 0, filled);
      filling = bigger;
    }
    System.arraycopy(record, 0, filling, filled, record.length);
    filled = needed;
  }

  /** Bytes appended to the open group and not yet taken by a write (for tests). */
  int pendingBytes() {
    synchronized (lock) {
      return filled;
    }
  }

  /**
   * Refuses new records, waits until every record appended before is written, then closes the
   * output. Later calls do nothing.
   */
  void close() throws IOException {
    boolean interrupted = false;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      // Records appended before now are led by their own callers; wait for them.
      while (writing || filled > 0) {
        try {
          lock.wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    }
    try {
      output.close();
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
