#!/usr/bin/python3
"""One ledger across Kubernetes and SLURM: one tidegated, the SLURM agent on
a real one-node SLURM (tests/slurm/cluster.sh, on its own ports and munge
socket so it can run beside tests/slurm/slurm_test.sh) and the Kubernetes
agent on the test API server, 8 GPUs each. The organisation's quota is 8
GPUs over both clusters; team research has one guarantee (4 GPUs, may borrow
4) for jobs in both clusters; serving has 4.

  1. research runs 4 GPUs on SLURM (within its guarantee) and 4 on
     Kubernetes (borrowed): one team, one ledger, 8 GPUs used.
  2. serving asks for 4 GPUs on SLURM. SLURM has 4 free GPUs, so the
     cluster's capacity does not bind; the quota does (the organisation's 8
     GPUs are all used). The broker reclaims the borrower on the other cluster:
     the Kubernetes Job is suspended and its pods go, serving's SLURM job
     runs, research's SLURM job keeps running.

  tests/kubernetes/mixed_test.py BIN_DIR
Exit 0 pass, 1 fail, 77 skipped (not root, or SLURM cannot run here).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from k8s_env import Agent, ApiServer, Broker, check, failures, make_certs, wait_for, write_kubeconfig  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER_SH = os.path.join(HERE, "..", "slurm", "cluster.sh")
CONFIG = """\
clusters:
  - {name: hpc, kind: slurm, capacity: {gpu: 8}}
  - {name: k8s, kind: kubernetes, capacity: {gpu: 8}}
teams:
  - {name: org, quota: {gpu: {guaranteed: 8, borrow_limit: 0, lend_limit: 0}}}
  - {name: research, parent: org, quota: {gpu: {guaranteed: 4, borrow_limit: 4}}}
  - {name: serving, parent: org, quota: {gpu: {guaranteed: 4}}, preemption: {reclaim: any}}
policy: {default_grace_s: 3, tick_s: 1, requeue_backoff_s: 0}
"""


def main():
    if os.geteuid() != 0:
        print("SKIP: the mixed test needs root for its SLURM cluster")
        return 77
    bin_dir = os.path.abspath(sys.argv[1])
    d = tempfile.mkdtemp(prefix="tidegate-mixed-")
    os.chmod(d, 0o755)
    env = dict(os.environ, SLURM_CTLD_PORT=os.environ.get("MIXED_CTLD_PORT", "16917"),
               SLURMD_PORT=os.environ.get("MIXED_SLURMD_PORT", "16918"))
    rc = subprocess.run([CLUSTER_SH, "start", f"{d}/cluster"], env=env).returncode
    if rc == 77:
        print("SKIP: SLURM cannot be installed or run here")
        shutil.rmtree(d, ignore_errors=True)
        return 77
    if rc != 0:
        print("FAIL: the test SLURM cluster did not start")
        subprocess.run([CLUSTER_SH, "stop", f"{d}/cluster"], env=env)
        return 1
    os.environ["SLURM_CONF"] = f"{d}/cluster/slurm.conf"
    make_certs(d)
    api = ApiServer(d, "mixed-token", extra=["--node", "gpu-1:nvidia.com/gpu=8"])
    write_kubeconfig(f"{d}/kubeconfig", api.url, f"{d}/ca.crt", token="mixed-token")
    broker = Broker(bin_dir, d, CONFIG)
    kube = Agent(bin_dir, d, broker, f"{d}/kubeconfig")
    slurm = subprocess.Popen([f"{bin_dir}/tidegate-agent", "--kind", "slurm", "--cluster", "hpc", "--broker",
                              broker.addr, "--poll-ms", "250"], stderr=open(f"{d}/agent-slurm.log", "w"))
    try:
        run(api, broker, kube, d)
    finally:
        slurm.terminate()
        slurm.wait()
        kube.stop()
        broker.stop()
        api.stop()
        subprocess.run([CLUSTER_SH, "stop", f"{d}/cluster"], env=env, capture_output=True)
        if failures:
            print("--- SLURM agent log (tail)\n" + "\n".join(open(f"{d}/agent-slurm.log").read().splitlines()[-20:]))
            print("--- Kubernetes agent log (tail)\n" + "\n".join(kube.log().splitlines()[-20:]))
        shutil.rmtree(d, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all mixed SLURM + Kubernetes checks passed")
    return 0


def sbatch(*args):
    out = subprocess.run(["sbatch", "--parsable", *args], capture_output=True, text=True, check=True).stdout
    return out.strip().split(";")[0]


def slurm_state(job):
    return subprocess.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"], capture_output=True,
                          text=True).stdout.strip()


def run(api, broker, kube, d):
    check(wait_for(lambda: "reconciled our view" in kube.log(), 30), "the Kubernetes agent connected")
    check(wait_for(lambda: "reconciled our view" in open(f"{d}/agent-slurm.log").read(), 30),
          "the SLURM agent connected")
    # 1. One team, jobs in both clusters.
    own = sbatch("--hold", "--account=research", "--gres=gpu:h100:4", "--no-requeue", "--wrap", "sleep 300")
    check(wait_for(lambda: slurm_state(own) == "RUNNING", 60) and broker.state(f"slurm:{own}") == "admitted",
          f"research's SLURM job {own} (4 GPUs, within its guarantee) runs")
    api.create_job("borrow", team="research", gpus=1, parallelism=4, grace=1)
    check(wait_for(lambda: len(api.pods("borrow", running_only=True)) == 4, 30) and
          broker.info("k8s:default/borrow").get("borrowing") is True,
          "research's Kubernetes Job (4 GPUs) runs, borrowing under the same guarantee")
    # 2. Serving's owner on SLURM: the quota binds, not SLURM's capacity (4 GPUs free there).
    owner = sbatch("--hold", "--account=serving", "--gres=gpu:h100:4", "--no-requeue", "--wrap", "sleep 300")
    check(wait_for(lambda: api.suspended("borrow"), 30), "the reclaim suspends the borrower on Kubernetes")
    check(wait_for(lambda: not api.pods("borrow"), 30), "the borrower's pods are gone")
    check(wait_for(lambda: slurm_state(owner) == "RUNNING", 60) and broker.state(f"slurm:{owner}") == "admitted",
          f"serving's SLURM job {owner} runs")
    check(slurm_state(own) == "RUNNING" and broker.state(f"slurm:{own}") == "admitted",
          "research's SLURM job within its guarantee was not touched")
    check(wait_for(lambda: broker.state("k8s:default/borrow") == "queued"), "the borrower waits again, queued")
    subprocess.run(["scancel", own, owner])


if __name__ == "__main__":
    sys.exit(main())
