#!/bin/sh
# with_postgres.sh COMMAND [ARGS...]: starts a throw-away PostgreSQL 15 in a
# temporary directory (unix socket only, no TCP), runs COMMAND with
# TIDEGATE_PG="host=DIR port=PORT user=postgres dbname=postgres" and
# TIDEGATE_PG_DATA=DIR/data in its environment, stops the server and removes
# the directory. Exits with COMMAND's status; 77 (skipped) only when no
# PostgreSQL server is installed on this machine.
set -u
PGBIN=${PGBIN:-}
if [ -z "$PGBIN" ]; then
  for v in 15 16 17 14 13; do
    if [ -x /usr/lib/postgresql/$v/bin/pg_ctl ]; then PGBIN=/usr/lib/postgresql/$v/bin; break; fi
  done
fi
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
  echo "SKIP: no PostgreSQL server here (apt-get install postgresql-15)" >&2
  exit 77
fi
dir=$(mktemp -d /tmp/tidegate-pg-XXXXXX)
chmod 755 "$dir"
# The server refuses to run as root: run it as postgres when we are root.
as_pg() { "$@"; }
if [ "$(id -u)" = 0 ]; then
  chown postgres "$dir"
  as_pg() { runuser -u postgres -- "$@"; }
fi
port=$(( 20000 + $$ % 20000 ))
cleanup() {
  as_pg "$PGBIN/pg_ctl" -D "$dir/data" stop -m immediate >/dev/null 2>&1
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
if ! as_pg "$PGBIN/initdb" -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1; then
  cat "$dir/initdb.log" >&2
  echo "with_postgres.sh: initdb failed" >&2
  exit 1
fi
# fsync stays on: the tests check what an acknowledged commit survives.
if ! as_pg "$PGBIN/pg_ctl" -D "$dir/data" -w -t 30 -l "$dir/log" \
    -o "-p $port -k $dir -c listen_addresses='' -c max_connections=60" start >/dev/null; then
  cat "$dir/log" >&2
  echo "with_postgres.sh: the server did not start" >&2
  exit 1
fi
export TIDEGATE_PG="host=$dir port=$port user=postgres dbname=postgres"
export TIDEGATE_PG_DATA="$dir/data"
export TIDEGATE_PG_CTL="$PGBIN/pg_ctl"
export TIDEGATE_PG_DIR="$dir"
export TIDEGATE_PG_PORT="$port"
"$@"
status=$?
if [ $status -ne 0 ] && [ -f "$dir/log" ]; then
  echo "---- PostgreSQL log (tail) ----" >&2
  tail -n 30 "$dir/log" >&2
fi
exit $status
