#!/usr/bin/env bash
# Idem's JDBC store on PostgreSQL next to its anchor, pgbench, at the same concurrency.
#
#   A = pgbench: one INSERT of a random 32-byte key per transaction into a table of exactly the
#       shape of Idem's keys table (same DDL: primary key (scope, dedup_key), deadline index),
#       prepared statements (-M prepared), -c N -j min(2, N).
#   B = Idem:    JdbcLoadDriver, N threads on N pooled connections, each pair "reserve a new random
#       key + commit it" (two statements, two round trips; pgbench's A is one).
#
# Runs A B A B (ROUNDS pairs) at 1 and 16 connections in a database of its own (idem_bench,
# created here and dropped at exit), truncating both tables before every run, and prints ops/s and
# the ratio Idem / pgbench. Usage, from anywhere:
#
#   idem-benchmarks/scripts/pg-bench.sh            # SECONDS_PER_RUN=10 ROUNDS=2 CONNECTIONS="1 16"
#   PGHOST=127.0.0.1 PGPORT=5432 PGUSER=postgres SECONDS_PER_RUN=20 idem-benchmarks/scripts/pg-bench.sh
#   SYNC_COMMIT=off idem-benchmarks/scripts/pg-bench.sh   # no WAL flush wait per commit
#
# With the server's default synchronous_commit=on both sides mostly wait for WAL flushes, and Idem
# flushes twice per event (the reservation and the commit are each durable). SYNC_COMMIT=off sets
# synchronous_commit for the benchmark database only (ALTER DATABASE), never for the server, and
# shows the cost of statements and round trips instead.
#
# Builds idem-benchmarks/target/benchmarks.jar first if it is missing (or if BUILD=1).
set -euo pipefail

PGHOST=${PGHOST:-127.0.0.1}
PGPORT=${PGPORT:-5432}
PGUSER=${PGUSER:-postgres}
export PGHOST PGPORT PGUSER
DB=${BENCH_DB:-idem_bench}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
WARMUP=${WARMUP:-10}
ROUNDS=${ROUNDS:-2}
CONNECTIONS=${CONNECTIONS:-"1 16"}
SYNC_COMMIT=${SYNC_COMMIT:-}
JAVA=${JAVA:-java}

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
JAR="$ROOT/idem-benchmarks/target/benchmarks.jar"
if [[ ! -f "$JAR" || "${BUILD:-0}" == 1 ]]; then
  (cd "$ROOT" && ./mvnw -B -q -pl idem-benchmarks -am package -DskipTests)
fi

WORK=$(mktemp -d)
cleanup() {
  psql -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ)  $(psql -d postgres -Atc 'select version()')"
echo "# java: $("$JAVA" -version 2>&1 | head -1)"
echo "# loadavg before: $(cat /proc/loadavg)"

psql -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
psql -q -d postgres -c "CREATE DATABASE $DB" >/dev/null
if [[ -n "$SYNC_COMMIT" ]]; then
  psql -q -d postgres -c "ALTER DATABASE $DB SET synchronous_commit = $SYNC_COMMIT" >/dev/null
fi
echo "# synchronous_commit: $(psql -d "$DB" -Atc 'show synchronous_commit')"
URL="jdbc:postgresql://$PGHOST:$PGPORT/$DB?user=$PGUSER"

# The anchor's table: Idem's own DDL with another prefix, so both write the same row shape.
"$JAVA" -cp "$JAR" dev.idem.benchmarks.JdbcLoadDriver --ddl --prefix pgb_ > "$WORK/ddl.sql"
psql -q -v ON_ERROR_STOP=1 -d "$DB" -f "$WORK/ddl.sql" >/dev/null
# Idem creates its tables on first use; create them now so that the first run does not pay for it.
"$JAVA" -cp "$JAR" dev.idem.benchmarks.JdbcLoadDriver --url "$URL" --connections 1 --seconds 1 \
  --warmup 1 >/dev/null 2>&1

cat > "$WORK/insert.sql" <<'SQL'
\set k random(1, 9000000000000000000)
INSERT INTO pgb_keys (scope, dedup_key, state, token, since_ms, deadline_ms)
  VALUES ('bench/dedup', sha256(:k::text::bytea), 2, :k, 0, 9223372036854775807);
SQL

truncate_tables() {
  psql -q -d "$DB" -c "TRUNCATE pgb_keys; TRUNCATE idem_keys" >/dev/null
  psql -q -d "$DB" -c "CHECKPOINT" >/dev/null
}

run_pgbench() {
  local c=$1 j=$(( $1 < 2 ? $1 : 2 ))
  pgbench -n -M prepared -c "$c" -j "$j" -T "$SECONDS_PER_RUN" -f "$WORK/insert.sql" "$DB" 2>&1 \
    | awk '/^tps = / { printf "%.0f\n", $3; exit }'
}

run_idem() {
  "$JAVA" -Xmx512m -cp "$JAR" dev.idem.benchmarks.JdbcLoadDriver --url "$URL" \
    --connections "$1" --seconds "$SECONDS_PER_RUN" --warmup "$WARMUP" 2>/dev/null \
    | awk -F'ops/s=' '/^idem / { print $2 }'
}

printf "%-11s %-6s %14s %14s %8s\n" connections round "pgbench tps" "idem ops/s" ratio
for c in $CONNECTIONS; do
  for r in $(seq 1 "$ROUNDS"); do
    truncate_tables
    a=$(run_pgbench "$c")
    truncate_tables
    b=$(run_idem "$c")
    printf "%-11s %-6s %14s %14s %8s\n" "$c" "$r" "$a" "$b" \
      "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')"
  done
done
echo "# loadavg after: $(cat /proc/loadavg)"
