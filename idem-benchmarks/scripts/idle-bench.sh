#!/usr/bin/env bash
# What an idle `idem serve` costs: CPU time and context switches per second of a service with the
# memory store and one webhook pipeline, no traffic (one event posted first), measured over WINDOW
# seconds after 5 s. Alternates the jars given (default: this checkout's), ROUNDS times.
#
#   idem-benchmarks/scripts/idle-bench.sh                                   # idem-server/target/idem.jar
#   idem-benchmarks/scripts/idle-bench.sh /tmp/idem-before.jar idem-server/target/idem.jar
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WINDOW="${WINDOW:-20}"; ROUNDS="${ROUNDS:-2}"; PORT="${PORT:-18111}"
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
[ $# -gt 0 ] || set -- "$root/idem-server/target/idem.jar"
dir="$(mktemp -d)"; trap 'rm -rf "$dir"' EXIT
cat > "$dir/idle.yaml" <<YAML
server: { host: 127.0.0.1, port: $PORT }
store: { type: memory }
pipelines:
  - id: orders
    source: { webhook: { path: /hooks/orders } }
    dedup: { key: id }
    deliver: { stdout: {} }
YAML
tck=$(getconf CLK_TCK)
cpu_ms() { awk -v t="$tck" '{print ($14+$15)*1000/t}' "/proc/$1/stat"; }
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/{a+=$2} END{print a+0}'; }
for r in $(seq 1 "$ROUNDS"); do
  for jar in "$@"; do
    "$java" -Xmx256m -jar "$jar" serve --config "$dir/idle.yaml" > /dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null && break; sleep 0.3; done
    curl -s -o /dev/null -X POST -d '{"id":"warm"}' "http://127.0.0.1:$PORT/hooks/orders"
    sleep 5
    c0=$(cpu_ms $pid); x0=$(switches $pid)
    sleep "$WINDOW"
    c1=$(cpu_ms $pid); x1=$(switches $pid)
    awk -v r="$r" -v j="$(basename "$jar")" -v c="$(echo "$c1 - $c0" | bc)" -v x=$((x1 - x0)) -v w="$WINDOW" \
      'BEGIN{printf "round %s %s: %.1f ms CPU per second, %d voluntary context switches per second\n", r, j, c/w, x/w}'
    kill $pid; wait $pid 2>/dev/null || true
  done
done
