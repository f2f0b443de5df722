/** JMH benchmarks of Idem next to their anchors, measured in the same run. */
package dev.idem.benchmarks;
