#!/usr/bin/env bash
# Idem's Redis store against redis-benchmark, on a private redis-server (free loopback port, never
# the shared 6379), alternating anchor and Idem (A B A B) at each concurrency. Prints a table.
#
#   idem-benchmarks/scripts/redis-bench.sh            # full run (about 6 minutes)
#   SECONDS_PER_RUN=2 CONCURRENCY="1 16" idem-benchmarks/scripts/redis-bench.sh   # quicker
#
# Figures (ops/s; one op = one key):
#   reserve  Idem reserve of new keys    vs redis-benchmark EVALSHA of Idem's reserve script
#            (target >= 80%: the Java client adds little)
#   new      Idem reserve+commit, new keys  vs redis-benchmark SET key NX PX (target >= 35%)
#   dup      Idem duplicate hits (sliding refresh)  vs SET NX PX (target >= 60%)
#   batch    Idem reserveAll+commitAll of 100 keys per caller  vs SET NX PX with -P 100
#            (no target in the issue; shown for the pipelining cost)
# Idem keeps N requests outstanding on one connection (async calls, like N callers); redis-benchmark
# uses N connections (-c N) with the same pipeline depth (-P).
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN=${SECONDS_PER_RUN:-5}
WARMUP=${WARMUP:-3}
CONCURRENCY=${CONCURRENCY:-"1 16 64"}
BATCH_CONCURRENCY=${BATCH_CONCURRENCY:-"1 16"}
BATCH=${BATCH:-100}
JAR=idem-benchmarks/target/benchmarks.jar
JAVA=${JAVA:-java}

command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || {
  echo "redis-bench: needs redis-server and redis-benchmark (apt-get install redis-server)" >&2
  exit 1
}
if [[ ! -f $JAR || -n ${REBUILD:-} ]]; then
  ./mvnw -B -q -pl idem-benchmarks -am package -DskipTests
fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
PORT=$(free_port)
DIR=$(mktemp -d)
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR" \
  --daemonize no --logfile "$DIR/redis.log" --maxmemory-policy noeviction &
