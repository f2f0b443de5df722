/** Implementation details shared by Idem's modules; not API, may change without notice. */
@NullMarked
package dev.idem.internal;

import org.jspecify.annotations.NullMarked;
