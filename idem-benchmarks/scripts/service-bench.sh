#!/usr/bin/env bash
# The service benchmark: `idem serve` with the memory store and with RocksDB (group commit), and a
# bare Jetty 12 endpoint on the same server library (the anchor), each driven over loopback by wrk
# with 50% duplicate events. Alternates bare / memory / rocksdb, ROUNDS times, and for each prints
# the maximum requests/s with p50/p99 latency, then p50/p99 at half that rate (paced connections).
#
#   idem-benchmarks/scripts/service-bench.sh            # defaults below; needs wrk (apt-get install wrk)
#   DURATION=30s CONNECTIONS=64 ROUNDS=2 idem-benchmarks/scripts/service-bench.sh
#   TARGETS="bare memory" idem-benchmarks/scripts/service-bench.sh   # skip RocksDB
#   PERF=1 HALF=0 idem-benchmarks/scripts/service-bench.sh   # + system calls and context switches per request
#   IDEM_JAR_B=/tmp/idem-before.jar TARGETS="bare memory memory-b rocksdb rocksdb-b" \
#     idem-benchmarks/scripts/service-bench.sh   # before/after in the same run: *-b use IDEM_JAR_B
#
# At the end it prints each target's req/s over bare's in the same round, and their median.
#
# Each row also has line_ns: what moving one cache line between the two cores cost just before and
# just after that target's runs (CacheLineTransfer, nanoseconds per hand-off). On a VM it can jump
# by several times when the hypervisor moves a vCPU (30 vs 170+ ns on the EPYC VM of 2026-12-04),
# and every request whose work crosses threads pays it; compare rows of the same regime.
#
# Besides req/s, each row has the JVM's CPU time per request during the full-load run
# (user + system from /proc/PID/stat, divided by the requests wrk completed), which depends far
# less on the machine's load than req/s does.
#
# Idem's pipeline: key source.id, sliding 1h window, sync delivery to a JSON-lines file in a temp
# directory (no network hop downstream: the figure is ingress + JSON check + key + dedup + delivery
# to a local file + settle). The first WARMUP seconds after each start are not measured (JIT).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
DURATION="${DURATION:-20s}"
WARMUP="${WARMUP:-15s}"
THREADS="${THREADS:-2}"
CONNECTIONS="${CONNECTIONS:-32}"
ROUNDS="${ROUNDS:-2}"
PERF="${PERF:-0}"   # 1: also count the server's system calls and context switches per request (perf stat)
HALF="${HALF:-1}"   # 0: skip the half-rate latency runs (req/s and CPU per request only)
RATE="${RATE:-}"    # req/s: pace the second run of every target at this rate instead of half its maximum
TARGETS="${TARGETS:-bare memory rocksdb}"   # e.g. TARGETS="bare memory" for the memory store only
JVM_OPTS="${JVM_OPTS:--Xms512m -Xmx1g -XX:+UseParallelGC}"
PORT_BARE="${PORT_BARE:-18090}"
PORT_IDEM="${PORT_IDEM:-18091}"
lua="$root/idem-benchmarks/scripts/service-dup50.lua"

command -v wrk >/dev/null || { echo "service-bench: wrk is missing; apt-get install -y wrk" >&2; exit 2; }
java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
jar="$root/idem-server/target/idem.jar"
jar_b="${IDEM_JAR_B:-}"   # the jar of the *-b targets (e.g. a build of main kept in /tmp)
if [ ! -f "$jar" ] || [ ! -d "$root/idem-benchmarks/target/classes/dev/idem/benchmarks" ] || [ "${REBUILD:-0}" = 1 ]; then
  ./mvnw -B -q -pl idem-server,idem-benchmarks -am package -DskipTests
fi

work="$(mktemp -d /tmp/idem-service-bench.XXXXXX)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

