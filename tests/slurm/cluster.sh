#!/bin/bash
# A real single-node SLURM cluster for tests, with 8 fake H100s
# (/work/shared/notes/slurm.md has the measured facts this follows).
#
#   tests/slurm/cluster.sh start DIR     start munged, slurmctld, slurmd; wait until the node is idle
#   tests/slurm/cluster.sh stop DIR      stop them by the PIDs recorded in DIR
#   tests/slurm/cluster.sh restart-ctld DIR   stop slurmctld (SIGTERM) and start it again
#   tests/slurm/cluster.sh env DIR       print the `export` lines a shell needs to use the cluster
#
# Everything lives in DIR (config, state, logs, munge socket, fake devices); nothing in /etc
# is changed. The SLURM commands find the cluster through SLURM_CONF=DIR/slurm.conf.
# Needs root (slurmd, mknod). Exit codes: 0 ok, 1 failed, 77 cannot run here (not root, or
# SLURM cannot be installed).
#
# Environment: SLURM_CTLD_PORT (default 16817), SLURMD_PORT (default 16818),
# TIDEGATE_JOB_SUBMIT_LUA (a job_submit.lua to install; default none).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z "$cmd" || -z "$dir" ]]; then
  echo "usage: $0 start|stop|restart-ctld|env DIR" >&2
  exit 2
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
host=$(hostname -s)
ctld_port=${SLURM_CTLD_PORT:-16817}
slurmd_port=${SLURMD_PORT:-16818}

log() { echo "cluster.sh: $*" >&2; }

install_packages() {
  local missing=""
  for p in slurm-wlm munge; do
    dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing="$missing $p"
  done
  [[ -z "$missing" ]] && return 0
  log "installing$missing"
  if ! (DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing \
        || { DEBIAN_FRONTEND=noninteractive apt-get update &&
             DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing; }) \
        >"$dir/apt.log" 2>&1; then
    log "cannot install$missing (see $dir/apt.log)"
    exit 77
  fi
}

