#!/usr/bin/python3
"""The test API server against real clients nobody here wrote: kubectl
(create, get, watch, patch of the three types, describe, replace with a stale
version, delete, apply of deploy/kubernetes) and Debian's python3-kubernetes
(list, patch, watch with bookmarks, reconnect from a version, 410 after a
compaction). kubectl is skipped with a message where it is not installed.

  tests/kubernetes/fidelity_test.py
Exit 0 pass, 1 fail, 77 when python3-kubernetes is missing too.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from k8s_env import check, failures, wait_for  # noqa: E402


JOB = {"apiVersion": "batch/v1", "kind": "Job",
       "metadata": {"name": "train", "labels": {"tidegate.io/team": "research"}},
       "spec": {"suspend": True, "parallelism": 2, "completions": 2, "template": {"spec": {
           "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
           "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "600"],
                           "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}


def start_server(tmp):
    out = open(os.path.join(tmp, "server.out"), "w+")
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_apiserver.py"), "--port", "0",
                             "--bookmark-s", "0.3", "--node", "gpu-1:nvidia.com/gpu=8"],
                            stdout=out, stderr=subprocess.STDOUT)
    url = None

    def ready():
        nonlocal url
        out.seek(0)
        for line in out.read().splitlines():
            if "listening on " in line:
                url = line.split("listening on ")[1].strip()
        return url is not None
    if not wait_for(ready, 20):
        out.seek(0)
        print(out.read())
        sys.exit("FAIL: the test API server did not start")
    return proc, url


def kubectl_checks(url, tmp):
    env = dict(os.environ, HOME=tmp, KUBECONFIG=os.path.join(tmp, "none"))

    def k(*args, ok=True, input=None):
        r = subprocess.run(["kubectl", "--server", url, *args], env=env, capture_output=True, text=True,
                           input=input, timeout=60)
        if ok and r.returncode != 0:
            print(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r

    path = os.path.join(tmp, "job.json")
    with open(path, "w") as f:
        json.dump(JOB, f)
    check(k("create", "-f", path).returncode == 0, "kubectl create -f job")
    again = k("create", "-f", path, ok=False)
    check(again.returncode != 0 and "AlreadyExists" in again.stderr, f"a second create is AlreadyExists ({again.stderr.strip()})")
    got = json.loads(k("get", "job", "train", "-o", "json").stdout or "{}")
    check(got.get("spec", {}).get("suspend") is True and got["spec"]["template"]["metadata"]["labels"].get("job-name") == "train",
          "kubectl get -o json: the Job as created, defaulted")
    lst = json.loads(k("get", "jobs", "-A", "-o", "json").stdout or "{}")
    check([i["metadata"]["name"] for i in lst.get("items", [])] == ["train"], "kubectl get jobs -A")

    watch = subprocess.Popen(["kubectl", "--server", url, "get", "jobs", "-w", "--output-watch-events", "-o",
                              "custom-columns=EVENT:.type,NAME:.object.metadata.name,PAR:.object.spec.parallelism"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    reader = threading.Thread(target=lambda: [lines.append(l) for l in watch.stdout], daemon=True)
    reader.start()
    check(wait_for(lambda: any("ADDED" in l for l in lines)), "kubectl get -w: ADDED for the current state")
    check(k("patch", "job", "train", "-p", '{"spec":{"parallelism":3}}').returncode == 0, "kubectl patch (strategic)")
    check(wait_for(lambda: any("MODIFIED" in l and " 3" in l for l in lines)), "kubectl get -w sees the patch")
    watch.terminate()
    watch.wait()
    check(k("patch", "job", "train", "--type", "merge", "-p", '{"spec":{"suspend":false}}').returncode == 0,
          "kubectl patch --type merge")
    check(k("patch", "job", "train", "--type", "json", "-p",
            '[{"op":"replace","path":"/spec/parallelism","value":2}]').returncode == 0, "kubectl patch --type json")
    check(wait_for(lambda: len(json.loads(k("get", "pods", "-l", "job-name=train", "-o", "json").stdout)["items"]) == 2),
          "the Job controller runs parallelism=2 pods once unsuspended")
    noop = k("patch", "job", "train", "--type", "merge", "-p", '{"spec":{"parallelism":2}}')
    check("no change" in noop.stdout, f"a no-op patch is reported as such ({noop.stdout.strip()})")
    stale = dict(got)
    stale["spec"] = dict(got["spec"], parallelism=5)
    with open(os.path.join(tmp, "stale.json"), "w") as f:
        json.dump(stale, f)
    conflict = k("replace", "-f", os.path.join(tmp, "stale.json"), ok=False)
    check(conflict.returncode != 0 and "the object has been modified" in conflict.stderr,
          f"kubectl replace with a stale resourceVersion is a 409 Conflict ({conflict.stderr.strip()[:90]})")
    desc = k("describe", "job", "train").stdout
    check("Resumed" in desc and "SuccessfulCreate" in desc, "kubectl describe job shows its Events")
    check(k("delete", "job", "train", "--wait=true").returncode == 0, "kubectl delete job (waits for the 404)")
    check(wait_for(lambda: json.loads(k("get", "pods", "-o", "json").stdout)["items"] == [], 15),
          "the Job's pods go with it (background propagation)")
    nf = k("get", "job", "train", ok=False)
    check(nf.returncode != 0 and 'jobs.batch "train" not found' in nf.stderr, "kubectl get of a deleted Job: NotFound")
    deploy = os.path.join(ROOT, "deploy", "kubernetes")
    if os.path.isdir(deploy):
        r = k("kustomize", deploy)
        kinds = sorted(l.split(":", 1)[1].strip() for l in r.stdout.splitlines() if l.startswith("kind:"))
        check(r.returncode == 0 and kinds == sorted(["ClusterRole", "ClusterRoleBinding", "Deployment", "Job",
                                                      "MutatingWebhookConfiguration", "Namespace", "Service",
                                                      "ServiceAccount"]),
              f"kubectl kustomize deploy/kubernetes renders ({kinds})")
        r = k("apply", "-k", deploy)
        check(r.returncode == 0, f"kubectl apply -k deploy/kubernetes ({(r.stdout + r.stderr).strip()[:300]})")
        r = k("apply", "-k", deploy)
        check(r.returncode == 0 and "unchanged" in r.stdout, "a second kubectl apply -k changes nothing")
    # The broker's own manifests: a StatefulSet, its Service and the generated ConfigMap.
    broker = os.path.join(ROOT, "deploy", "broker-kubernetes")
    if os.path.isdir(broker):
        r = k("kustomize", broker)
        kinds = sorted(l.split(":", 1)[1].strip() for l in r.stdout.splitlines() if l.startswith("kind:"))
        check(r.returncode == 0 and kinds == ["ConfigMap", "Namespace", "Service", "StatefulSet"],
              f"kubectl kustomize deploy/broker-kubernetes renders ({kinds})")
        r = k("apply", "-k", broker)
        check(r.returncode == 0, f"kubectl apply -k deploy/broker-kubernetes ({(r.stdout + r.stderr).strip()[:300]})")
        r = k("apply", "-k", broker)
        check(r.returncode == 0 and "unchanged" in r.stdout and "configured" not in r.stdout,
              f"a second kubectl apply -k deploy/broker-kubernetes changes nothing ({r.stdout.strip()[:200]})")
        sts = json.loads(k("get", "statefulset", "tidegated", "-n", "tidegate", "-o", "json").stdout)
        volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"].get("volumes", [])}
        config_map = next((v["configMap"]["name"] for v in volumes.values() if "configMap" in v), "")
        check(config_map.startswith("tidegate-config-") and
              k("get", "configmap", config_map, "-n", "tidegate").returncode == 0,
              f"the StatefulSet mounts the generated ConfigMap, which is stored ({config_map})")
        svc = json.loads(k("get", "service", "tidegated", "-n", "tidegate", "-o", "json").stdout)
        check(svc["spec"]["selector"] == sts["spec"]["selector"]["matchLabels"],
              f"the Service selects the StatefulSet's pods ({svc['spec'].get('selector')})")


def python_checks(url):
    from kubernetes import client, watch
    from kubernetes.client.rest import ApiException
    c = client.Configuration()
    c.host = url
    api = client.ApiClient(c)
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    nodes = core.list_node()
    check([n.metadata.name for n in nodes.items] == ["gpu-1"] and
          nodes.items[0].status.allocatable["nvidia.com/gpu"] == "8", "python: list_node with allocatable GPUs")
    job = batch.create_namespaced_job("default", JOB)
    lst = batch.list_job_for_all_namespaces()
    rv = lst.metadata.resource_version
    check(len(lst.items) == 1 and int(rv) >= int(job.metadata.resource_version), "python: list jobs with a version")
    batch.patch_namespaced_job("train", "default", {"spec": {"parallelism": 1}})
    w = watch.Watch()
    seen = []
    for ev in w.stream(batch.list_namespaced_job, "default", resource_version=rv, allow_watch_bookmarks=True,
                       timeout_seconds=5):
        seen.append((ev["type"], ev["object"].spec.parallelism if ev["type"] != "BOOKMARK" else None))
        if ev["type"] == "BOOKMARK":
            w.stop()
    # The Job controller may write the Job's status between the list and the patch: those come first.
    check(("MODIFIED", 1) in seen and seen[-2] == ("MODIFIED", 1) and seen[-1][0] == "BOOKMARK",
          f"python: a watch from the list's version replays the patch, then a bookmark ({seen})")
    # Reconnect: a dropped watch resumes from the last version without replaying.
    last = w.resource_version
    got = []

    def drop_later():
        time.sleep(0.3)
        urllib.request.urlopen(urllib.request.Request(url + "/_fake/drop-watches", data=b"{}", method="POST"))
    threading.Thread(target=drop_later).start()
    for ev in watch.Watch().stream(batch.list_namespaced_job, "default", resource_version=last, timeout_seconds=5):
        got.append(ev["type"])
    batch.patch_namespaced_job("train", "default", {"metadata": {"labels": {"x": "y"}}})
    again = []
    w2 = watch.Watch()
    for ev in w2.stream(batch.list_namespaced_job, "default", resource_version=last, timeout_seconds=5):
        again.append((ev["type"], ev["object"].metadata.labels.get("x")))
        w2.stop()
    check(got == [] and again == [("MODIFIED", "y")], f"python: a reconnected watch resumes where it was ({got}, {again})")
    # Compaction: an old version is 410 Expired; a relist gives a fresh one.
    urllib.request.urlopen(urllib.request.Request(url + "/_fake/compact", data=b"{}", method="POST"))
    expired = None
    try:
        for ev in watch.Watch().stream(batch.list_namespaced_job, "default", resource_version=last, timeout_seconds=5):
            pass
    except ApiException as e:
        expired = e.status
    check(expired == 410, f"python: a watch from a compacted version is 410 Expired ({expired})")
    try:
        batch.read_namespaced_job("nope", "default")
        status = None
    except ApiException as e:
        status = (e.status, json.loads(e.body)["reason"])
    check(status == (404, "NotFound"), f"python: a missing Job is a 404 NotFound Status ({status})")
    batch.delete_namespaced_job("train", "default", propagation_policy="Background")


def main():
    tmp = tempfile.mkdtemp(prefix="tidegate-k8s-fidelity-")
    proc, url = start_server(tmp)
    try:
        try:
            import kubernetes  # noqa: F401
            python_checks(url)
        except ImportError:
            print("SKIP: python3-kubernetes is not installed (apt-get install python3-kubernetes)")
        if shutil.which("kubectl"):
            kubectl_checks(url, tmp)
        else:
            print("SKIP: kubectl is not installed; the kubectl fidelity checks did not run")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all fidelity checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
