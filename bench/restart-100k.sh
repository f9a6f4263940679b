#!/usr/bin/env bash
# Fills a fresh ledger with about 100,000 admitted jobs through the gRPC API,
# reports tidegated's resident memory, then measures start-up time twice:
# after SIGTERM (snapshot only) and after kill -9 (snapshot + journal tail).
#   bench/restart-100k.sh [SECONDS_OF_LOAD]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
start() {
  : >"$dir/out"
  build/bin/tidegated --config bench/loadgen.yaml --db "$dir/bench.db" --init --listen 127.0.0.1:0 --sync normal \
    >"$dir/out" 2>"$dir/err" &
  pid=$!
  for _ in $(seq 1200); do grep -q "listening on" "$dir/out" && break; sleep 0.1; done
  addr=$(sed -n 's/^tidegated listening on //p' "$dir/out")
}
start
build/bin/tidegate-loadgen --server "$addr" --clients 64 --seconds "$seconds" --admit 100 --release 0 >/dev/null
jobs=$(build/bin/tidegate --server "$addr" jobs -o json | grep -o '"job"' | wc -l)
echo "jobs in the ledger: $jobs"
echo "tidegated RSS with $jobs jobs: $(( $(ps -o rss= -p "$pid") / 1024 )) MiB"
kill -TERM "$pid"; wait "$pid" || true
start
echo "restart after SIGTERM: $(grep -o 'ready in [0-9]* ms' "$dir/err")"
build/bin/tidegate-loadgen --server "$addr" --clients 16 --seconds 2 --admit 100 --release 0 >/dev/null
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
start
echo "restart after kill -9: $(grep -o 'ready in [0-9]* ms' "$dir/err") ($(grep -o 'recovered from.*' "$dir/err"))"
