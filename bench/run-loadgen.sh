#!/usr/bin/env bash
# Starts tidegated on a loopback port with a fresh ledger (durable group
# commit, synchronous=FULL), runs the load generator against it, stops it.
#   bench/run-loadgen.sh [CLIENTS] [SECONDS] [LOADGEN FLAGS...]
# e.g. bench/run-loadgen.sh 32 10 --attack-streams 10000 --attack-clients 4
# LEDGER=postgres runs against a throw-away PostgreSQL (tests/postgres/
# with_postgres.sh); LEDGER=both runs SQLite, then PostgreSQL, in one go.
# CONFIG=FILE runs the broker with another config (e.g. 10,000 teams; the
# load generator admits into t0..t3 unless given --teams).
# TIDEGATED=BINARY runs another broker binary (a "before" copy, to compare
# back to back); BROKER_FLAGS adds flags to it (e.g. "--snapshot-every
# 100000000" to see the rates and p99 without snapshots on the writer).
# SERVER=echo runs the load generator against bench's echo server instead,
# which answers every call at once and keeps nothing: the mix's ceiling on
# this machine, what the same clients reach when the server only pays gRPC;
# ECHO_FLAGS="--hand-offs 2" makes it finish Admits and Releases on another
# thread, two hand-offs away, as tidegated does.
# SECURE=1 runs the broker as on a network: TLS (deploy/security/issue-certs.sh),
# a roles file and a bearer token; the load generator is an admin by token.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-32}
seconds=${2:-10}
ledger=${LEDGER:-sqlite}
if [ "$ledger" = both ]; then
  echo "== ledger: SQLite"
  LEDGER=sqlite "$0" "$@"
  echo "== ledger: PostgreSQL"
  LEDGER=postgres exec tests/postgres/with_postgres.sh "$0" "$@"
fi
if [ "$ledger" = postgres ] && [ -z "${TIDEGATE_PG:-}" ]; then
  LEDGER=postgres exec tests/postgres/with_postgres.sh "$0" "$@"
fi
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
if [ "$ledger" = postgres ]; then
  # Brokers on a shared ledger need a fixed port.
  db=$TIDEGATE_PG
  listen=127.0.0.1:$(( 30000 + RANDOM % 20000 ))
else
  db=$dir/bench.db
  listen=127.0.0.1:0
fi
secure=()
client=()
if [ "${SECURE:-0}" = 1 ]; then
  (cd "$dir" && sh "$OLDPWD/deploy/security/issue-certs.sh" 127.0.0.1 >/dev/null 2>&1)
  openssl rand -hex 32 >"$dir/token"
  build/bin/tidegate auth hash-token loadgen <"$dir/token" >"$dir/tokens"
  printf 'principals:\n  loadgen: [admin]\n' >"$dir/roles.yaml"
  secure=(--tls-cert "$dir/broker.crt" --tls-key "$dir/broker.key" --roles "$dir/roles.yaml" --tokens "$dir/tokens")
  client=(--ca "$dir/ca.crt" --token-file "$dir/token")
fi
name=tidegated
if [ "${SERVER:-tidegated}" = echo ]; then
  name=echo-server
  build/bin/tidegate-echo-server --listen "$listen" ${ECHO_FLAGS:-} >"$dir/out" 2>"$dir/err" &
else
  "${TIDEGATED:-build/bin/tidegated}" --config "${CONFIG:-bench/loadgen.yaml}" --db "$db" --init --listen "$listen" --sync "${SYNC:-full}" "${secure[@]}" ${BROKER_FLAGS:-} >"$dir/out" 2>"$dir/err" &
