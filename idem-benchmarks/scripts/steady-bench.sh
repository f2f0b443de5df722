#!/usr/bin/env bash
# The service on RocksDB under steady load for minutes, on one store: the rate of each window of
# WINDOW seconds, so a slowdown that comes only with time (a first large compaction, WAL files
# being recycled, a growing key count) shows. service-bench.sh starts a fresh store for every 15 s
# run and never gets there. The load is service-bench.sh's (wrk, 50% duplicates, sync delivery to a
# JSON-lines file, group commit).
#
#   idem-benchmarks/scripts/steady-bench.sh                       # 16 windows of 15 s (4 minutes)
#   WINDOWS=20 idem-benchmarks/scripts/steady-bench.sh
#   IDEM_JAR=/tmp/idem-before.jar idem-benchmarks/scripts/steady-bench.sh   # another build
#
# At the end it prints the figure to compare between builds: the mean rate of the last quarter of
# the windows over the mean rate of windows 2-5 (window 1 is the JIT's warm-up) in the same run.
# A store whose rate holds is near 1.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
WINDOWS="${WINDOWS:-16}"
WINDOW="${WINDOW:-15s}"
THREADS="${THREADS:-2}"
CONNECTIONS="${CONNECTIONS:-32}"
JVM_OPTS="${JVM_OPTS:--Xms512m -Xmx1g -XX:+UseParallelGC}"
PORT="${PORT:-18092}"
jar="${IDEM_JAR:-$root/idem-server/target/idem.jar}"
lua="$root/idem-benchmarks/scripts/service-dup50.lua"

command -v wrk >/dev/null || { echo "steady-bench: wrk is missing; apt-get install -y wrk" >&2; exit 2; }
[ "$WINDOWS" -ge 8 ] || { echo "steady-bench: WINDOWS must be at least 8" >&2; exit 2; }
if [ ! -f "$jar" ]; then
  ./mvnw -B -q -pl idem-server -am package -DskipTests
fi

work="$(mktemp -d /tmp/idem-steady-bench.XXXXXX)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/rocksdb.yaml" <<YAML
server: { host: 127.0.0.1, port: $PORT }
store: { type: rocksdb, path: $work/data, durability: group-commit }
pipelines:
  - id: bench
    source: { webhook: { path: /hooks/bench } }
    dedup: { key: source.id, window: 1h }
    deliver: { mode: sync, file: { path: $work/delivered.jsonl } }
YAML

IDEM_JAR="$jar" JAVA_OPTS="$JVM_OPTS" IDEM_LOG_LEVEL=warn "$root/bin/idem" serve \
  --config "$work/rocksdb.yaml" >/dev/null 2>"$work/serve.log" &
pid=$!
up=0
for _ in $(seq 1 100); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health" || true)" != "000" ]; then
    up=1; break
  fi
  sleep 0.2
done
[ "$up" = 1 ] || { echo "steady-bench: the service did not come up; its log:" >&2; cat "$work/serve.log" >&2; exit 1; }

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

echo "# steady benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ); jar $jar"
echo "# java: $("${JAVA_HOME:+$JAVA_HOME/bin/}java" -version 2>&1 | head -1); wrk -t$THREADS -c$CONNECTIONS, windows of $WINDOW; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %8s %8s %8s %11s %8s\n' window rps p50_ms p99_ms cpu_us/req store_mb
for w in $(seq 1 "$WINDOWS"); do
  ticks="$(cpu_ticks "$pid")"
  r="$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$WINDOW" --timeout 5s -s "$lua" \
    "http://127.0.0.1:$PORT/hooks/bench" -- "steady$w" 0 | grep '^RESULT')"
  ticks="$(( $(cpu_ticks "$pid") - ticks ))"
  n="$(field requests "$r")"
  printf '%-6s %8s %8.2f %8.2f %11s %8s\n' "$w" "$(field rps "$r")" \
    "$(bc -l <<<"$(field p50_us "$r")/1000")" "$(bc -l <<<"$(field p99_us "$r")/1000")" \
    "$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN { printf "%.1f", (n > 0 ? t / hz * 1e6 / n : 0) }')" \
    "$(du -sm "$work/data" | cut -f1)"
  echo "$w $(field rps "$r")" >> "$work/rows"
done
awk -v n="$WINDOWS" '
  { r[$1] = $2 }
  END {
    for (i = 2; i <= 5; i++) early += r[i]
    from = n - int(n / 4) + 1
    for (i = from; i <= n; i++) { late += r[i]; k++ }
    printf "# late / early: windows %d-%d over 2-5: %.2f\n", from, n, (late / k) / (early / 4)
  }' "$work/rows"
