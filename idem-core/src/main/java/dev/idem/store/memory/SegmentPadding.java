package dev.idem.store.memory;

/**
 * 64 bytes ahead of a {@link Segment}'s fields, which end with 64 more, so that no other object
 * shares a cache line with them. Every operation writes a segment's lock word and recency-list ends
 * and reads its table and page references; the collector may place segments (or anything else)
 * right next to each other, and then one core's writes to one stripe would evict another core's
 * copy of a neighbouring stripe's fields (false sharing), costing a cross-core miss on operations
 * that share nothing.
 */
abstract class SegmentPadding {
  @SuppressWarnings("unused")
  private long p0, p1, p2, p3, p4, p5, p6, p7;

  // Fills the 4 bytes after the object header, which a subclass field would otherwise take.
  @SuppressWarnings("unused")
  private int p8;
}
