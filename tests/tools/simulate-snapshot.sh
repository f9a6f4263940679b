#!/bin/sh
# Record `tidegate simulate` output (jsonl and table, stdout, stderr and exit
# code) for every scenario file, so a refactor can prove it changed no
# decision: run it before and after, then `diff -r BEFORE AFTER`.
#   tests/tools/simulate-snapshot.sh build/bin/tidegate OUTDIR
set -eu
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
run() { # name, args...
  name=$1; shift
  set +e
  (cd "$out" && "$bin" simulate "$@" >"$name.out" 2>"$name.err")
  echo $? >"$out/$name.rc"
  set -e
}
for f in $(cd "$root" && find tests/scenarios tests/sim -name '*.yaml' | sort); do
  name=$(echo "$f" | tr '/' '_')
  run "$name.jsonl" "$root/$f" -o jsonl
  run "$name.table" "$root/$f" -o table
done
# Traces: the small fixture, and the head of the Philly trace through each
# replay config, whole-GPU and elastic.
run small-trace "$root/tests/sim/small-trace.yaml" --trace "$root/tests/sim/small-trace.csv"
# (a relative path, so stderr does not name OUTDIR)
head -n 4001 "$root/tests/data/philly-pollux.csv" >"$out/philly-head.csv"
for cfg in philly philly-borrow philly-static; do
  run "trace-$cfg" "$root/tests/scenarios/replay/$cfg.yaml" --trace philly-head.csv
  run "trace-elastic-$cfg" "$root/tests/scenarios/replay/$cfg.yaml" --trace philly-head.csv --trace-elastic
done