config() { # $1 = store block, $2 = name of the delivered-events file
  cat <<YAML
server: { host: 127.0.0.1, port: $PORT_IDEM }
store: $1
pipelines:
  - id: bench
    source: { webhook: { path: /hooks/bench } }
    dedup: { key: source.id, window: 1h }
    deliver: { mode: sync, file: { path: $work/delivered-$2.jsonl } }
YAML
}
config "{ type: memory, max_keys: 1000000 }" memory > "$work/memory.yaml"

wait_up() { # $1 = url
  for _ in $(seq 1 100); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$1" || true)" != "000" ]; then return 0; fi
    sleep 0.2
  done
  echo "service-bench: $1 did not come up" >&2; exit 1
}

start() { # $1 = target
  case "$1" in
    bare)
      "$java" $JVM_OPTS -cp "$jar:$root/idem-benchmarks/target/classes" \
        dev.idem.benchmarks.ServiceBareEndpoint "$PORT_BARE" 2>"$work/bare.log" &
      pid=$!; url="http://127.0.0.1:$PORT_BARE/hooks/bench"; wait_up "$url" ;;
    memory|rocksdb|memory-b|rocksdb-b)
      local store="${1%-b}" use="$jar"
      if [ "$store" != "$1" ]; then
        [ -n "$jar_b" ] || { echo "service-bench: $1 needs IDEM_JAR_B" >&2; exit 2; }
        use="$jar_b"
      fi
      rm -f "$work/delivered-$store.jsonl"
      if [ "$store" = rocksdb ]; then
        rm -rf "$work/data"
        config "{ type: rocksdb, path: $work/data, durability: group-commit }" rocksdb > "$work/rocksdb.yaml"
      fi
      IDEM_JAR="$use" JAVA_OPTS="$JVM_OPTS" IDEM_LOG_LEVEL=warn "$root/bin/idem" serve \
        --config "$work/$store.yaml" >/dev/null 2>"$work/$1.log" &
      pid=$!; url="http://127.0.0.1:$PORT_IDEM/hooks/bench"; wait_up "http://127.0.0.1:$PORT_IDEM/health" ;;
  esac
}

stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
}

run_wrk() { # $1 = url, $2 = prefix, $3 = duration, $4 = delay ms (CONNECTIONS may be overridden)
  local c="${CONNECTIONS}"
  [ "$c" -lt "$THREADS" ] && c="$THREADS"
  wrk -t"$THREADS" -c"$c" -d"$3" --timeout 5s -s "$lua" "$1" -- "$2" "$4" | grep '^RESULT'
}

line_ns() { # nanoseconds per cache-line hand-off between two threads, median of 3 short rounds
  "$java" -cp "$root/idem-benchmarks/target/classes" dev.idem.benchmarks.CacheLineTransfer 3 200000 \
    | sed -n 's/.*median \([0-9.]*\).*/\1/p'
}

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }

cpu_ticks() { # user + system clock ticks of process $1 (bin/idem execs java, so $pid is the JVM)
  awk '{ print $14 + $15 }' "/proc/$1/stat"
}

echo "# service benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "# java: $("$java" -version 2>&1 | head -1); wrk -t$THREADS -c$CONNECTIONS -d$DURATION; JVM_OPTS=$JVM_OPTS"
echo "# cores: $(nproc)"
printf '%-5s %-9s %10s %8s %8s %7s %11s | %9s %8s %8s %7s %11s | %-9s | %s\n' \
  round target max_rps p50_ms p99_ms non2xx cpu_us/req half_rps p50_ms p99_ms non2xx cpu_us/req \
  line_ns loadavg_before
