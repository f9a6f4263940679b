"""The test API server's storage: objects, one global resourceVersion, the
watch history, selectors and the three PATCH flavours.

Faithful where a client can tell (shared/notes/kubernetes.md): a no-op write
keeps the resourceVersion, DELETED events carry a new one, a stale update is a
409 Conflict, a watch from a version older than the kept history gets a 410
Expired, errors are Status objects.
"""
import copy
import json
import threading
import time
import uuid


def now_rfc3339(t=None):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if t is None else t))


def parse_rfc3339(s):
    return time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


# group, version, plural, kind, namespaced, short names, has a status subresource.
RESOURCES = [
    ("", "v1", "namespaces", "Namespace", False, ["ns"], True),
    ("", "v1", "pods", "Pod", True, ["po"], True),
    ("", "v1", "nodes", "Node", False, ["no"], True),
    ("", "v1", "events", "Event", True, ["ev"], False),
    ("", "v1", "serviceaccounts", "ServiceAccount", True, ["sa"], False),
    ("", "v1", "services", "Service", True, ["svc"], True),
    ("", "v1", "secrets", "Secret", True, [], False),
    ("", "v1", "configmaps", "ConfigMap", True, ["cm"], False),
    ("batch", "v1", "jobs", "Job", True, [], True),
    ("apps", "v1", "deployments", "Deployment", True, ["deploy"], True),
    ("apps", "v1", "statefulsets", "StatefulSet", True, ["sts"], True),
    ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ["pc"], False),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, [], False),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, [], False),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", True, [], False),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, [], False),
    ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
     "MutatingWebhookConfiguration", False, [], False),
]
BY_PLURAL = {(r[0], r[2]): r for r in RESOURCES}


class ApiError(Exception):
    """A Kubernetes Status error: code, reason, message, details."""

    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}

    def status(self):
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "details": self.details, "code": self.code}


def not_found(group, plural, name):
    return ApiError(404, "NotFound", f'{plural}{"." + group if group else ""} "{name}" not found',
                    {"name": name, "group": group, "kind": plural})


# ---------------------------------------------------------------- selectors

def parse_label_selector(text):
    """'a=b,c!=d,e,!f,g in (x,y),h notin (z)' -> list of predicates on a labels dict."""
    preds, i, parts, depth, cur = [], 0, [], 0, ""
    for ch in text or "":
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        parts.append(cur)
    for p in (x.strip() for x in parts):
        if not p:
            continue
        if " notin " in p or " in " in p:
            neg = " notin " in p
            key, vals = p.split(" notin " if neg else " in ", 1)
            vals = {v.strip() for v in vals.strip().strip("()").split(",")}
            key = key.strip()
            preds.append(lambda l, k=key, v=vals, n=neg: (l.get(k) not in v) if n else (l.get(k) in v))
        elif "!=" in p:
            k, v = p.split("!=", 1)
            preds.append(lambda l, k=k.strip(), v=v.strip(): l.get(k) != v)
        elif "=" in p:
            k, v = p.split("=", 1)
            k, v = k.strip().rstrip("="), v.strip().lstrip("=")
            preds.append(lambda l, k=k, v=v: l.get(k) == v)
        elif p.startswith("!"):
            preds.append(lambda l, k=p[1:].strip(): k not in l)
        else:
            preds.append(lambda l, k=p: k in l)
    return preds


def field_value(obj, path):
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part, "")
    return "" if cur is None else str(cur)


def parse_field_selector(text):
    preds = []
    for p in (x.strip() for x in (text or "").split(",")):
        if not p:
            continue
        neg = "!=" in p
        k, v = p.split("!=" if neg else "=", 1)
        k, v = k.strip(), v.strip().lstrip("=")
        preds.append(lambda o, k=k, v=v, n=neg: (field_value(o, k) != v) if n else (field_value(o, k) == v))
    return preds


def matches(obj, labels, fields):
    lab = obj.get("metadata", {}).get("labels") or {}
    return all(p(lab) for p in labels) and all(p(obj) for p in fields)


# ---------------------------------------------------------------- patches

def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# Lists merged by key in a strategic-merge patch (the Kubernetes Go types' patchMergeKey).
MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "ports": "containerPort",
              "volumes": "name", "volumeMounts": "mountPath", "conditions": "type", "ownerReferences": "uid",
              "imagePullSecrets": "name", "addresses": "type", "taints": "key", "webhooks": "name"}
MERGE_SCALAR_LISTS = {"finalizers"}


