"""The test API server's cluster: object defaults (complete Job, Pod, Node,
PriorityClass and Event objects, as the Python client insists), graceful pod
deletion, and one control loop that plays the Job controller, the scheduler
and the kubelets.

Job controller: keeps min(parallelism, completions - succeeded) pods of an
unsuspended Job, deletes its pods (with their termination grace) when it is
suspended or its parallelism drops, marks it Complete or Failed.
Scheduler: binds a pending pod to a Ready, schedulable Node whose allocatable
extended resources (nvidia.com/...) still fit it; else it stays Pending,
Unschedulable. Kubelet: a bound pod runs; a container whose command is
`sleep N` succeeds after N s, `false` fails; a deleted pod gets SIGTERM and
goes at its grace deadline (SIGKILL), or sooner when its annotation
`fake.tidegate.io/exit-after-term-s` says it exits on SIGTERM.
"""
import copy
import threading
import time
import uuid

from fake_store import BY_PLURAL, now_rfc3339, parse_rfc3339

JOBS = BY_PLURAL[("batch", "jobs")]
PODS = BY_PLURAL[("", "pods")]
NODES = BY_PLURAL[("", "nodes")]
EVENTS = BY_PLURAL[("", "events")]


def container_defaults(c):
    c.setdefault("imagePullPolicy", "IfNotPresent")
    c.setdefault("resources", {})
    r = c["resources"]
    # Extended resources: requests default to limits (and must equal them).
    for k, v in (r.get("limits") or {}).items():
        r.setdefault("requests", {}).setdefault(k, v)
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")


def pod_spec_defaults(spec):
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        container_defaults(c)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)


def invalid(kind, name, field, message, reason="FieldValueInvalid"):
    from fake_store import ApiError
    return ApiError(422, "Invalid", f'{kind}.batch "{name}" is invalid: {field}: {message}',
                    {"name": name, "group": "batch", "kind": kind,
                     "causes": [{"reason": reason, "message": message, "field": field}]})


def defaults(store):
    """The store's `defaults` hook (admission defaulting and validation)."""

    def hook(res, obj, old):
        meta = obj["metadata"]
        kind = res[3]
        if kind == "Job":
            spec = obj.setdefault("spec", {})
            if old is None:
                uid = meta["uid"]
                for k in [k for k, v in spec.items() if v is None]:
                    del spec[k]  # null is unset.
                spec.setdefault("parallelism", 1)
                if "completions" not in spec and spec["parallelism"] == 1:
                    spec["completions"] = 1
                spec.setdefault("backoffLimit", 6)
                spec.setdefault("completionMode", "NonIndexed")
                spec.setdefault("suspend", False)
                spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
                spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
                tmeta = spec.setdefault("template", {}).setdefault("metadata", {})
                tmeta.setdefault("creationTimestamp", None)
                labels = tmeta.setdefault("labels", {})
                labels.update({"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
                               "batch.kubernetes.io/job-name": meta["name"], "job-name": meta["name"]})
                meta.setdefault("labels", {}).update(
                    {"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
                     "batch.kubernetes.io/job-name": meta["name"], "job-name": meta["name"]})
                obj.setdefault("status", {})
            tspec = spec.setdefault("template", {}).setdefault("spec", {})
            if tspec.get("restartPolicy") not in ("Never", "OnFailure"):
                raise invalid("Job", meta["name"], "spec.template.spec.restartPolicy",
                              f'Unsupported value: "{tspec.get("restartPolicy", "")}": supported values: '
                              '"OnFailure", "Never"', "FieldValueNotSupported")
            if not tspec.get("containers"):
                raise invalid("Job", meta["name"], "spec.template.spec.containers", "Required value",
                              "FieldValueRequired")
            if spec.get("parallelism", 0) < 0:
                raise invalid("Job", meta["name"], "spec.parallelism", "must be greater than or equal to 0")
            if old is not None and old["spec"].get("completions") != spec.get("completions") and \
                    spec.get("completionMode") != "Indexed":
                raise invalid("Job", meta["name"], "spec.completions", "field is immutable")
            pod_spec_defaults(tspec)
        elif kind == "Pod":
            pod_spec_defaults(obj.setdefault("spec", {}))
            if old is None:
                obj["status"] = {"phase": "Pending", "qosClass": "BestEffort",
                                 "conditions": [{"type": "PodScheduled", "status": "False",
                                                 "lastProbeTime": None,
                                                 "lastTransitionTime": now_rfc3339()}]}
        elif kind == "Node":
            if old is None:
                node_defaults(obj)
        elif kind == "Namespace":
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        elif kind == "PriorityClass":
            obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
            obj.setdefault("globalDefault", False)
            if "value" not in obj:
                from fake_store import ApiError
                raise ApiError(422, "Invalid", f'PriorityClass.scheduling.k8s.io "{meta["name"]}" is invalid: '
                               "value: Required value", {"name": meta["name"], "kind": "PriorityClass",
                                                         "causes": [{"reason": "FieldValueRequired",
                                                                     "field": "value"}]})
        elif kind == "Event":
            ts = now_rfc3339()
            obj.setdefault("count", 1)
            obj.setdefault("type", "Normal")
            obj.setdefault("firstTimestamp", ts)
            obj.setdefault("lastTimestamp", ts)
            obj.setdefault("source", {"component": obj.get("reportingComponent", "")})
            obj.setdefault("reportingComponent", "")
            obj.setdefault("reportingInstance", "")
            obj.setdefault("eventTime", None)
        elif kind == "Deployment" and old is None:
            obj.setdefault("spec", {}).setdefault("replicas", 1)
            obj["spec"].setdefault("strategy", {"type": "RollingUpdate"})
            obj.setdefault("status", {})

    return hook


