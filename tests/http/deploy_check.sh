#!/bin/bash
# Checks the shipped deploy/ files with the programs that will read them:
# promtool (alert rules, their unit tests, the scrape config), systemd-analyze
# verify (the units), kubectl kustomize (the broker's manifests). A checker
# that is not installed is skipped with a message; a failing one fails.
#   deploy_check.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1
bin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
checked=0
skip() { echo "SKIP: $*"; }

if command -v promtool >/dev/null; then
  promtool check rules "$src/deploy/prometheus/tidegate-alerts.yml"
  (cd "$src/tests/http" && promtool test rules alerts_test.yml)
  # The example names files in /etc/prometheus; promtool wants them to exist.
  sed "s#/etc/prometheus/#$tmp/#g" "$src/deploy/prometheus/prometheus.yml" > "$tmp/prometheus.yml"
  cp "$src/deploy/prometheus/tidegate-alerts.yml" "$tmp/"
  echo token > "$tmp/tidegate-token"
  : > "$tmp/tidegate-ca.crt"
  promtool check config --syntax-only "$tmp/prometheus.yml"
  checked=$((checked + 1))
else
  skip "promtool not installed (Debian package prometheus)"
fi
have_yaml=true
python3 -c 'import yaml' 2>/dev/null || { have_yaml=false; skip "python3-yaml not installed: YAML structure checks"; }
# Debian's Prometheus has no Kubernetes discovery: check that job as YAML.
$have_yaml && python3 - "$src/deploy/prometheus/prometheus-kubernetes.yml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
job = doc["scrape_configs"][0]
assert job["kubernetes_sd_configs"][0]["role"] == "pod", job
print("prometheus-kubernetes.yml: YAML ok")
PY

if command -v systemd-analyze >/dev/null; then
  # ExecStart must name an executable: point it at the built binaries (or
  # /bin/true for the agent when it is not built here).
  agent="$bin/tidegate-agent"; [ -x "$agent" ] || agent=/bin/true
  for unit in "$src"/deploy/systemd/*.service; do
    sed -e "s#/usr/local/bin/tidegated#$bin/tidegated#" -e "s#/usr/local/bin/tidegate-agent#$agent#" \
      "$unit" > "$tmp/$(basename "$unit")"
  done
  # Templates are verified as an instance.
  for template in "$tmp"/*@.service; do
    ln -s "$(basename "$template")" "${template%@.service}@gpu-a.service"
  done
  out=$(cd "$tmp" && systemd-analyze verify --man=no tidegated.service tidegate-agent-*@gpu-a.service 2>&1) || {
    echo "$out"; echo "FAIL: systemd-analyze verify"; exit 1; }
  # Lines about the host's own units (no systemd running in a container) are not ours.
  if echo "$out" | grep -E "tidegate" ; then echo "FAIL: systemd-analyze verify complained"; exit 1; fi
  echo "systemd units: verified"
  checked=$((checked + 1))
else
  skip "systemd-analyze not installed"
fi

if command -v kubectl >/dev/null; then
  kubectl kustomize "$src/deploy/broker-kubernetes" > "$tmp/broker.yaml"
  $have_yaml && python3 - "$tmp/broker.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = sorted(d["kind"] for d in docs)
assert kinds == ["ConfigMap", "Namespace", "Service", "StatefulSet"], kinds
sts = next(d for d in docs if d["kind"] == "StatefulSet")
pod = sts["spec"]["template"]
assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
c = pod["spec"]["containers"][0]
assert c["readinessProbe"]["httpGet"]["path"] == "/readyz", c["readinessProbe"]
assert c["livenessProbe"]["httpGet"]["path"] == "/healthz", c["livenessProbe"]
assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "ledger"
cm = next(d for d in docs if d["kind"] == "ConfigMap")
assert any(v["configMap"]["name"] == cm["metadata"]["name"] for v in pod["spec"]["volumes"] if "configMap" in v), \
    "the StatefulSet must mount the generated ConfigMap by its hashed name"
assert all(d["metadata"].get("namespace", "tidegate") == "tidegate" for d in docs)
print("kustomize: %d objects rendered: %s" % (len(docs), ", ".join(kinds)))
PY
  # The manifests' config is the example config, not a copy that drifts.
  cmp "$src/deploy/broker-kubernetes/tidegate.yaml" "$src/deploy/examples/tidegate.yaml"
  checked=$((checked + 1))
else
  skip "kubectl not installed"
fi
echo "deploy checks: $checked of 3 checkers ran"
