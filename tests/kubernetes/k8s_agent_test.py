#!/usr/bin/python3
"""The Kubernetes agent end to end: the real tidegated and tidegate-agent
--kind kubernetes against the test API server over HTTPS (a test CA made
with openssl; the agent's kubeconfig carries the CA inline and a bearer
token, after its restart a client certificate). One 8-GPU node.

  tests/kubernetes/k8s_agent_test.py BIN_DIR

Checks, in order: a suspended Job within quota is unsuspended and its pods
run; a Job over quota stays suspended with the broker's reason in its
annotation, one Event (although the agent's watch cache lags) and `kubectl
describe` (when kubectl is installed); bad
input stays suspended with a reason and one log line; a reclaim suspends the
borrower, its pods go after their grace and the owner starts; a restarted
agent adopts a Job that started without it; an API-server restart that lost
the watch history (410) relists without losing or double-counting; an
elastic Job's parallelism follows a grow and a shrink; a victim whose
pods outlast the broker's deadline has them deleted; completion, failure and
deletion release. Prints the admission round trip and reclaim latency.
Exit 0 pass, 1 fail.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from k8s_env import Agent, ApiServer, Broker, check, failures, make_certs, wait_for, write_kubeconfig  # noqa: E402

CONFIG = """\
clusters:
  - {name: k8s, kind: kubernetes, capacity: {gpu: 8}}
teams:
  - {name: research, quota: {gpu: {guaranteed: 4, borrow_limit: 4}}}
  - {name: serving, quota: {gpu: {guaranteed: 4}}, preemption: {reclaim: any}}
