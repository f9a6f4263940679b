#!/bin/sh
# Writes ledger.db: a SQLite ledger made by a real tidegated, whose journal and
# snapshots were stored when Command and CoreSnapshot were still in the public
# tidegate.v1 package. broker/ledger_ops/journal_compat_test.cc reads it with
# today's code. Regenerating it with a newer broker would prove nothing.
#   tests/data/ledger-v1-journal/make.sh TIDEGATED TIDEGATE   (needs sqlite3)
set -eu
daemon=$1
cli=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
"$daemon" --config "$here/config.yaml" --db "$work/ledger.db" --init --listen 127.0.0.1:0 \
  --snapshot-every 4 >"$work/out" 2>"$work/err" &
pid=$!
addr=
while [ -z "$addr" ]; do
  addr=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$work/out" "$work/err" | head -n 1)
  kill -0 "$pid"; sleep 0.1
done
t() { "$cli" --server "$addr" "$@"; }
t admit --job ml:big --team ml --replicas 6 --per-replica gpu=1        # borrows 2 of vision's
t admit --job vision:e --team vision --elastic 1:2 --per-replica gpu=1  # then grows to 2
until t job vision:e -o json | grep -q '"target_replicas":2'; do sleep 0.1; done
epoch=$(t job vision:e -o json | sed -n 's/.*"resize_epoch":\([0-9]*\).*/\1/p')
t ack vision:e "$epoch" 2
t admit --job vision:v --team vision --replicas 2 --per-replica gpu=1 || true  # reclaims from ml:big
t admit --job ml:q --team ml --replicas 1 --per-replica gpu=1 || true
t release ml:q
t config apply "$here/config-2.yaml"
kill -TERM "$pid"
wait "$pid"
# The ledger as SQL text (the WAL folded in; blobs as hex), without
# LEDGER.acked: a ledger copied without its record is checked by nothing but
# its journal. The test rebuilds the database from it.
sqlite3 "$work/ledger.db" .dump >"$here/ledger.sql"
