/** The {@code idem} command line: serve, check-config, key, inspect, forget. */
@NullMarked
package dev.idem.server.cli;

import org.jspecify.annotations.NullMarked;
