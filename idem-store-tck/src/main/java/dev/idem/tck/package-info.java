/**
 * The store contract suite: the abstract JUnit class every {@link dev.idem.spi.DedupStore} extends,
 * and helpers for tests that need a real server.
 */
@NullMarked
package dev.idem.tck;

import org.jspecify.annotations.NullMarked;