fi
pid=$!
for _ in $(seq 100); do grep -q "listening on [^ ]*$" "$dir/out" && break; sleep 0.1; done
addr=$(sed -n 's/^[^ ]* listening on \([^ ]*\)$/\1/p' "$dir/out" | tail -n 1)
[ -n "$addr" ] || { cat "$dir/err"; exit 1; }
echo "$name RSS before: $(ps -o rss= -p "$pid") KiB"
# The broker's CPU during the mix phase (from its first progress line to the
# end), per decision: less disturbed by other load than the rates.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
build/bin/tidegate-loadgen --server "$addr" --clients "$clients" --seconds "$seconds" "${client[@]}" "${@:3}" >"$dir/loadgen" 2>&1 &
loadgen=$!
# The no-op phase's CPU per Ping (gRPC's own cost of a call), from its first
# progress line to the mix's first.
while kill -0 "$loadgen" 2>/dev/null && ! grep -q "no-op baseline" "$dir/loadgen"; do sleep 0.05; done
noop_ticks0=$(cpu_ticks); noop_t0=$(date +%s.%N)
while kill -0 "$loadgen" 2>/dev/null && ! grep -q "admit/release/getteam" "$dir/loadgen"; do sleep 0.05; done
# Per thread: "TID (name) ticks" (tidegated names its writer and responder).
thread_ticks() { cat /proc/"$pid"/task/*/stat 2>/dev/null | awk '{print $1, $2, $14 + $15}'; }
ticks0=$(cpu_ticks); t0=$(date +%s.%N); thread_ticks >"$dir/threads0"
status=0; wait "$loadgen" || status=$?
ticks1=$(cpu_ticks); t1=$(date +%s.%N); thread_ticks >"$dir/threads1"
tr '\r' '\n' <"$dir/loadgen" | grep -Ev ": [0-9]+ s *$|^ *$" || true
[ "$status" = 0 ] || exit "$status"
awk -v name="$name" -v d="$(( ticks1 - ticks0 ))" -v hz="$(getconf CLK_TCK)" -v t0="$t0" -v t1="$t1" \
    -v rate="$(sed -n 's/.* calls\/s *\([0-9.]*\) decisions\/s.*/\1/p' "$dir/loadgen" | tail -n 1)" \
    'BEGIN { cores = d / hz / (t1 - t0); if (rate > 0) printf "%s CPU during the mix: %.2f cores, %.0f us per decision\n", name, cores, cores / rate * 1e6 }'
awk -v name="$name" -v d="$(( ticks0 - noop_ticks0 ))" -v hz="$(getconf CLK_TCK)" -v t0="$noop_t0" -v t1="$t0" \
    -v rate="$(sed -n 's/^no-op Ping: *\([0-9.]*\) calls\/s.*/\1/p' "$dir/loadgen" | tail -n 1)" \
    'BEGIN { cores = d / hz / (t1 - t0); if (rate > 0) printf "%s CPU during the no-op: %.2f cores, %.0f us per call\n", name, cores, cores / rate * 1e6 }'
awk -v name="$name" -v hz="$(getconf CLK_TCK)" -v t0="$t0" -v t1="$t1" \
    -v rate="$(sed -n 's/.* calls\/s *\([0-9.]*\) decisions\/s.*/\1/p' "$dir/loadgen" | tail -n 1)" '
  NR == FNR { before[$1] = $3; next }
  { group = "other"
    if ($2 == "(tidegate-writer)") group = "writer"
    else if ($2 == "(tidegate-answer)") group = "responder"
    else if ($2 ~ /^\((nexting_thread|default-execut|grpc_|grpcpp_|event_engine|timer_manager|resolver-execu)/) group = "gRPC"
    used[group] += $3 - before[$1] }
  END { if (rate <= 0) exit
        printf "%s CPU per decision by thread:", name
        n = split("writer responder gRPC other", order, " ")
        for (i = 1; i <= n; ++i) printf " %s %.0f us", order[i], used[order[i]] / hz / (t1 - t0) / rate * 1e6
        printf "\n" }' "$dir/threads0" "$dir/threads1"
echo "$name RSS: $(ps -o rss= -p "$pid") KiB"
# Periodic snapshots written during the run, from the broker's log lines
# `ledger: snapshot at seq S written (X MB ...; the writer forked in F ms ...)`.
snapshots=$(grep -c "snapshot at seq .* written" "$dir/err" || true)
if [ "$name" = tidegated ]; then echo "tidegated snapshots written: $snapshots (largest $(sed -n 's/.*written (\([0-9.]*\) MB.*/\1/p' "$dir/err" | sort -n | tail -n 1) MB, longest fork $(sed -n 's/.*forked in \([0-9.]*\) ms.*/\1/p' "$dir/err" | sort -n | tail -n 1) ms)"; fi
