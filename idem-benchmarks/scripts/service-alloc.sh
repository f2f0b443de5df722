#!/usr/bin/env bash
# Bytes allocated per request by the service (memory store) and by the bare Jetty anchor, from JFR,
# under the service benchmark's wrk load (service-dup50.lua: 50% duplicates). Unlike requests/s this
# figure barely depends on the machine's load. For each target: start it, warm up WARMUP, record
# JFR (settings=profile) over a wrk run of DURATION, then print
#   bytes/request = (sum over threads of jdk.ThreadAllocationStatistics at the end - at the start)
#                   / requests wrk completed,
# the top allocation sites (jdk.ObjectAllocationSample weight by top frames) and the top CPU frames
# (jdk.ExecutionSample). The recordings are kept in KEEP (default: a temp dir that is removed).
#
#   idem-benchmarks/scripts/service-alloc.sh                  # TARGETS="bare memory"
#   TARGETS=memory DURATION=20s KEEP=/tmp/jfr idem-benchmarks/scripts/service-alloc.sh
#   IDEM_JAR=/tmp/idem-before.jar TARGETS=memory idem-benchmarks/scripts/service-alloc.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
DURATION="${DURATION:-20s}"
WARMUP="${WARMUP:-20s}"
THREADS="${THREADS:-2}"
CONNECTIONS="${CONNECTIONS:-32}"
TARGETS="${TARGETS:-bare memory}"
TOP="${TOP:-25}"
JVM_OPTS="${JVM_OPTS:--Xms512m -Xmx1g -XX:+UseParallelGC}"
PORT_BARE="${PORT_BARE:-18090}"
PORT_IDEM="${PORT_IDEM:-18091}"
lua="$root/idem-benchmarks/scripts/service-dup50.lua"

command -v wrk >/dev/null || { echo "service-alloc: wrk is missing; apt-get install -y wrk" >&2; exit 2; }
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
jcmd="${JAVA_HOME:+$JAVA_HOME/bin/}jcmd"
jfr="${JAVA_HOME:+$JAVA_HOME/bin/}jfr"
jar="${IDEM_JAR:-$root/idem-server/target/idem.jar}"   # IDEM_JAR: profile another build (e.g. a "before")
export IDEM_JAR="$jar"
if [ ! -f "$jar" ] || [ ! -d "$root/idem-benchmarks/target/classes/dev/idem/benchmarks" ] || [ "${REBUILD:-0}" = 1 ]; then
  ./mvnw -B -q -pl idem-server,idem-benchmarks -am package -DskipTests
fi

work="$(mktemp -d /tmp/idem-service-alloc.XXXXXX)"
keep="${KEEP:-}"
[ -n "$keep" ] && mkdir -p "$keep"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/memory.yaml" <<YAML
server: { host: 127.0.0.1, port: $PORT_IDEM }
store: { type: memory, max_keys: 1000000 }
pipelines:
  - id: bench
    source: { webhook: { path: /hooks/bench } }
    dedup: { key: source.id, window: 1h }
    deliver: { mode: sync, file: { path: $work/delivered.jsonl } }
YAML

wait_up() {
  for _ in $(seq 1 150); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$1" || true)" != "000" ]; then return 0; fi
    sleep 0.2
  done
  echo "service-alloc: $1 did not come up" >&2; exit 1
}

echo "# service allocation profile $(date -u +%Y-%m-%dT%H:%M:%SZ); git $(git rev-parse --short HEAD 2>/dev/null || echo '?'); jar $jar"
echo "# java: $("$java" -version 2>&1 | head -1); wrk -t$THREADS -c$CONNECTIONS -d$DURATION after $WARMUP warmup; JVM_OPTS=$JVM_OPTS"
for target in $TARGETS; do
  load="$(cut -d' ' -f1-3 /proc/loadavg)"
  case "$target" in
    bare)
      "$java" $JVM_OPTS -cp "$jar:$root/idem-benchmarks/target/classes" \
        dev.idem.benchmarks.ServiceBareEndpoint "$PORT_BARE" 2>"$work/bare.log" &
      pid=$!; url="http://127.0.0.1:$PORT_BARE/hooks/bench"; wait_up "$url" ;;
    memory)
      JAVA_OPTS="$JVM_OPTS" IDEM_LOG_LEVEL=warn "$root/bin/idem" serve --config "$work/memory.yaml" \
        >/dev/null 2>"$work/memory.log" &
      pid=$!; url="http://127.0.0.1:$PORT_IDEM/hooks/bench"; wait_up "http://127.0.0.1:$PORT_IDEM/health" ;;
    *) echo "service-alloc: unknown target $target (bare or memory)" >&2; exit 2 ;;
  esac
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"$WARMUP" --timeout 5s -s "$lua" "$url" -- "warm$target" 0 >/dev/null
  # bin/idem execs java, so $pid is the JVM.
  "$jcmd" "$pid" JFR.start name=alloc settings=profile >/dev/null
  result="$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --timeout 5s -s "$lua" "$url" -- "max$target" 0 | grep '^RESULT')"
  rec="$work/$target.jfr"
  "$jcmd" "$pid" JFR.stop name=alloc filename="$rec" >/dev/null
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""
  [ -n "$keep" ] && cp "$rec" "$keep/"
  requests="$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' <<<"$result")"
  echo
  echo "## $target  (load before: $load)  $result"
  "$jfr" print --json --events jdk.ThreadAllocationStatistics "$rec" >"$work/threads.json"
  "$jfr" print --json --stack-depth 24 --events jdk.ObjectAllocationSample "$rec" >"$work/alloc.json"
  "$jfr" print --json --stack-depth 8 --events jdk.ExecutionSample "$rec" >"$work/cpu.json"
  python3 "$root/idem-benchmarks/scripts/jfr_alloc_summary.py" "$requests" "$TOP" \
    "$work/threads.json" "$work/alloc.json" "$work/cpu.json"
done
