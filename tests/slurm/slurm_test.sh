#!/bin/bash
# The SLURM agent against real daemons: a one-node SLURM with 8 fake H100s
# (cluster.sh), the real tidegated and tidegate-agent.
#
#   tests/slurm/slurm_test.sh BIN_DIR
#
# Checks, in order: a held job within quota is admitted and runs; a job that
# cannot fit stays held with the broker's reason in its comment; bad input
# stays held with a reason; a reclaim sends SIGTERM to a borrower's batch
# script, cancels it after its grace period and starts the owner's job;
# a restarted agent adopts a job that started without it; a slurmctld restart
# loses nothing. Prints the measured admission and eviction figures.
# Exit 0 pass, 1 fail, 77 skipped (not root, or SLURM cannot be installed).
set -uo pipefail

bin=${1:?usage: slurm_test.sh BIN_DIR}
bin=$(cd "$bin" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: the SLURM integration test needs root (slurmd, mknod)"
  exit 77
fi

dir=$(mktemp -d /tmp/tidegate-slurm-XXXXXX)
chmod 0755 "$dir"
broker_pid=""
agent_pid=""
failures=0

cleanup() {
  [[ -n "$agent_pid" ]] && kill -TERM "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
  [[ -n "$broker_pid" ]] && kill -TERM "$broker_pid" 2>/dev/null && wait "$broker_pid" 2>/dev/null
  "$here/cluster.sh" stop "$dir/cluster" >/dev/null 2>&1
  if [[ $failures -ne 0 || -n "${KEEP:-}" ]]; then
    echo "--- agent log (tail)"; tail -40 "$dir/agent.log" 2>/dev/null
    echo "--- broker log (tail)"; tail -20 "$dir/broker.log" 2>/dev/null
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
now() { date +%s.%N; }
elapsed() { echo "$1 $2" | awk '{printf "%.2f", $2 - $1}'; }

# Waits up to $1 seconds (polling every 50 ms) for "$2..." to succeed.
wait_for() {
  local secs=$1; shift
  local deadline=$(( $(date +%s) + secs ))
  while (( $(date +%s) <= deadline )); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.05
  done
  return 1
}

# The cluster holds every GPU job with the shipped job_submit.lua; some jobs
# below also use `sbatch --hold`, the other way in.
export TIDEGATE_JOB_SUBMIT_LUA=$here/../../deploy/slurm/job_submit.lua
"$here/cluster.sh" start "$dir/cluster"
rc=$?
if [[ $rc -eq 77 ]]; then echo "SKIP: SLURM cannot be installed or run here"; exit 77; fi
[[ $rc -ne 0 ]] && { echo "FAIL: the test cluster did not start"; failures=1; exit 1; }
export SLURM_CONF=$dir/cluster/slurm.conf

cat >"$dir/tidegate.yaml" <<'EOF'
clusters:
  - {name: hpc, kind: slurm, capacity: {gpu: 8}}
teams:
  - {name: research, quota: {gpu: {guaranteed: 4, borrow_limit: 4}}}
  - {name: serving, quota: {gpu: {guaranteed: 4}}, preemption: {reclaim: any}}
policy: {default_grace_s: 5, tick_s: 1, requeue_backoff_s: 0}
EOF

# The broker runs as on a network: TLS (deploy/security/issue-certs.sh), a
# roles file and tokens: the agent is the agent of cluster hpc only, this
# script's own `tidegate` reads are an admin's (docs/security.md).
mkdir -p "$dir/pki"
(cd "$dir/pki" && sh "$here/../../deploy/security/issue-certs.sh" 127.0.0.1 >/dev/null 2>&1) \
  || { echo "FAIL: openssl could not issue the test certificates"; exit 1; }
openssl rand -hex 32 >"$dir/root.token"
openssl rand -hex 32 >"$dir/agent.token"
"$bin/tidegate" auth hash-token root <"$dir/root.token" >"$dir/tokens"
"$bin/tidegate" auth hash-token agent-hpc <"$dir/agent.token" >>"$dir/tokens"
printf 'principals:\n  root: [admin]\n  agent-hpc: [{agent: hpc}]\n' >"$dir/roles.yaml"
export TIDEGATE_CA=$dir/pki/ca.crt TIDEGATE_TOKEN_FILE=$dir/root.token

start_broker() {
  "$bin/tidegated" --config "$dir/tidegate.yaml" --db "$dir/tidegate.db" --init --listen 127.0.0.1:0 \
    --tls-cert "$dir/pki/broker.crt" --tls-key "$dir/pki/broker.key" \
    --roles "$dir/roles.yaml" --tokens "$dir/tokens" \
    >"$dir/broker.out" 2>>"$dir/broker.log" &
  broker_pid=$!
  wait_for 30 grep -q "listening on" "$dir/broker.out" || { echo "FAIL: tidegated did not start"; exit 1; }
  addr=$(sed -n 's/^tidegated listening on //p' "$dir/broker.out")
  export TIDEGATE_SERVER=$addr
}
start_agent() {
  "$bin/tidegate-agent" --kind slurm --cluster hpc --broker "$addr" --poll-ms 250 \
    --token-file "$dir/agent.token" 2>>"$dir/agent.log" &
  agent_pid=$!
}
stop_agent() {
  kill -TERM "$agent_pid"; wait "$agent_pid"; agent_pid=""
}

start_broker
start_agent

# Helpers on the SLURM side.
state() { squeue -h -t all -j "$1" -o %T 2>/dev/null; }
reason() { squeue -h -j "$1" -o %r 2>/dev/null; }
comment() { squeue -h -t all -j "$1" -o %k 2>/dev/null; }
is_state() { [[ "$(state "$1")" == "$2" ]]; }
released() { local r; r=$(reason "$1"); [[ -n "$r" && "$r" != JobHeldUser && "$r" != JobHeldAdmin ]] || is_state "$1" RUNNING; }
comment_has() { comment "$1" | grep -q -- "$2"; }
# And the broker's: the job's state in lower case, or "unknown".
broker_state() {
  "$bin/tidegate" job "slurm:$1" -o json 2>/dev/null | python3 -c \
    'import json,sys; print(json.load(sys.stdin).get("state","").replace("JOB_STATE_","").lower())' 2>/dev/null \
    || echo unknown
}
broker_is() { [[ "$(broker_state "$1")" == "$2" ]]; }
# Left the broker: ended (kept for the retention window, docs/jobs.md) or never known.
broker_done() { local s; s=$(broker_state "$1"); [[ "$s" == ended || "$s" == unknown ]]; }
submit() { sbatch --parsable "$@" | cut -d';' -f1; }

# ------------------------------------------------------------ 1. admitted and runs
wait_for 30 grep -q "reconciled our view" "$dir/agent.log" || fail "the agent did not connect"
total=0
n=5
for i in $(seq $n); do
  t0=$(now)
  j=$(submit --account=research --gres=gpu:h100:1 --no-requeue --wrap 'sleep 300')  # held by the lua
  wait_for 30 released "$j" || { fail "job $j was not released"; break; }
  t1=$(now)
  total=$(echo "$total $(elapsed "$t0" "$t1")" | awk '{print $1 + $2}')
  scancel "$j"
  wait_for 30 broker_done "$j" || fail "job $j did not leave the broker after scancel"
done
admit_avg=$(echo "$total $n" | awk '{printf "%.2f", $1 / $2}')
a=$(submit --hold --account=research --gres=gpu:h100:2 --no-requeue --wrap 'sleep 300')
if wait_for 30 is_state "$a" RUNNING && broker_is "$a" admitted; then
  pass "a held job within quota is admitted and runs (job $a)"
else
  fail "job $a: slurm $(state "$a") ($(reason "$a")), broker $(broker_state "$a")"
fi

# ------------------------------------------------------------ 2. over quota stays held
big=$(submit --hold --account=research --gres=gpu:h100:8 --no-requeue --wrap 'sleep 300')
if wait_for 30 comment_has "$big" "tidegate: queued" && comment_has "$big" "tidegate job slurm:$big" \
   && [[ "$(reason "$big")" == JobHeldUser ]] && broker_is "$big" queued; then
  pass "a job over quota stays held: $(comment "$big")"
else
  fail "job $big over quota: $(state "$big") ($(reason "$big")), comment '$(comment "$big")'"
fi
scancel "$big"
wait_for 30 broker_done "$big" || fail "cancelled job $big stays in the broker"

# ------------------------------------------------------------ 3. bad input stays held
noacct=$(submit --hold --gres=gpu:1 --wrap 'sleep 300')
noteam=$(submit --hold --account=nobody --gres=gpu:1 --wrap 'sleep 300')
if wait_for 30 comment_has "$noacct" "no account" && wait_for 30 comment_has "$noteam" "refused" \
   && sleep 1 && [[ "$(state "$noacct")" == PENDING && "$(state "$noteam")" == PENDING ]]; then
  pass "bad input stays held: '$(comment "$noacct")' / '$(comment "$noteam")'"
else
  fail "bad input: $noacct $(state "$noacct") '$(comment "$noacct")'; $noteam $(state "$noteam") '$(comment "$noteam")'"
fi
grep -q "slurm:$noacct stays held" "$dir/agent.log" || fail "no agent log line for job $noacct"
scancel "$noacct" "$noteam"

# ------------------------------------------------------------ 4. reclaim with SIGTERM
scancel "$a"
wait_for 30 broker_done "$a" || fail "job $a stays in the broker"
cat >"$dir/borrower.sh" <<EOF
#!/bin/bash
trap 'date +%s.%N > $dir/borrower.term' TERM
while true; do sleep 0.1; done
EOF
borrower=$(submit --hold --account=research --gres=gpu:h100:8 --no-requeue "$dir/borrower.sh")
wait_for 30 is_state "$borrower" RUNNING || fail "borrower $borrower did not run"
t0=$(now)
owner=$(submit --hold --account=serving --gres=gpu:h100:4 --no-requeue --wrap 'sleep 300')
wait_for 30 test -f "$dir/borrower.term" || fail "the borrower's batch script got no SIGTERM"
t_term=$(cat "$dir/borrower.term" 2>/dev/null || echo "$t0")
is_state "$borrower" RUNNING || fail "the borrower stopped before its grace period ended"
wait_for 60 is_state "$owner" RUNNING || fail "the owner's job $owner did not start"
t1=$(now)
wait_for 30 bash -c "[[ \$(squeue -h -t all -j $borrower -o %T) == CANCELLED ]]" \
  || fail "borrower $borrower is $(state "$borrower"), not CANCELLED"
if [[ $failures -eq 0 ]]; then
  pass "reclaim: SIGTERM after $(elapsed "$t0" "$t_term") s, owner running $(elapsed "$t0" "$t1") s after submit (grace 5 s)"
fi
reclaim_s=$(elapsed "$t0" "$t1")
term_s=$(elapsed "$t0" "$t_term")
broker_is "$owner" admitted || fail "owner $owner is $(broker_state "$owner") in the broker"

# ------------------------------------------------------------ 5. agent restart adopts
stop_agent
outside=$(submit --account=research --gres=gpu:h100:2 --no-requeue --wrap 'sleep 300')
scontrol release "$outside"  # an admin lets it run while the agent is away
wait_for 30 is_state "$outside" RUNNING || fail "job $outside did not start by itself"
held=$(submit --hold --account=research --gres=gpu:h100:1 --no-requeue --wrap 'sleep 300')
start_agent
if wait_for 30 broker_is "$outside" admitted && wait_for 30 is_state "$held" RUNNING; then
  pass "a restarted agent adopts job $outside and admits job $held submitted while it was away"
else
  fail "after the agent restart: $outside is $(broker_state "$outside"), $held is $(state "$held")"
fi
broker_is "$owner" admitted || fail "owner $owner lost in the agent restart"
[[ $(grep -c "admit slurm:$held " "$dir/agent.log") -ge 1 ]] || fail "job $held was not admitted through the broker"

# ------------------------------------------------------------ 6. slurmctld restart
before=$("$bin/tidegate" jobs -o json 2>/dev/null | python3 -c \
  'import json,sys; print(sorted(j["job"] for j in json.load(sys.stdin).get("jobs",[])))')
"$here/cluster.sh" restart-ctld "$dir/cluster" || fail "slurmctld did not restart"
sleep 2  # a few agent polls against the restarted controller
after=$("$bin/tidegate" jobs -o json 2>/dev/null | python3 -c \
  'import json,sys; print(sorted(j["job"] for j in json.load(sys.stdin).get("jobs",[])))')
[[ "$before" == "$after" ]] || fail "the broker's jobs changed across the slurmctld restart: $before -> $after"
for j in "$owner" "$outside" "$held"; do
  is_state "$j" RUNNING || fail "job $j is $(state "$j") after the slurmctld restart"
done
late=$(submit --hold --account=research --gres=gpu:h100:1 --no-requeue --wrap 'sleep 300')
if wait_for 30 is_state "$late" RUNNING && broker_is "$late" admitted; then
  pass "slurmctld restart loses nothing; job $late submitted after it is admitted"
else
  fail "after the slurmctld restart job $late is $(state "$late") / $(broker_state "$late")"
fi

# ------------------------------------------------------------ 7. a requeueable victim waits again
scancel "$owner" "$outside" "$held" "$late"
for j in "$owner" "$outside" "$held" "$late"; do
  wait_for 30 broker_done "$j" || fail "job $j stays in the broker after scancel"
done
requeued=$(submit --account=research --gres=gpu:h100:8 --requeue --wrap 'sleep 300')
wait_for 30 is_state "$requeued" RUNNING || fail "requeueable borrower $requeued did not run"
owner2=$(submit --account=serving --gres=gpu:h100:4 --no-requeue --wrap 'sleep 300')
if wait_for 60 is_state "$owner2" RUNNING && [[ "$(state "$requeued")" == PENDING ]] \
   && broker_is "$requeued" queued; then
  pass "a requeueable victim goes back to the queue, held: $(reason "$requeued"), '$(comment "$requeued")'"
else
  fail "requeue: owner $owner2 $(state "$owner2"); victim $requeued $(state "$requeued") ($(reason "$requeued")), broker $(broker_state "$requeued")"
fi
scancel "$owner2"
if wait_for 60 is_state "$requeued" RUNNING && broker_is "$requeued" admitted; then
  pass "the requeued victim $requeued is admitted again once the owner is done"
else
  fail "requeued victim $requeued: $(state "$requeued") ($(reason "$requeued")), broker $(broker_state "$requeued")"
fi

# ------------------------------------------------------------ who asked
# The agent's admits and its stream's commands are journalled as its principal.
if "$bin/tidegate" history --db "$dir/tidegate.db" --kind admit --principal agent-hpc | grep -q "slurm:"; then
  pass "the journal names the agent's principal (tidegate history)"
else
  fail "tidegate history shows no admit by agent-hpc"
fi

echo "figures: admission round trip (sbatch -> squeue shows it released), mean of $n: ${admit_avg} s (agent --poll-ms 250)"
over_s=$(echo "$reclaim_s $term_s" | awk '{printf "%.2f", $1 - $2 - 5}')
release_s=$(grep -h "admit slurm:\|start slurm:" "$dir/agent.log" | awk '
  { split($2, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]; sub(/\]/, "", s) }
  /admit slurm:[0-9]+ \(team [a-z]+\): DECISION_ADMITTED$/ { a[$6] = s }
  /start slurm:[0-9]+: released/ { id = $6; sub(/:$/, "", id); if (id in a) { sum += s - a[id]; n++ } }
  END { if (n) printf "%.3f", sum / n; else print "?" }')
echo "figures: agent Admit -> scontrol release done, mean over the run: ${release_s} s"
echo "figures: reclaim: owner submitted -> borrower SIGTERM ${term_s} s; -> owner RUNNING ${reclaim_s} s; over the 5 s grace after SIGTERM: ${over_s} s (KillWait 2 s)"
if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all SLURM checks passed"
