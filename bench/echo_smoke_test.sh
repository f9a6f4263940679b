#!/usr/bin/env bash
# The load generator against the echo server in each of its modes: every call
# answered (no errors, decisions made), and the server stops cleanly on
# SIGTERM with its hand-off threads joined. Half a second a phase, so the
# benchmark tools cannot rot between the runs that use them.
#   bench/echo_smoke_test.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: echo_smoke_test.sh BIN_DIR}
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
for mode in "" "--hand-offs 1" "--hand-offs 2 --commit-us 100" "--combine --commit-us 100"; do
  # shellcheck disable=SC2086  # the mode is several flags
  "$bin/tidegate-echo-server" --listen 127.0.0.1:0 $mode >"$dir/out" 2>"$dir/err" &
  pid=$!
  for _ in $(seq 100); do grep -q "listening on [^ ]*$" "$dir/out" && break; sleep 0.05; done
  address=$(sed -n 's/.*listening on \([^ ]*\)$/\1/p' "$dir/out")
  [ -n "$address" ] || { echo "echo server ($mode) did not start: $(cat "$dir/err")"; exit 1; }
  "$bin/tidegate-loadgen" --server "$address" --clients 4 --seconds 0.5 -o json 2>"$dir/loadgen.err" >"$dir/json" ||
    { echo "load generator against the echo server ($mode) failed:"; cat "$dir/loadgen.err" "$dir/json"; exit 1; }
  python3 - "$dir/json" "$mode" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
mode = sys.argv[2] or "at once"
assert result["errors"] == 0, f"{mode}: {result['errors']} errors"
assert result["decisions"] > 0, f"{mode}: no decisions"
print(f"echo server {mode}: {result['decisions_per_s']} decisions/s, no errors")
PY
  kill -TERM "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$pid" 2>/dev/null && { echo "echo server ($mode) still runs 5 s after SIGTERM"; exit 1; }
  status=0
  wait "$pid" || status=$?
  pid=
  [ "$status" -eq 0 ] || { echo "echo server ($mode) exited $status on SIGTERM"; exit 1; }
done
