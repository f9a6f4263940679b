#!/usr/bin/env bash
# Writes a broker config with N leaf teams t0 .. t(N-1) (default 10,000) for
# the load generator's many-teams case: t0..t3, which it admits into, as in
# bench/loadgen.yaml (100,000 GPUs guaranteed each); every other team 10.
#   bench/make-teams-config.sh 10000 >/tmp/teams-10000.yaml
#   CONFIG=/tmp/teams-10000.yaml bench/run-loadgen.sh 32 8
set -euo pipefail
n=${1:-10000}
echo "clusters:"
echo "  - {name: a, capacity: {gpu: $((1000000 + n * 10))}}"
echo "teams:"
for ((i = 0; i < n; i++)); do
  echo "  - {name: t$i, quota: {gpu: {guaranteed: $((i < 4 ? 100000 : 10))}}}"
done
echo "policy: {default_grace_s: 30, tick_s: 10}"
