#!/usr/bin/env bash
# Runs every benchmark behind docs/BENCHMARKS.md, in order, printing the load average before each
# and the JVM once. Run it on a machine with nothing else going on, twice, and compare the runs:
#
#   ./mvnw -B -q package -DskipTests && idem-benchmarks/scripts/run-all.sh 2>&1 | tee run1.txt
#
# Each step is also usable alone; the commands it prints are the ones to reproduce a figure.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
jar=idem-benchmarks/target/benchmarks.jar
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
[ -f "$jar" ] && [ -f idem-server/target/idem.jar ] || ./mvnw -B -q package -DskipTests

step() {
  echo
  echo "=== $(date -u +%FT%TZ) loadavg $(cut -d' ' -f1-3 /proc/loadavg) :: $*"
  "$@"
}

"$java" -version 2>&1 | head -1
# Issue 2: memory store next to Camel, and default-key derivation next to raw SHA-256, one JMH run
# per thread count.
for t in 1 2; do
  step "$java" -jar "$jar" 'MemoryStoreBenchmark|KeyDerivationBenchmark' -f 1 -wi 5 -w 1 -i 5 -r 1 -t "$t"
done
# The same Idem vs Camel comparison in alternating 500 ms slots (the machine's speed swings within
# seconds, so the ratio of two JMH methods run a minute apart is unreliable here).
for t in 1 2; do
  for keys in 10000 1000; do
    step "$java" -cp "$jar" dev.idem.benchmarks.MemoryStoreAlternating "$t" "$keys" 30 500
  done
done
step "$java" -cp "$jar" dev.idem.benchmarks.RetainedBytesPerKey
# Issue 3: RocksDB per durability setting next to a raw RocksDB put with the same sync setting.
for t in 1 16; do
  step "$java" -jar "$jar" RocksDbStoreBenchmark -t "$t"
done
step "$java" -cp "$jar" dev.idem.benchmarks.RocksDbDiskUsage 1000000 ttl
step idem-benchmarks/scripts/redis-bench.sh
step idem-benchmarks/scripts/pg-bench.sh
# Issue 4: the service with the memory store and with RocksDB next to a bare Jetty endpoint.
step idem-benchmarks/scripts/service-bench.sh
# Issue 12: the service on RocksDB for four minutes on one store (a slowdown that comes with time).
step idem-benchmarks/scripts/steady-bench.sh
# Issue 13: a Camel route with IdemIdempotentRepository next to the same route with Camel's
# MemoryIdempotentRepository, and @Idempotent's cost per call next to the bare method.
for t in 1 2; do
  step "$java" -jar "$jar" 'CamelRouteBenchmark|IdempotentAnnotationBenchmark' -t "$t"
done