def node_defaults(node):
    name = node["metadata"]["name"]
    st = node.setdefault("status", {})
    st.setdefault("capacity", {"cpu": "64", "memory": "512Gi", "pods": "110"})
    st.setdefault("allocatable", dict(st["capacity"]))
    ts = now_rfc3339()
    st.setdefault("conditions", [
        {"type": t, "status": "False", "reason": r, "message": m, "lastHeartbeatTime": ts, "lastTransitionTime": ts}
        for t, r, m in [("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
                        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID")]] +
        [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
          "lastHeartbeatTime": ts, "lastTransitionTime": ts}])
    st.setdefault("addresses", [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": name}])
    st.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 10250}})
    st.setdefault("nodeInfo", {
        "machineID": uuid.uuid4().hex, "systemUUID": str(uuid.uuid4()), "bootID": str(uuid.uuid4()),
        "kernelVersion": "6.1.0-test", "osImage": "Debian GNU/Linux 12 (bookworm)",
        "containerRuntimeVersion": "containerd://1.7.0", "kubeletVersion": "v1.32.4",
        "kubeProxyVersion": "v1.32.4", "operatingSystem": "linux", "architecture": "amd64"})
    node.setdefault("spec", {})
    node["metadata"].setdefault("labels", {}).update({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"})


def on_delete(store):
    """Pods go gracefully (kept with a deletionTimestamp until the kubelet ends them); a Job's
    pods follow it unless the deletion orphans them (the batch/v1 default without a policy)."""

    def hook(res, obj, opts):
        meta = obj["metadata"]
        if res[3] == "Pod":
            if obj["status"].get("phase") in ("Succeeded", "Failed") or not obj["spec"].get("nodeName"):
                return None
            grace = opts.get("gracePeriodSeconds")
            if grace is None:
                grace = obj["spec"].get("terminationGracePeriodSeconds", 30)
            if grace == 0:
                return None
            if meta.get("deletionTimestamp"):
                # A shorter grace shortens a deletion under way, as the API server does.
                left = parse_rfc3339(meta["deletionTimestamp"]) - time.time()
                if grace >= left:
                    return obj
            meta["deletionTimestamp"] = now_rfc3339(time.time() + grace)
            meta["deletionGracePeriodSeconds"] = grace
            meta.setdefault("annotations", {})["fake.tidegate.io/term-at"] = repr(time.time())
            return obj
        if res[3] == "Job":
            policy = opts.get("propagationPolicy")
            if opts.get("orphanDependents") is False:
                policy = "Background"
            for pod in owned_pods(store, obj):
                if policy in ("Background", "Foreground"):
                    store.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
                else:
                    pod["metadata"]["ownerReferences"] = []
                    store.update(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], pod, check_rv=False)
        return None

    return hook


def owned_pods(store, job):
    uid = job["metadata"]["uid"]
    items, _ = store.list(PODS, job["metadata"]["namespace"])
    return [p for p in items if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])]