for round in $(seq 1 "$ROUNDS"); do
  for target in $TARGETS; do
    load="$(cut -d' ' -f1-3 /proc/loadavg)"
    line_before="$(line_ns)"
    start "$target"
    run_wrk "$url" "warm$round$target" "$WARMUP" 0 >/dev/null
    ticks="$(cpu_ticks "$pid")"
    perf_pid=""
    if [ "$PERF" = 1 ]; then
      perf stat -x, -e raw_syscalls:sys_enter,context-switches -p "$pid" -o "$work/perf.txt" 2>/dev/null &
      perf_pid=$!
    fi
    max="$(run_wrk "$url" "max$round$target" "$DURATION" 0)"
    ticks="$(( $(cpu_ticks "$pid") - ticks ))"
    if [ -n "$perf_pid" ]; then
      kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" 2>/dev/null || true
      counts="$(awk -F, -v n="$(field requests "$max")" '
        $3 == "raw_syscalls:sys_enter" { s = $1 } $3 == "context-switches" { c = $1 }
        END { printf "syscalls/req=%.2f ctxsw/req=%.2f", s / n, c / n }' "$work/perf.txt")"
      echo "# counts $round $target: $counts (perf stat on the server's JVM during the full-load run)"
    fi
    rps="$(field rps "$max")"
    cpu="$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$(field requests "$max")" \
      'BEGIN { printf "%.1f", (n > 0 ? t / hz * 1e6 / n : 0) }')"
    # Half the maximum rate, paced: HALF_CONNECTIONS connections each send one request every
    # 8 ms (wrk's delay() has whole-millisecond resolution, so the period must be several ms).
    half_c="$(awk -v r="${RATE:-$rps}" -v f="${RATE:+1}" \
      'BEGIN { c = int(r / (f ? 1 : 2) * 8 / 1000 + 0.5); printf "%d", (c < 1 ? 1 : c) }')"
    pace="$(awk -v p="$(field p50_us "$max")" 'BEGIN { d = 8 - p / 1000; printf "%d", (d < 1 ? 1 : d + 0.5) }')"
    half="RESULT rps=0 p50_us=0 p99_us=0 non2xx=0"
    half_cpu="-"
    if [ "$HALF" != 0 ]; then
      ticks="$(cpu_ticks "$pid")"
      half="$(CONNECTIONS="$half_c" run_wrk "$url" "half$round$target" "$DURATION" "$pace")"
      ticks="$(( $(cpu_ticks "$pid") - ticks ))"
      half_cpu="$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$(field requests "$half")" \
        'BEGIN { printf "%.1f", (n > 0 ? t / hz * 1e6 / n : 0) }')"
    fi
    stop
    lines="$line_before/$(line_ns)"
    printf '%-5s %-9s %10s %8.2f %8.2f %7s %11s | %9s %8.2f %8.2f %7s %11s | %-9s | %s\n' "$round" "$target" \
      "$rps" "$(bc -l <<<"$(field p50_us "$max")/1000")" "$(bc -l <<<"$(field p99_us "$max")/1000")" \
      "$(field non2xx "$max")" "$cpu" "$(field rps "$half")" "$(bc -l <<<"$(field p50_us "$half")/1000")" \
      "$(bc -l <<<"$(field p99_us "$half")/1000")" "$(field non2xx "$half")" "$half_cpu" "$lines" "$load"
    echo "$round $target $rps" >> "$work/rows"
  done
done

# Each target's requests/s over bare's in the same round (bare must come before it in TARGETS),
# round by round, and their median: the figure to compare, as single rounds scatter on a shared VM.
awk '$2 == "bare" { b[$1] = $3 } $2 != "bare" && b[$1] > 0 { printf "%s %.2f\n", $2, $3 / b[$1] }' \
  "$work/rows" > "$work/ratios"
for t in $(awk '{ print $1 }' "$work/ratios" | sort -u); do
  rounds="$(awk -v t="$t" '$1 == t { printf "%s ", $2 }' "$work/ratios")"
  median="$(awk -v t="$t" '$1 == t { print $2 }' "$work/ratios" | sort -n | awk '{ v[NR] = $1 }
    END { printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')"
  printf '# %s / bare by round: %s(median %s)\n' "$t" "$rounds" "$median"
done
