/**
 * The service's YAML configuration: the file is read into a tree that remembers where each field
 * was written, bound to mutable properties classes ({@link dev.idem.server.config.IdemProperties}),
 * and converted in one place ({@link dev.idem.server.config.ConfigConverter}) into immutable,
 * validated settings ({@link dev.idem.server.config.IdemConfig}). Every error names the file, line,
 * column and field and says what is allowed.
 */
@NullMarked
package dev.idem.server.config;

import org.jspecify.annotations.NullMarked;
