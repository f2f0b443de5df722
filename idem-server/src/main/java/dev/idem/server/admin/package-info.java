/**
 * The operator's tools behind the admin token: explaining what a pipeline would do with an event,
 * and the web console's static files.
 */
@NullMarked
package dev.idem.server.admin;

import org.jspecify.annotations.NullMarked;
