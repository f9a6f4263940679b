#!/usr/bin/env bash
# Starts tidegated on a loopback port with a fresh ledger (durable group
# commit, synchronous=FULL), runs the load generator against it, stops it.
#   bench/run-loadgen.sh [CLIENTS] [SECONDS] [LOADGEN FLAGS...]
# e.g. bench/run-loadgen.sh 32 10 --attack-streams 10000 --attack-clients 4
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-32}
seconds=${2:-10}
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
build/bin/tidegated --config bench/loadgen.yaml --db "$dir/bench.db" --init --listen 127.0.0.1:0 --sync "${SYNC:-full}" >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$dir/out" && break; sleep 0.1; done
addr=$(sed -n 's/^tidegated listening on //p' "$dir/out")
[ -n "$addr" ] || { cat "$dir/err"; exit 1; }
build/bin/tidegate-loadgen --server "$addr" --clients "$clients" --seconds "$seconds" "${@:3}"
echo "tidegated RSS: $(ps -o rss= -p "$pid") KiB"