def strategic_merge_patch(target, patch, field=None):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: v for k, v in copy.deepcopy(patch).items() if k != "$patch"}
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k.startswith("$retainKeys") or k == "$patch":
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            name = k.split("/", 1)[1]
            out[name] = [x for x in out.get(name, []) if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and k in MERGE_KEYS and all(isinstance(x, dict) for x in v):
            key = MERGE_KEYS[k]
            cur = copy.deepcopy(out.get(k) or [])
            for item in v:
                idx = next((i for i, c in enumerate(cur) if c.get(key) == item.get(key)), None)
                if item.get("$patch") == "delete":
                    if idx is not None:
                        cur.pop(idx)
                elif idx is None:
                    cur.append({a: b for a, b in item.items() if a != "$patch"})
                else:
                    cur[idx] = strategic_merge_patch(cur[idx], item, k)
            out[k] = cur
        elif isinstance(v, list) and k in MERGE_SCALAR_LISTS:
            cur = list(out.get(k) or [])
            out[k] = cur + [x for x in v if x not in cur]
        elif isinstance(v, dict):
            out[k] = strategic_merge_patch(out.get(k), v, k)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _pointer(path):
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def json_patch(target, ops):
    """RFC 6902."""
    doc = copy.deepcopy(target)

    def walk(parts):
        cur = doc
        for p in parts[:-1]:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur, parts[-1]

    def get(path):
        cur = doc
        for p in _pointer(path):
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur

    def add(path, value):
        parent, key = walk(_pointer(path))
        if isinstance(parent, list):
            parent.insert(len(parent) if key == "-" else int(key), value)
        else:
            parent[key] = value

    def remove(path):
        parent, key = walk(_pointer(path))
        return parent.pop(int(key)) if isinstance(parent, list) else parent.pop(key)

    try:
        for op in ops:
            kind, path = op["op"], op["path"]
            if kind == "add":
                add(path, copy.deepcopy(op["value"]))
            elif kind == "remove":
                remove(path)
            elif kind == "replace":
                remove(path)
                add(path, copy.deepcopy(op["value"]))
            elif kind == "move":
                add(path, remove(op["from"]))
            elif kind == "copy":
                add(path, copy.deepcopy(get(op["from"])))
            elif kind == "test":
                if get(path) != op["value"]:
                    raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our "
                                   f"request: testing value {path} failed")
            else:
                raise ApiError(400, "BadRequest", f"unknown json patch op {kind!r}")
    except (KeyError, IndexError, ValueError, TypeError) as e:
        raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {e!r}")
    return doc


# ---------------------------------------------------------------- the store