# Waits up to $1 seconds for "$2..." to succeed.
wait_for() {
  local secs=$1; shift
  local i
  for ((i = 0; i < secs * 10; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  return 1
}

write_config() {
  mkdir -p "$dir/state/ctld" "$dir/state/d" "$dir/log" "$dir/dev" "$dir/munge"
  chown munge:munge "$dir/munge"
  chmod 0700 "$dir/munge"
  chmod 0755 "$dir"
  # Fake GPUs: slurmd wants character devices (regular files are refused).
  for i in 0 1 2 3 4 5 6 7; do
    [[ -c "$dir/dev/nvidia$i" ]] || mknod "$dir/dev/nvidia$i" c 195 "$i"
  done
  local plugins=""
  if [[ -n "${TIDEGATE_JOB_SUBMIT_LUA:-}" ]]; then
    cp "$TIDEGATE_JOB_SUBMIT_LUA" "$dir/job_submit.lua"
    plugins="JobSubmitPlugins=lua"
  fi
  cat >"$dir/slurm.conf" <<EOF
ClusterName=tidegate-test
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state/ctld
SlurmdSpoolDir=$dir/state/d
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
DefMemPerNode=1000
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
MpiDefault=none
KillWait=2
MinJobAge=300
SchedulerParameters=sched_interval=2
$plugins
NodeName=$host CPUs=16 RealMemory=64000 Gres=gpu:h100:8 State=UNKNOWN
PartitionName=gpu Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$dir/gres.conf" <<EOF
AutoDetect=off
NodeName=$host Name=gpu Type=h100 File=$dir/dev/nvidia[0-7]
EOF
}

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_munged() {
  alive "$dir/munged.pid.run" && return 0
  local key=/etc/munge/munge.key
  if [[ ! -f "$key" ]]; then
    runuser -u munge -- mungekey --create --keyfile="$key" >/dev/null 2>&1 || mungekey --create --keyfile="$key"
    chown munge:munge "$key"
  fi
  runuser -u munge -- munged --foreground --force --socket="$dir/munge/munge.socket" \
    --key-file="$key" --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" >"$dir/log/munged.out" 2>&1 &
  echo $! >"$dir/munged.pid.run"
  if ! wait_for 10 bash -c "munge -S '$dir/munge/munge.socket' -n | unmunge -S '$dir/munge/munge.socket'"; then
    log "munged did not come up"; cat "$dir/log/munged.out" "$dir/munge/munged.log" >&2 || true
    return 1
  fi
}

start_slurmctld() {
  SLURM_CONF="$dir/slurm.conf" slurmctld -D -i >"$dir/log/slurmctld.out" 2>&1 &
  echo $! >"$dir/slurmctld.pid.run"
  if ! wait_for 30 env SLURM_CONF="$dir/slurm.conf" scontrol ping; then
    log "slurmctld did not come up"; tail -20 "$dir/log/slurmctld.log" >&2 || true
    return 1
  fi
}

start_slurmd() {
  SLURM_CONF="$dir/slurm.conf" slurmd -D >"$dir/log/slurmd.out" 2>&1 &
  echo $! >"$dir/slurmd.pid.run"
}

node_idle() {
  local s
  s=$(SLURM_CONF="$dir/slurm.conf" sinfo -h -o %T 2>/dev/null | head -1)
  [[ "$s" == idle || "$s" == mixed || "$s" == allocated ]]
}

stop_pid() {  # $1 = pid file, $2 = name
  local f=$1
  [[ -f "$f" ]] || return 0
  local pid
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { log "$2 ($pid) ignored SIGTERM; SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; }
  fi
  rm -f "$f"
}

case "$cmd" in
  start)
    if [[ $(id -u) -ne 0 ]]; then
      log "needs root (slurmd and mknod); skipping"
      exit 77
    fi
    install_packages
    write_config
    start_munged
    start_slurmctld
    start_slurmd
    if ! wait_for 60 node_idle; then
      log "node did not become idle"; SLURM_CONF="$dir/slurm.conf" sinfo -N -l >&2 || true
      tail -20 "$dir/log/slurmd.log" >&2 || true
      exit 1
    fi
    log "up: SLURM_CONF=$dir/slurm.conf"
    ;;
  stop)
    # Jobs' processes are children of slurmstepd, which slurmd's SIGTERM does not end:
    # cancel what runs first so no job outlives the cluster.
    if alive "$dir/slurmctld.pid.run"; then
      SLURM_CONF="$dir/slurm.conf" scancel --quiet --full --state=RUNNING --signal=KILL $(SLURM_CONF="$dir/slurm.conf" squeue -h -o %i 2>/dev/null) 2>/dev/null || true
      SLURM_CONF="$dir/slurm.conf" scancel --quiet $(SLURM_CONF="$dir/slurm.conf" squeue -h -o %i 2>/dev/null) 2>/dev/null || true
      wait_for 10 bash -c "[[ -z \$(SLURM_CONF='$dir/slurm.conf' squeue -h -t running -o %i) ]]" || true
    fi
    stop_pid "$dir/slurmd.pid.run" slurmd
    stop_pid "$dir/slurmctld.pid.run" slurmctld
    stop_pid "$dir/munged.pid.run" munged
    ;;
  restart-ctld)
    stop_pid "$dir/slurmctld.pid.run" slurmctld
    SLURM_CONF="$dir/slurm.conf" slurmctld -D >>"$dir/log/slurmctld.out" 2>&1 &
    echo $! >"$dir/slurmctld.pid.run"
    wait_for 30 env SLURM_CONF="$dir/slurm.conf" scontrol ping || { log "slurmctld did not come back"; exit 1; }
    ;;
  env)
    echo "export SLURM_CONF=$dir/slurm.conf"
    ;;
  *)
    echo "usage: $0 start|stop|restart-ctld|env DIR" >&2
    exit 2
    ;;
esac