def set_condition(conds, typ, status, reason, message):
    """Returns True when the condition changed."""
    ts = now_rfc3339()
    for c in conds:
        if c["type"] == typ:
            if c["status"] == status and c.get("reason") == reason:
                return False
            c.update(status=status, reason=reason, message=message, lastProbeTime=ts, lastTransitionTime=ts)
            return True
    conds.append({"type": typ, "status": status, "reason": reason, "message": message,
                  "lastProbeTime": ts, "lastTransitionTime": ts})
    return True


class Cluster:
    """The control loop (one thread): Job controller, scheduler, kubelets."""

    def __init__(self, store, tick_s=0.05):
        self.store, self.tick_s = store, tick_s
        store.defaults = defaults(store)
        store.on_delete = on_delete(store)
        self.stop = threading.Event()

    def event(self, obj, reason, message, typ="Normal", component="job-controller"):
        meta = obj["metadata"]
        ev = {"metadata": {"name": f'{meta["name"]}.{uuid.uuid4().hex[:16]}', "namespace": meta["namespace"]},
              "involvedObject": {"kind": obj["kind"], "namespace": meta["namespace"], "name": meta["name"],
                                 "uid": meta["uid"], "apiVersion": obj["apiVersion"],
                                 "resourceVersion": meta["resourceVersion"]},
              "reason": reason, "message": message, "type": typ, "source": {"component": component},
              "reportingComponent": component}
        self.store.create(EVENTS, meta["namespace"], ev)

    def run(self):
        while not self.stop.wait(self.tick_s):
            try:
                with self.store.lock:
                    self.kubelets()
                    self.schedule()
                    self.jobs()
            except Exception as e:  # a bug here must not kill the server silently.
                import traceback
                traceback.print_exc()
                print("fake cluster loop:", e, flush=True)

    # ------------------------------------------------------------ kubelets

    def kubelets(self):
        s = self.store
        now = time.time()
        for pod in s.list(PODS, None)[0]:
            meta, st, spec = pod["metadata"], pod["status"], pod["spec"]
            ns, name = meta["namespace"], meta["name"]
            if meta.get("deletionTimestamp"):
                ann = meta.get("annotations") or {}
                term_at = float(ann.get("fake.tidegate.io/term-at", now))
                exit_after = ann.get("fake.tidegate.io/exit-after-term-s")
                # The grace from the SIGTERM's exact instant (deletionTimestamp has whole seconds).
                if now >= term_at + float(meta.get("deletionGracePeriodSeconds", 0)) or \
                        (exit_after is not None and now >= term_at + float(exit_after)) or \
                        st.get("phase") in ("Succeeded", "Failed"):
                    s.remove_now(PODS, ns, name)
                continue
            if not spec.get("nodeName") or st.get("phase") in ("Succeeded", "Failed"):
                continue
            if st.get("phase") == "Pending":
                ts = now_rfc3339()
                st.update(phase="Running", startTime=ts, hostIP="10.0.0.1", podIP="10.1.0.%d" % (hash(name) % 250 + 2),
                          podIPs=[{"ip": "10.1.0.%d" % (hash(name) % 250 + 2)}], hostIPs=[{"ip": "10.0.0.1"}])
                for t in ("Initialized", "Ready", "ContainersReady", "PodReadyToStartContainers"):
                    set_condition(st["conditions"], t, "True", None, None)
                st["containerStatuses"] = [
                    {"name": c["name"], "image": c.get("image", ""), "imageID": "sha256:" + "0" * 64,
                     "containerID": "containerd://" + uuid.uuid4().hex, "ready": True, "restartCount": 0,
                     "started": True, "state": {"running": {"startedAt": ts}}, "lastState": {}}
                    for c in spec.get("containers", [])]
                s.update(PODS, ns, name, pod, subresource="status", check_rv=False)
                continue
            cmd = (spec["containers"][0].get("command") or []) + (spec["containers"][0].get("args") or [])
            started = parse_rfc3339(st["startTime"])
            phase = None
            if cmd[:1] == ["false"]:
                phase = "Failed"
            elif len(cmd) == 2 and cmd[0] == "sleep":
                try:
                    if now >= started + float(cmd[1]):
                        phase = "Succeeded"
                except ValueError:
                    pass
            if phase:
                code = 0 if phase == "Succeeded" else 1
                st["phase"] = phase
                for cs in st.get("containerStatuses", []):
                    cs.update(ready=False, started=False, state={"terminated": {
                        "exitCode": code, "reason": "Completed" if code == 0 else "Error",
                        "startedAt": st["startTime"], "finishedAt": now_rfc3339()}})
                set_condition(st["conditions"], "Ready", "False", "PodCompleted", None)
                s.update(PODS, ns, name, pod, subresource="status", check_rv=False)

    # ------------------------------------------------------------ scheduler

    @staticmethod
    def requests(pod):
        out = {}
        for c in pod["spec"].get("containers", []):
            for k, v in ((c.get("resources") or {}).get("limits") or {}).items():
                if "/" in k:
                    out[k] = out.get(k, 0) + int(v)
        return out

    def schedule(self):
        s = self.store
        pods = s.list(PODS, None)[0]
        free = {}
        for node in s.list(NODES, None)[0]:
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
            if not ready or node["spec"].get("unschedulable"):
                continue
            free[node["metadata"]["name"]] = {k: int(v) for k, v in node["status"].get("allocatable", {}).items()
                                              if "/" in k}
        for pod in pods:  # bound pods that did not end hold their node's resources (terminating ones too).
            n = pod["spec"].get("nodeName")
            if n in free and pod["status"].get("phase") not in ("Succeeded", "Failed"):
                for k, v in self.requests(pod).items():
                    free[n][k] = free[n].get(k, 0) - v
        for pod in sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"]):
            if pod["spec"].get("nodeName") or pod["metadata"].get("deletionTimestamp"):
                continue
            want = self.requests(pod)
            node = next((n for n, f in sorted(free.items()) if all(f.get(k, 0) >= v for k, v in want.items())), None)
            meta = pod["metadata"]
            if node is None:
                if set_condition(pod["status"]["conditions"], "PodScheduled", "False", "Unschedulable",
                                 f"0/{len(free)} nodes are available: insufficient resources."):
                    s.update(PODS, meta["namespace"], meta["name"], pod, subresource="status", check_rv=False)
                continue
            for k, v in want.items():
                free[node][k] -= v
            pod["spec"]["nodeName"] = node
            s.update(PODS, meta["namespace"], meta["name"], pod, check_rv=False)
            pod = s.get(PODS, meta["namespace"], meta["name"])
            set_condition(pod["status"]["conditions"], "PodScheduled", "True", None, None)
            s.update(PODS, meta["namespace"], meta["name"], pod, subresource="status", check_rv=False)

    # ------------------------------------------------------------ the Job controller

    def jobs(self):
        s = self.store
        for job in s.list(JOBS, None)[0]:
            meta, spec = job["metadata"], job["spec"]
            st = job.setdefault("status", {})
            before = copy.deepcopy(st)
            conds = st.setdefault("conditions", [])
            finished = any(c["type"] in ("Complete", "Failed") and c["status"] == "True" for c in conds)
            pods = owned_pods(s, job)
            live = [p for p in pods if not p["metadata"].get("deletionTimestamp")
                    and p["status"].get("phase") not in ("Succeeded", "Failed")]
            succeeded = sum(1 for p in pods if p["status"].get("phase") == "Succeeded") + st.get("succeeded", 0)
            failed = sum(1 for p in pods if p["status"].get("phase") == "Failed") + st.get("failed", 0)
            # Finished pods are counted once, then removed (the job-tracking finalizer's role).
            for p in pods:
                if p["status"].get("phase") in ("Succeeded", "Failed"):
                    s.remove_now(PODS, p["metadata"]["namespace"], p["metadata"]["name"])
            completions = spec.get("completions")
            want = 0
            if not finished and not spec.get("suspend"):
                if completions is None:
                    want = 0 if succeeded > 0 else spec.get("parallelism", 1)
                else:
                    want = max(0, min(spec.get("parallelism", 1), completions - succeeded))
            if finished or spec.get("suspend"):
                want = 0
            if not finished and failed > spec.get("backoffLimit", 6):
                set_condition(conds, "FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
                set_condition(conds, "Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
                self.event(job, "BackoffLimitExceeded", "Job has reached the specified backoff limit", "Warning")
                want, finished = 0, True
            elif not finished and ((completions is not None and succeeded >= completions) or
                                   (completions is None and succeeded > 0 and not live)):
                set_condition(conds, "SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods")
                set_condition(conds, "Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods")
                st["completionTime"] = now_rfc3339()
                self.event(job, "Completed", "Job completed")
                finished = True
            if len(live) > want:  # newest first, as the Job controller does.
                for p in sorted(live, key=lambda p: p["metadata"]["creationTimestamp"], reverse=True)[:len(live) - want]:
                    s.delete(PODS, p["metadata"]["namespace"], p["metadata"]["name"])
                    self.event(job, "SuccessfulDelete", f'Deleted pod: {p["metadata"]["name"]}')
                live = sorted(live, key=lambda p: p["metadata"]["creationTimestamp"])[:want]
            elif len(live) < want:
                for _ in range(want - len(live)):
                    pod = self.new_pod(job)
                    s.create(PODS, meta["namespace"], pod)
                    self.event(job, "SuccessfulCreate", f'Created pod: {pod["metadata"]["name"]}')
                live = owned_pods(s, job)
                live = [p for p in live if not p["metadata"].get("deletionTimestamp")]
            if not finished:
                if spec.get("suspend"):
                    if set_condition(conds, "Suspended", "True", "JobSuspended", "Job suspended"):
                        self.event(job, "Suspended", "Job suspended")
                    st.pop("startTime", None)
                else:
                    if any(c["type"] == "Suspended" for c in conds) and \
                            set_condition(conds, "Suspended", "False", "JobResumed", "Job resumed"):
                        self.event(job, "Resumed", "Job resumed")
                    st.setdefault("startTime", now_rfc3339())
            all_pods = owned_pods(s, job)
            st["active"] = len(live)
            st["ready"] = sum(1 for p in live if p["status"].get("phase") == "Running")
            st["terminating"] = sum(1 for p in all_pods if p["metadata"].get("deletionTimestamp"))
            st["succeeded"], st["failed"] = succeeded, failed
            st.setdefault("uncountedTerminatedPods", {})
            for k in ("active", "succeeded", "failed"):
                if st[k] == 0:
                    st.pop(k)
            if not conds:
                st.pop("conditions")
            if st != before:
                s.update(JOBS, meta["namespace"], meta["name"], job, subresource="status", check_rv=False)

    @staticmethod
    def new_pod(job):
        meta = job["metadata"]
        tmpl = copy.deepcopy(job["spec"]["template"])
        pmeta = tmpl.get("metadata") or {}
        pmeta.pop("creationTimestamp", None)
        pmeta.update(generateName=meta["name"] + "-", namespace=meta["namespace"],
                     ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"],
                                       "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}])
        return {"metadata": pmeta, "spec": tmpl.get("spec", {})}