class Store:
    """Every object, the global resourceVersion and the event history.

    `history` is a list of (rv, (group, plural), type, object, monotonic
    time recorded); `compacted`
    is the version below which history is gone (410 for older watches).
    Hooks: `defaults(res, obj, old)` fills defaults on create/update;
    `on_delete(res, obj, opts)` may turn a delete into a graceful one
    (returns the object kept, or None to remove it now).
    """

    def __init__(self, history_limit=10000):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.objects = {}  # (group, plural) -> {(ns, name): obj}
        self.rv = 1
        self.history = []
        self.compacted = 1
        self.history_limit = history_limit
        self.defaults = lambda res, obj, old: None
        self.on_delete = lambda res, obj, opts: None

    def table(self, res):
        return self.objects.setdefault((res[0], res[2]), {})

    def _record(self, res, typ, obj):
        self.history.append((self.rv, (res[0], res[2]), typ, copy.deepcopy(obj), time.monotonic()))
        if len(self.history) > self.history_limit:
            drop = len(self.history) - self.history_limit
            self.compacted = self.history[drop - 1][0]
            del self.history[:drop]
        self.changed.notify_all()

    def compact(self):
        """Forget the history, as etcd compaction does: older watches get 410."""
        with self.lock:
            self.history = []
            self.compacted = self.rv
            self.changed.notify_all()

    def get(self, res, ns, name):
        with self.lock:
            obj = self.table(res).get((ns, name))
            if obj is None:
                raise not_found(res[0], res[2], name)
            return copy.deepcopy(obj)

    def list(self, res, ns, labels=(), fields=()):
        with self.lock:
            items = [copy.deepcopy(o) for (ons, _), o in sorted(self.table(res).items())
                     if (ns is None or ons == ns) and matches(o, labels, fields)]
            return items, self.rv

    def create(self, res, ns, obj):
        with self.lock:
            meta = obj.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            name = meta.get("name")
            if not name:
                raise ApiError(422, "Invalid", f"{res[3]} is invalid: metadata.name: Required value",
                               {"kind": res[3], "causes": [{"reason": "FieldValueRequired",
                                                            "message": "Required value", "field": "metadata.name"}]})
            if res[4]:
                if meta.get("namespace") and meta["namespace"] != ns:
                    raise ApiError(400, "BadRequest", "the namespace of the provided object does not match "
                                   "the namespace sent on the request")
                meta["namespace"] = ns
                if ("", ns) not in self.table(BY_PLURAL[("", "namespaces")]):
                    raise ApiError(404, "NotFound", f'namespaces "{ns}" not found',
                                   {"name": ns, "kind": "namespaces"})
            else:
                meta.pop("namespace", None)
            key = (ns if res[4] else "", name)
            if key in self.table(res):
                raise ApiError(409, "AlreadyExists", f'{res[2]}{"." + res[0] if res[0] else ""} "{name}" '
                               "already exists", {"name": name, "group": res[0], "kind": res[2]})
            obj["apiVersion"] = f"{res[0]}/{res[1]}" if res[0] else res[1]
            obj["kind"] = res[3]
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            meta.setdefault("generation", 1)
            meta.pop("resourceVersion", None)
            self.defaults(res, obj, None)
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            self.table(res)[key] = obj
            self._record(res, "ADDED", obj)
            return copy.deepcopy(obj)

    def update(self, res, ns, name, obj, subresource=None, check_rv=True):
        """PUT semantics: 409 on a stale resourceVersion; a no-op keeps the version."""
        with self.lock:
            key = (ns if res[4] else "", name)
            old = self.table(res).get(key)
            if old is None:
                raise not_found(res[0], res[2], name)
            want = (obj.get("metadata") or {}).get("resourceVersion")
            if check_rv and want and want != old["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res[2]}'
                               f'{"." + res[0] if res[0] else ""} "{name}": the object has been modified; '
                               "please apply your changes to the latest version and try again",
                               {"name": name, "group": res[0], "kind": res[2]})
            new = copy.deepcopy(obj)
            new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
            meta = new.setdefault("metadata", {})
            for k in ("uid", "creationTimestamp", "namespace", "name", "deletionTimestamp",
                      "deletionGracePeriodSeconds"):
                if k in old["metadata"]:
                    meta[k] = old["metadata"][k]
                else:
                    meta.pop(k, None)
            if res[6]:  # status only through /status, the rest only through the main resource.
                if subresource == "status":
                    new = dict(copy.deepcopy(old), status=new.get("status", {}))
                    meta = new["metadata"]
                else:
                    new["status"] = copy.deepcopy(old.get("status", {}))
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
            meta["generation"] = old["metadata"].get("generation", 1)
            if new.get("spec") != old.get("spec"):
                meta["generation"] += 1
            self.defaults(res, new, old)
            if new == old:
                return copy.deepcopy(old)
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            self.table(res)[key] = new
            self._record(res, "MODIFIED", new)
            if meta.get("deletionTimestamp") and not meta.get("finalizers") and res[2] != "pods":
                return self._remove(res, key)
            return copy.deepcopy(new)

    def delete(self, res, ns, name, opts=None):
        with self.lock:
            key = (ns if res[4] else "", name)
            obj = self.table(res).get(key)
            if obj is None:
                raise not_found(res[0], res[2], name)
            kept = self.on_delete(res, copy.deepcopy(obj), opts or {})
            if kept is not None:  # graceful: marked, removed later.
                if kept != obj:
                    self.rv += 1
                    kept["metadata"]["resourceVersion"] = str(self.rv)
                    self.table(res)[key] = kept
                    self._record(res, "MODIFIED", kept)
                return copy.deepcopy(kept)
            return self._remove(res, key)

    def _remove(self, res, key):
        obj = self.table(res).pop(key)
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self._record(res, "DELETED", obj)
        return copy.deepcopy(obj)

    def remove_now(self, res, ns, name):
        with self.lock:
            key = (ns if res[4] else "", name)
            if key in self.table(res):
                return self._remove(res, key)
            return None

    # ------------------------------------------------------------ persistence

    def dump(self, path):
        with self.lock:
            data = {"rv": self.rv, "objects": [[g, p, list(k), o] for (g, p), t in self.objects.items()
                                               for k, o in t.items()]}
        with open(path + ".tmp", "w") as f:
            json.dump(data, f)
        import os
        os.replace(path + ".tmp", path)

    def load(self, path):
        """A restarted API server: same objects and versions, no history (as after a compaction)."""
        with open(path) as f:
            data = json.load(f)
        with self.lock:
            # A restarted kube-apiserver writes its own lease first (a new
            # version) and its watch cache starts there: older versions are 410.
            self.rv = data["rv"] + 1
            self.compacted = self.rv
            for g, p, k, o in data["objects"]:
                self.objects.setdefault((g, p), {})[tuple(k)] = o
