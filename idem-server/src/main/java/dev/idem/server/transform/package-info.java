/** Event transforms: jq programs (jackson-jq) applied to the JSON body before delivery. */
@NullMarked
package dev.idem.server.transform;

import org.jspecify.annotations.NullMarked;