REDIS_PID=$!
cleanup() {
  kill "$REDIS_PID" 2>/dev/null || true
  wait "$REDIS_PID" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  redis-cli -p "$PORT" PING >/dev/null 2>&1 && break
  sleep 0.05
done
cli() { redis-cli -p "$PORT" "$@"; }

# Idem's own reserve script, byte for byte (-x reads the last argument from stdin).
"$JAVA" -cp "$JAR" dev.idem.benchmarks.RedisLoadDriver --print-script reserve >"$DIR/reserve.lua"
SHA=$(cli -x SCRIPT LOAD <"$DIR/reserve.lua")

# Anchor arguments shaped like Idem's: a key of the same length (prefix, scope, 64 characters),
# the same 59-byte in-flight value (a valid v1 entry with a fingerprint, spelled without NUL bytes
# so that it fits in an argument: random keys sometimes repeat, and the script then reads it), the
# fingerprint, the lease and the sliding-TTL arguments. __rand_int__ is 12 digits.
KEY="bench:000000000000:bench/dedup:$(printf '0%.0s' $(seq 1 52))__rand_int__"
FP="FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
VALUE=$'\x01'"ITTTTTTTTSSSSSSSS"$'\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x01'"$FP"
NOW=$(date +%s%3N)
DEADLINE8="DDDDDDDD"

# One redis-benchmark run; prints requests per second. The server is private and throwaway:
# emptying it between runs keeps every run on a database of the same size.
anchor() { # <concurrency> <pipeline> <requests> <command...>
  local c=$1 p=$2 n=$3
  shift 3
  cli FLUSHALL >/dev/null
  redis-benchmark -h 127.0.0.1 -p "$PORT" -c "$c" -P "$p" -n "$n" -r 2000000000 -q "$@" 2>/dev/null \
    | tr '\r' '\n' | grep -o '[0-9.]* requests per second' | tail -1 | cut -d' ' -f1
}
idem() { # <mode> <concurrency>
  cli FLUSHALL >/dev/null
  "$JAVA" -Xmx1g -cp "$JAR" dev.idem.benchmarks.RedisLoadDriver --uri "redis://127.0.0.1:$PORT" \
    --mode "$1" --concurrency "$2" --batch "$BATCH" --seconds "$SECONDS_PER_RUN" --warmup "$WARMUP" 2>>"$DIR/driver.log" \
    | grep -o 'ops_per_sec=[0-9]*' | cut -d= -f2
}
# Requests for about SECONDS_PER_RUN seconds at a rough expected rate.
requests() { # <ops per second guess>
  echo $(($1 * SECONDS_PER_RUN))
}
setnx() { anchor "$1" "$2" "$3" SET "$KEY" "$VALUE" NX PX 60000; }
evalsha() { anchor "$1" 1 "$2" EVALSHA "$SHA" 1 "$KEY" "$NOW" "$VALUE" 60000 "$FP" "$DEADLINE8" 3600000; }

ROWS=()
row() { # <figure> <concurrency> <idem1> <idem2> <anchor1> <anchor2> <anchor name> <target %>
  local idem_avg anchor_avg ratio met target
  idem_avg=$(((${3%.*} + ${4%.*}) / 2))
  anchor_avg=$(((${5%.*} + ${6%.*}) / 2))
  ratio=$(awk -v a="$idem_avg" -v b="$anchor_avg" 'BEGIN { printf "%.2f", a / b }')
  if [[ $8 == - ]]; then
    met=-
    target=-
  else
    target=">= $8%"
    met=$(awk -v r="$ratio" -v t="$8" 'BEGIN { print (r * 100 >= t) ? "yes" : "no" }')
  fi
  ROWS+=("| $1 | $2 | $idem_avg | $anchor_avg ($7) | $ratio | $target | $met |")
  echo "  $1 c=$2: idem $3 $4, $7 $5 $6 -> ratio $ratio" >&2
}

echo "# loadavg before: $(cat /proc/loadavg)" >&2
echo "# $("$JAVA" -version 2>&1 | head -1); $(redis-server --version | cut -d' ' -f1-3)" >&2
for c in $CONCURRENCY; do
  if ((c == 1)); then n=$(requests 30000); else n=$(requests 120000); fi
  e1=$(evalsha "$c" "$n"); i1=$(idem reserve "$c"); e2=$(evalsha "$c" "$n"); i2=$(idem reserve "$c")
  row reserve "$c" "$i1" "$i2" "$e1" "$e2" "EVALSHA reserve" 80
  s1=$(setnx "$c" 1 "$n"); i1=$(idem new "$c"); s2=$(setnx "$c" 1 "$n"); i2=$(idem new "$c")
  row "new (reserve+commit)" "$c" "$i1" "$i2" "$s1" "$s2" "SET NX PX" 35
  s1=$(setnx "$c" 1 "$n"); i1=$(idem dup "$c"); s2=$(setnx "$c" 1 "$n"); i2=$(idem dup "$c")
  row "duplicate hit" "$c" "$i1" "$i2" "$s1" "$s2" "SET NX PX" 60
done
for c in $BATCH_CONCURRENCY; do
  n=$(requests 600000)
  s1=$(setnx "$c" "$BATCH" "$n"); i1=$(idem batch "$c"); s2=$(setnx "$c" "$BATCH" "$n"); i2=$(idem batch "$c")
  row "batch $BATCH (reserveAll+commitAll)" "$c" "$i1" "$i2" "$s1" "$s2" "SET NX PX -P $BATCH" -
done
echo "# loadavg after: $(cat /proc/loadavg)" >&2

echo "| figure | callers | Idem ops/s | anchor ops/s | ratio | target | met? |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