policy: {default_grace_s: 4, tick_s: 1, requeue_backoff_s: 0}
"""
GRACE_S = 4  # the broker's; the borrower's pods have terminationGracePeriodSeconds 2.


def main():
    bin_dir = os.path.abspath(sys.argv[1])
    d = tempfile.mkdtemp(prefix="tidegate-k8s-")
    make_certs(d)
    token = "test-token-" + os.urandom(6).hex()
    api = ApiServer(d, token, extra=["--node", "gpu-1:nvidia.com/gpu=8"])
    write_kubeconfig(f"{d}/kubeconfig", api.url, f"{d}/ca.crt", token=token)
    write_kubeconfig(f"{d}/kubeconfig-cert", api.url, f"{d}/ca.crt", cert=f"{d}/client.crt", key=f"{d}/client.key")
    broker = Broker(bin_dir, d, CONFIG)
    agent = Agent(bin_dir, d, broker, f"{d}/kubeconfig", extra=[
        "--webhook-listen", "127.0.0.1:0", "--webhook-cert", f"{d}/server.crt", "--webhook-key", f"{d}/server.key"])
    try:
        run(api, broker, agent, d)
    finally:
        agent.stop()
        broker.stop()
        api.stop()
        if failures or os.environ.get("KEEP"):
            print("--- agent log (tail)")
            print("\n".join(agent.log().splitlines()[-40:]))
            with open(f"{d}/apiserver.out") as f:
                print("--- API server log (tail)\n" + "\n".join(f.read().splitlines()[-20:]))
        if not os.environ.get("KEEP"):
            shutil.rmtree(d, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all Kubernetes agent checks passed")
    return 0


def run(api, broker, agent, d):
    check(wait_for(lambda: "reconciled our view" in agent.log(), 30), "the agent connected over HTTPS")
    check(wait_for(lambda: broker.cli("quota", "-o", "json").returncode == 0), "the broker answers")

    # ------------------------------------------------------------ 0. the admission webhook
    check(wait_for(lambda: "admission webhook on https://" in agent.log()), "the agent serves its webhook")
    port = agent.log().split("admission webhook on https://")[1].split()[0].rsplit(":", 1)[1]

    def review(labels, suspend):
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": "r-1", "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"}, "operation": "CREATE",
            "namespace": "default", "name": "w",
            "object": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "w", "labels": labels},
                       "spec": {"suspend": suspend, "template": {"spec": {"containers": []}}}}}}
        req = urllib.request.Request(f"https://127.0.0.1:{port}/mutate", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=api.ctx, timeout=10) as r:
            return json.loads(r.read())["response"]
    gated = review({"tidegate.io/team": "research"}, False)
    patch = json.loads(base64.b64decode(gated.get("patch", "")) or b"[]")
    check(gated["uid"] == "r-1" and gated["allowed"] and gated.get("patchType") == "JSONPatch" and
          patch == [{"op": "add", "path": "/spec/suspend", "value": True}],
          f"the webhook (HTTPS, verified) suspends a labelled Job: {patch}")
    plain = review({}, False)
    check(plain["allowed"] and "patch" not in plain, "the webhook leaves an unlabelled Job alone")
    # Registered as deploy/kubernetes/webhook.yaml registers it (by URL here: no cluster DNS), the
    # API server calls it: a labelled Job created without suspend is stored suspended.
    with open(f"{d}/ca.crt", "rb") as f:
        ca_bundle = base64.b64encode(f.read()).decode()
    hook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "tidegate-suspend-jobs"},
            "webhooks": [{"name": "suspend-jobs.tidegate.io", "admissionReviewVersions": ["v1"],
                          "sideEffects": "None", "failurePolicy": "Ignore", "timeoutSeconds": 5,
                          "clientConfig": {"url": f"https://127.0.0.1:{port}/mutate", "caBundle": ca_bundle},
                          "rules": [{"operations": ["CREATE"], "apiGroups": ["batch"], "apiVersions": ["v1"],
                                     "resources": ["jobs"]}],
                          "objectSelector": {"matchExpressions": [{"key": "tidegate.io/team", "operator": "Exists"}]}}]}
    api.call("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", hook)
    created = api.create_job("hooked", suspend=False)
    plain_job = api.create_job("unmanaged", team=None, suspend=False)
    check(created["spec"]["suspend"] is True and plain_job["spec"]["suspend"] is False,
          "through the API server, the webhook creates a labelled Job suspended (and leaves others alone)")
    api.call("DELETE", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/tidegate-suspend-jobs")
    for j in ("hooked", "unmanaged"):
        api.delete_job(j)
    check(wait_for(lambda: broker.gone("k8s:default/hooked")), "the hooked Job leaves the broker when deleted")

    # ------------------------------------------------------------ 1. admitted, pods run
    rounds = []
    for i in range(5):
        t0 = time.time()
        api.create_job(f"round-{i}", gpus=1)
        if not wait_for(lambda: api.unsuspended(f"round-{i}"), 30):
            check(False, f"round-{i} was not unsuspended")
            break
        rounds.append(time.time() - t0)
        api.delete_job(f"round-{i}")
        wait_for(lambda: broker.gone(f"k8s:default/round-{i}"), 30) or check(False, f"round-{i} not released")
    api.create_job("a", gpus=1, parallelism=2)
    check(wait_for(lambda: api.unsuspended("a") and len(api.pods("a", running_only=True)) == 2) and
          broker.state("k8s:default/a") == "admitted",
          "a suspended Job within quota is unsuspended and its 2 pods run")
    check(api.reason("a") == "tidegate: admitted" and wait_for(lambda: "tidegate: admitted" in api.events("a")),
          f"its annotation and an Event say it was admitted ('{api.reason('a')}')")

    # ------------------------------------------------------------ 2. over quota stays suspended
    # The agent's cache sees every change half a second late (several of its 100 ms polls), as a slow
    # informer does: it must still patch the reason and record its Event once, not once per poll.
    api.call("POST", "/_fake/watch-lag", {"seconds": 0.5})
    api.create_job("big", gpus=1, parallelism=8)
    check(wait_for(lambda: api.reason("big").startswith("tidegate: queued:")) and api.suspended("big") and
          broker.state("k8s:default/big") == "queued" and not api.pods("big"),
          f"a Job over quota stays suspended: '{api.reason('big')}'")
    # The agent patches the annotation, then posts the Event: the Event may come a moment later.
    check(wait_for(lambda: any(m.startswith("tidegate: queued:") for m in api.events("big"))),
          "an Event carries the reason")
    if shutil.which("kubectl"):
        env = dict(os.environ, KUBECONFIG=f"{d}/kubeconfig", HOME=d)
        desc = subprocess.run(["kubectl", "describe", "job", "big"], env=env, capture_output=True, text=True).stdout
        check("tidegate: queued:" in desc, "kubectl describe job shows 'tidegate: queued: ...'")
    else:
        print("SKIP: kubectl is not installed; `kubectl describe` not checked (the annotation and Event are)")
    api.delete_job("big")
    check(wait_for(lambda: broker.gone("k8s:default/big")), "a deleted waiting Job leaves the broker")
    # The deletion reached the agent after the reason it wrote (a watch keeps order): no later poll
    # can write it again, so the count is final.
    api.call("POST", "/_fake/watch-lag", {"seconds": 0})
    queued = [m for m in api.events("big") if m.startswith("tidegate: queued:")]
    check(queued and len(queued) == len(set(queued)),
          f"one Event per reason although the cache lags, not one per poll ({len(queued)} Events)")

    # ------------------------------------------------------------ 3. bad input stays suspended
    api.create_job("noteam", team="")
    api.create_job("unknown", team="nobody")
    api.create_job("indexed", extra_spec={"completionMode": "Indexed"})
    ok = wait_for(lambda: "no team" in api.reason("noteam") and "refused" in api.reason("unknown") and
                  "Indexed" in api.reason("indexed"))
    ok = ok and all(api.suspended(j) and not api.pods(j) for j in ("noteam", "unknown", "indexed"))
    check(ok, f"bad input stays suspended: '{api.reason('noteam')}' / '{api.reason('unknown')}' / "
              f"'{api.reason('indexed')}'")
    check(agent.log().count("k8s:default/noteam stays held") == 1, "one agent log line for the Job without a team")
    for j in ("noteam", "unknown", "indexed"):
        api.delete_job(j)

    # ------------------------------------------------------------ 4. reclaim
    api.delete_job("a")
    wait_for(lambda: broker.gone("k8s:default/a"))
    api.create_job("borrower", gpus=1, parallelism=8, grace=2)
    check(wait_for(lambda: len(api.pods("borrower", running_only=True)) == 8), "the borrower runs 8 pods")
    t0 = time.time()
    api.create_job("owner", team="serving", gpus=1, parallelism=4)
    check(wait_for(lambda: api.suspended("borrower")), "the reclaim suspends the borrower")
    t_suspend = time.time()
    check(wait_for(lambda: any(p["metadata"].get("deletionTimestamp") for p in api.pods("borrower"))),
          "the borrower's pods get their termination grace")
    check(wait_for(lambda: not api.pods("borrower")), "the borrower's pods are gone after their grace")
    t_gone = time.time()
    check(wait_for(lambda: len(api.pods("owner", running_only=True)) == 4, 30), "the owner's 4 pods run")
    t_owner = time.time()
    check(broker.state("k8s:default/owner") == "admitted", "the owner is admitted in the broker")
    check(wait_for(lambda: broker.state("k8s:default/borrower") == "queued") and api.suspended("borrower"),
          "the borrower waits again, suspended, queued in the broker")
    reclaim = (t_suspend - t0, t_gone - t0, t_owner - t0)

    # ------------------------------------------------------------ 5. agent restart adopts
    agent.stop()
    api.create_job("outside", gpus=1, parallelism=1, suspend=False)  # started while the agent is away
    check(wait_for(lambda: len(api.pods("outside", running_only=True)) == 1), "a Job started outside the broker runs")
    api.delete_job("borrower")
    api.create_job("later", team="serving", gpus=1)
    agent.start(kubeconfig=f"{d}/kubeconfig-cert")  # now with a client certificate
    check(wait_for(lambda: broker.state("k8s:default/outside") == "admitted") and
          wait_for(lambda: api.unsuspended("later")) and broker.gone("k8s:default/borrower"),
          "a restarted agent (client certificate) adopts a running Job, admits a new one, "
          "releases one deleted while it was away")

    # ------------------------------------------------------------ 6. API-server restart, history compacted
    before = broker.jobs()
    relists = agent.log().count("expired (410); relisting")
    api.stop()
    api.start()  # same port, same objects and versions, no watch history: watches get 410.
    check(wait_for(lambda: agent.log().count("expired (410); relisting") >= relists + 4, 30),
          "after the API-server restart the agent's watches get 410 and relist")
    api.delete_job("outside")
    api.create_job("after", gpus=1)
    check(wait_for(lambda: broker.gone("k8s:default/outside")) and wait_for(lambda: api.unsuspended("after")),
          "after the relist, a deletion releases and a new Job is admitted")
    after = [j for j in broker.jobs() if j[0] not in ("k8s:default/after",)]
    check(after == [j for j in before if j[0] != "k8s:default/outside"],
          f"nothing lost or counted twice across the restart: {before} -> {broker.jobs()}")
    for j in ("owner", "later", "after"):
        api.delete_job(j)
    check(wait_for(lambda: broker.jobs() == []), "every deleted Job left the broker")

    # ------------------------------------------------------------ 7. elastic grow and shrink
    # completions 8: a Job with parallelism 1 and no completions is defaulted to one completion, never grows.
    api.create_job("elastic", gpus=1, parallelism=1, completions=8, annotations={"tidegate.io/elastic": "1:8"})
    grown = wait_for(lambda: api.job("elastic")["spec"]["parallelism"] == 8 and
                     len(api.pods("elastic", running_only=True)) == 8 and
                     broker.info("k8s:default/elastic").get("replicas") == 8 and
                     not broker.info("k8s:default/elastic").get("resize"), 40)
    check(grown, f"an elastic Job grows to 8 (parallelism {api.job('elastic')['spec']['parallelism']}, "
                 f"broker {broker.info('k8s:default/elastic').get('replicas')})")
    api.create_job("owner2", team="serving", gpus=1, parallelism=4)
    shrunk = wait_for(lambda: api.job("elastic")["spec"]["parallelism"] == 4 and
                      len(api.pods("elastic")) == 4 and broker.info("k8s:default/elastic").get("replicas") == 4 and
                      len(api.pods("owner2", running_only=True)) == 4, 40)
    check(shrunk, f"a reclaim shrinks it to 4 and the owner runs (parallelism "
                  f"{api.job('elastic')['spec']['parallelism']}, pods {len(api.pods('elastic'))})")
    check("acked" in agent.log(), "the resizes were acked once the pods followed")

    # ------------------------------------------------------------ 8. a victim slower than its deadline
    api.delete_job("elastic")
    api.delete_job("owner2")
    check(wait_for(lambda: broker.jobs() == []), "deleted elastic and owner Jobs leave the broker")
    check(wait_for(lambda: not api.pods("elastic") and not api.pods("owner2")), "their pods are gone")
    api.create_job("slow", gpus=1, parallelism=8, grace=600)  # its pods would take 10 minutes to go
    check(wait_for(lambda: len(api.pods("slow", running_only=True)) == 8), "a borrower with a 600 s pod grace runs")
    t0 = time.time()
    api.create_job("owner3", team="serving", gpus=1, parallelism=4)
    check(wait_for(lambda: len(api.pods("owner3", running_only=True)) == 4 and not api.pods("slow"), 30),
          f"at the broker's {GRACE_S} s deadline the agent deletes the victim's pods; the owner runs "
          f"({time.time() - t0:.1f} s; slow has {[p['status'].get('phase') for p in api.pods('slow')]})")
    for j in ("slow", "owner3"):
        api.delete_job(j)
    check(wait_for(lambda: broker.jobs() == []), "and they leave the broker when deleted")

    # ------------------------------------------------------------ 9. completion and failure release
    api.create_job("short", team="serving", gpus=1, command=("sleep", "1"))
    check(wait_for(lambda: broker.state("k8s:default/short") == "admitted") and
          wait_for(lambda: broker.gone("k8s:default/short"), 30),
          "a Job that completes is released")
    api.create_job("crash", team="serving", gpus=1, command=("false",), extra_spec={"backoffLimit": 0})
    check(wait_for(lambda: "start k8s:default/crash: released" in agent.log()) and
          wait_for(lambda: broker.gone("k8s:default/crash"), 30) and
          any(c["type"] == "Failed" for c in api.job("crash")["status"].get("conditions", [])),
          "a Job that fails is released")

    print(f"figures: admission round trip (Job created suspended -> spec.suspend false), mean of {len(rounds)}: "
          f"{sum(rounds) / max(1, len(rounds)):.2f} s (max {max(rounds, default=0):.2f} s; agent --poll-ms 100)")
    print(f"figures: reclaim: owner created -> borrower suspended {reclaim[0]:.2f} s; -> borrower's pods gone "
          f"{reclaim[1]:.2f} s (pod grace 2 s); -> owner's pods running {reclaim[2]:.2f} s "
          f"(broker grace {GRACE_S} s); over the pods' grace: {reclaim[2] - reclaim[0] - 2:.2f} s")


if __name__ == "__main__":
    sys.exit(main())
