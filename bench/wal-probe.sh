#!/usr/bin/env bash
# The WAL frames and bytes a commit and a command write, on the real broker:
#   bench/wal-probe.sh BINARY OUTDIR [CLIENTS] [SECONDS]
# starts BINARY (e.g. build/bin/tidegated) on a fresh ledger in OUTDIR with /metrics, runs the
# load generator, and during the mix a tracing instance of its own (root; /sys/kernel/tracing)
# records the broker's pwrite64 and fdatasync calls, without stopping it per call as strace
# would; /metrics gives the commits and commands in the same window. The ledger stays in OUTDIR.
set -euo pipefail
bin=$(realpath "$1"); out=$(realpath -m "$2"); clients=${3:-32}; secs=${4:-8}
cd "$(dirname "$0")/.."
mkdir "$out" || { echo "wal-probe: $out must not exist yet" >&2; exit 2; }
port=$(( 40000 + RANDOM % 20000 ))
"$bin" --config bench/loadgen.yaml --db "$out/bench.db" --init --listen 127.0.0.1:0 --http-listen 127.0.0.1:$port --sync full ${BROKER_FLAGS:-} >"$out/out" 2>"$out/err" &
pid=$!
I=/sys/kernel/tracing/instances/tidegate-wal-probe-$$
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  if [ -d $I ]; then echo 0 > $I/tracing_on; echo 0 > $I/events/enable; rmdir $I; fi; }
trap cleanup EXIT
for _ in $(seq 100); do grep -q "listening on [^ ]*$" "$out/out" && break; sleep 0.1; done
addr=$(sed -n 's/^tidegated listening on \([^ ]*\)$/\1/p' "$out/out" | tail -n 1)
ls -l /proc/$pid/fd > "$out/fds"
build/bin/tidegate-loadgen --server "$addr" --clients "$clients" --seconds "$secs" >"$out/loadgen" 2>&1 &
lg=$!
while kill -0 "$lg" 2>/dev/null && ! grep -q "admit/release/getteam" "$out/loadgen"; do sleep 0.05; done
mkdir $I
echo 65536 > $I/buffer_size_kb
ls /proc/$pid/task > "$out/tids"
echo $(cat "$out/tids") > $I/set_event_pid
for e in pwrite64 fdatasync fsync; do echo 1 > $I/events/syscalls/sys_enter_$e/enable; done
curl -s 127.0.0.1:$port/metrics > "$out/metrics1"
sleep $(( secs - 2 ))
curl -s 127.0.0.1:$port/metrics > "$out/metrics2"
echo 0 > $I/tracing_on
cat $I/trace > "$out/trace"
wait "$lg" || true
cp "$out/bench.db-wal" "$out/wal-copy"
tr '\r' '\n' <"$out/loadgen" | grep -Ev ": [0-9]+ s *$|^ *$" || true
python3 - "$out" <<'PY'
import re, sys
d = sys.argv[1]
tids = set(open(d + "/tids").read().split())
fds = open(d + "/fds").read()
wal = set(re.findall(r" (\d+) -> \S+bench\.db-wal", fds)); db = set(re.findall(r" (\d+) -> \S+bench\.db$", fds, re.M))
def metric(f, name):
    for line in open(f):
        if re.match(name + r"(\{\})? ", line): return float(line.split()[-1])
    return 0.0
import collections
pwc = collections.Counter(); dsc = collections.Counter(); lost = 0
for line in open(d + "/trace"):
    if "LOST" in line: lost += 1
    m = re.search(r"sys_pwrite64\(fd: (?:0x)?([0-9a-f]+), buf: (?:0x)?[0-9a-f]+, count: (?:0x)?([0-9a-f]+)", line)
    if m: pwc[(str(int(m.group(1), 16)), int(m.group(2), 16))] += 1; continue
    m = re.search(r"sys_f(?:data)?sync\(fd: (?:0x)?([0-9a-f]+)", line)
    if m: dsc[(str(int(m.group(1), 16)), 0)] += 1
if lost: print("LOST events", lost)
pw = [(fd, c, n) for (fd, c), n in pwc.items()]; ds = [(fd, c, n) for (fd, c), n in dsc.items()]
frames = sum(n for fd, c, n in pw if fd in wal and c == 4096)
walbytes = sum(c * n for fd, c, n in pw if fd in wal)
ckpt = sum(n for fd, c, n in pw if fd in db)
walsyncs = sum(n for fd, c, n in ds if fd in wal); dbsyncs = sum(n for fd, c, n in ds if fd in db)
commits = metric(d + "/metrics2", "tidegate_commit_batch_commands_count") - metric(d + "/metrics1", "tidegate_commit_batch_commands_count")
commands = metric(d + "/metrics2", "tidegate_commit_batch_commands_sum") - metric(d + "/metrics1", "tidegate_commit_batch_commands_sum")
print(f"probe: {commits:.0f} commits of {commands/commits:.1f} commands; WAL: {frames/commits:.1f} frames a commit, "
      f"{frames/commands:.2f} a command, {walbytes/commits:.0f} B a commit, {walbytes/commands:.0f} B a command; "
      f"syncs of the WAL {walsyncs/commits:.2f} a commit; checkpoint: {ckpt/commands:.2f} page writes a command, {dbsyncs} db syncs")
PY
