#!/usr/bin/python3
"""A Kubernetes API server for tests (Python standard library only): the
REST paths, discovery, OpenAPI v3 stubs, list/watch, PATCH flavours and
Status errors that kubectl and python3-kubernetes need, over HTTP or HTTPS
(optionally a bearer token or a client certificate), with a Job controller,
scheduler and kubelets (fake_cluster.py). No kube-apiserver can run on the
project's machines; this one is checked against the real clients
(tests/kubernetes/fidelity_test.sh).

  fake_apiserver.py [--port 0] [--tls-cert F --tls-key F [--client-ca F]] [--token T]
                    [--node NAME:RES=N,RES=N]... [--state FILE] [--bookmark-s 1]

Prints "fake-apiserver listening on URL" when ready. On SIGTERM it saves its
objects to --state (if given) and exits; started again with the same
--state it has the same objects and versions but no watch history, so a
watch from an older version gets 410 Expired (as after etcd compaction).
Test-only endpoints: POST /_fake/compact (drop history), POST
/_fake/drop-watches (end every watch stream), POST /_fake/watch-lag with
{"seconds": S} (watches deliver each event S seconds late, as a slow
informer cache sees it; 0 ends the lag).
"""
import argparse
import json
import os
import signal
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_store import (BY_PLURAL, RESOURCES, ApiError, Store, json_patch, merge_patch,  # noqa: E402
                        parse_field_selector, parse_label_selector, strategic_merge_patch)
from fake_cluster import Cluster  # noqa: E402
from fake_webhooks import call_mutating_webhooks  # noqa: E402

VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.4", "gitCommit": "0" * 40,
           "gitTreeState": "clean", "buildDate": "2025-04-22T16:00:00Z", "goVersion": "go1.23.6",
           "compiler": "gc", "platform": "linux/amd64"}
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def gv_of(r):
    return f"{r[0]}/{r[1]}" if r[0] else r[1]


def resource_list(group, version):
    res = []
    for r in RESOURCES:
        if r[0] != group or r[1] != version:
            continue
        res.append({"name": r[2], "singularName": r[3].lower(), "namespaced": r[4], "kind": r[3],
                    "verbs": VERBS, "shortNames": r[5], "storageVersionHash": "fake" + r[2][:8]})
        if r[6]:
            res.append({"name": r[2] + "/status", "singularName": "", "namespaced": r[4], "kind": r[3],
                        "verbs": ["get", "patch", "update"]})
        if r[2] == "pods":
            res.append({"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy",
                        "version": "v1", "kind": "Eviction", "verbs": ["create"]})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv_of((group, version)),
            "resources": res}


def group_list():
    groups = []
    for g in sorted({r[0] for r in RESOURCES if r[0]}):
        v = next(r[1] for r in RESOURCES if r[0] == g)
        gv = {"groupVersion": f"{g}/{v}", "version": v}
        groups.append({"name": g, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def openapi_root():
    paths = {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=FAKE1"}}
    for g in sorted({r[0] for r in RESOURCES if r[0]}):
        v = next(r[1] for r in RESOURCES if r[0] == g)
        paths[f"apis/{g}/{v}"] = {"serverRelativeURL": f"/openapi/v3/apis/{g}/{v}?hash=FAKE1"}
    return {"paths": paths}


def openapi_gv(group, version):
    """Enough for kubectl create/apply: each kind's PATCH with its GVK and fieldValidation."""
    paths = {}
    prefix = f"/apis/{group}/{version}" if group else "/api/v1"
    for r in RESOURCES:
        if r[0] != group or r[1] != version:
            continue
        path = f"{prefix}/namespaces/{{namespace}}/{r[2]}/{{name}}" if r[4] else f"{prefix}/{r[2]}/{{name}}"
        paths[path] = {"patch": {
            "operationId": f"patch{r[3]}", "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": r[3]},
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "OK"}}}}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": {}}}


class Server:
    def __init__(self, args):
        self.args = args
        self.store = Store(history_limit=args.history)
        self.cluster = Cluster(self.store)
        self.watch_generation = 0
        self.watch_lag_s = 0.0
        ns = BY_PLURAL[("", "namespaces")]
        nodes = BY_PLURAL[("", "nodes")]
        if args.state and os.path.exists(args.state):
            self.store.load(args.state)
        else:
            for name in ("default", "kube-system", "kube-public"):
                self.store.create(ns, "", {"metadata": {"name": name}})
            for spec in args.node:
                name, _, res = spec.partition(":")
                alloc = {"cpu": "64", "memory": "512Gi", "pods": "110"}
                for kv in filter(None, res.split(",")):
                    k, _, v = kv.partition("=")
                    alloc[k] = v
                self.store.create(nodes, "", {"metadata": {"name": name},
                                              "status": {"capacity": alloc, "allocatable": dict(alloc)}})


def make_handler(srv):
    store = srv.store

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            if srv.args.verbose:
                sys.stderr.write("fake-apiserver: " + (fmt % a) + "\n")

        # ------------------------------------------------------------ plumbing

        def send_json(self, code, obj, ctype="application/json"):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Audit-Id", "fake")
            self.end_headers()
            self.wfile.write(body)

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            if not raw:
                return {}
            try:
                return json.loads(raw)
            except ValueError:
                try:
                    import yaml
                    return yaml.safe_load(raw)
                except Exception:
                    raise ApiError(400, "BadRequest", "the request body is not JSON")

        def authorized(self):
            if not srv.args.token and not srv.args.client_ca:
                return True
            auth = self.headers.get("Authorization", "")
            if srv.args.token and auth == "Bearer " + srv.args.token:
                return True
            if srv.args.client_ca and isinstance(self.connection, ssl.SSLSocket) and self.connection.getpeercert():
                return True
            return False

        def handle_any(self, method):
            url = urllib.parse.urlsplit(self.path)
            q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
            try:
                if url.path.startswith("/_fake/"):
                    return self.fake_admin(method, url.path)
                if url.path in ("/healthz", "/livez", "/readyz"):
                    body = b"ok"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if not self.authorized():
                    raise ApiError(401, "Unauthorized", "Unauthorized")
                return self.route(method, url.path, q)
            except ApiError as e:
                self.send_json(e.code, e.status())
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_GET(self):
            self.handle_any("GET")

        def do_POST(self):
            self.handle_any("POST")

        def do_PUT(self):
            self.handle_any("PUT")

        def do_PATCH(self):
            self.handle_any("PATCH")

        def do_DELETE(self):
            self.handle_any("DELETE")

        def fake_admin(self, method, path):
            body = self.body()
            if path == "/_fake/watch-lag":
                with store.lock:
                    srv.watch_lag_s = float(body.get("seconds", 0))
                    store.changed.notify_all()
            elif path == "/_fake/compact":
                store.compact()
            elif path == "/_fake/drop-watches":
                with store.lock:
                    srv.watch_generation += 1
                    store.changed.notify_all()
            else:
                raise ApiError(404, "NotFound", "no such test endpoint")
            self.send_json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success", "metadata": {}})

        # ------------------------------------------------------------ routing

        def route(self, method, path, q):
            parts = [p for p in path.split("/") if p]
            if path == "/version":
                return self.send_json(200, VERSION)
            if path == "/api":
                return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                            "serverAddressByClientCIDRs": [
                                                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
            if path == "/apis":
                return self.send_json(200, group_list())
            if path == "/openapi/v3":
                return self.send_json(200, openapi_root())
            if parts[:2] == ["openapi", "v3"]:
                rest = parts[2:]
                if rest == ["api", "v1"]:
                    return self.send_json(200, openapi_gv("", "v1"))
                if len(rest) == 3 and rest[0] == "apis":
                    return self.send_json(200, openapi_gv(rest[1], rest[2]))
            if parts[:1] == ["api"] and len(parts) >= 2 and parts[1] == "v1":
                group, version, rest = "", "v1", parts[2:]
            elif parts[:1] == ["apis"] and len(parts) >= 3:
                group, version, rest = parts[1], parts[2], parts[3:]
            else:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if not rest:
                if not any(r[0] == group and r[1] == version for r in RESOURCES):
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return self.send_json(200, resource_list(group, version))
            ns = None
            if rest[0] == "namespaces" and len(rest) >= 3:
                ns, rest = rest[1], rest[2:]
            res = BY_PLURAL.get((group, rest[0]))
            if res is None or res[1] != version:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if res[4] and ns is None and len(rest) > 1:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            name = rest[1] if len(rest) > 1 else None
            sub = rest[2] if len(rest) > 2 else None
            key_ns = ns if res[4] else ""
            labels = parse_label_selector(q.get("labelSelector"))
            fields = parse_field_selector(q.get("fieldSelector"))
            if method == "GET" and name is None:
                if q.get("watch", "").lower() in ("true", "1"):
                    return self.watch(res, ns if res[4] else None, labels, fields, q)
                items, rv = store.list(res, ns if res[4] else None, labels, fields)
                for o in items:
                    o.pop("kind", None)
                    o.pop("apiVersion", None)
                return self.send_json(200, {"kind": res[3] + "List", "apiVersion": gv_of(res),
                                            "metadata": {"resourceVersion": str(rv)}, "items": items})
            if method == "GET":
                return self.send_json(200, store.get(res, key_ns, name))
            if method == "POST" and name is None:
                obj = self.body()
                if obj.get("kind") and obj["kind"] != res[3]:
                    raise ApiError(400, "BadRequest", f"the kind {obj['kind']} does not match {res[3]}")
                if q.get("dryRun"):
                    return self.send_json(201, obj)
                obj = call_mutating_webhooks(store, res, key_ns, obj)
                return self.send_json(201, store.create(res, key_ns, obj))
            if method == "POST" and res[2] == "pods" and sub == "eviction":
                self.body()
                store.delete(res, key_ns, name)
                return self.send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                            "status": "Success", "code": 201})
            if method == "PUT" and name:
                obj = self.body()
                return self.send_json(200, store.update(res, key_ns, name, obj, subresource=sub))
            if method == "PATCH" and name:
                return self.patch(res, key_ns, name, sub)
            if method == "DELETE" and name:
                opts = self.body() or {}
                for k in ("propagationPolicy", "gracePeriodSeconds"):
                    if k in q:
                        opts[k] = int(q[k]) if k == "gracePeriodSeconds" else q[k]
                return self.send_json(200, store.delete(res, key_ns, name, opts))
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource")

        def patch(self, res, ns, name, sub):
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            patch = self.body()
            with store.lock:
                try:
                    old = store.get(res, ns, name)
                except ApiError as e:
                    if e.code == 404 and ctype == "application/apply-patch+yaml":
                        patch.setdefault("metadata", {})["name"] = name
                        return self.send_json(201, store.create(res, ns, patch))
                    raise
                if ctype == "application/json-patch+json":
                    new = json_patch(old, patch)
                elif ctype in ("application/merge-patch+json", "application/apply-patch+yaml"):
                    new = merge_patch(old, patch)
                elif ctype == "application/strategic-merge-patch+json":
                    new = strategic_merge_patch(old, patch)
                else:
                    raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format"
                                   f" - accepted media types include: application/json-patch+json, "
                                   f"application/merge-patch+json, application/apply-patch+yaml, "
                                   f"application/strategic-merge-patch+json")
                return self.send_json(200, store.update(res, ns, name, new, subresource=sub))

        # ------------------------------------------------------------ watch

        def chunk(self, obj):
            data = (json.dumps(obj) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def watch(self, res, ns, labels, fields, q):
            rv = q.get("resourceVersion", "")
            bookmarks = q.get("allowWatchBookmarks", "").lower() in ("true", "1")
            timeout = float(q.get("timeoutSeconds") or 1800)
            deadline = time.time() + timeout
            key = (res[0], res[2])

            def wanted(typ, obj):
                return (ns is None or obj["metadata"].get("namespace") == ns) and \
                    all(p(obj.get("metadata", {}).get("labels") or {}) for p in labels) and \
                    all(p(obj) for p in fields)

            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            with store.lock:
                gen = srv.watch_generation
                initial = []
                if rv in ("", "0"):
                    items, last = store.list(res, ns, labels, fields)
                    initial = [{"type": "ADDED", "object": o} for o in items]
                else:
                    last = int(rv)
                    if last < store.compacted:
                        initial = [{"type": "ERROR", "object": ApiError(
                            410, "Expired", f"too old resource version: {last} ({store.compacted})").status()}]
                        last = None
            try:
                for e in initial:
                    self.chunk(e)
                next_bookmark = time.time() + srv.args.bookmark_s
                while last is not None:
                    out = []
                    with store.lock:
                        while True:
                            if srv.watch_generation != gen or time.time() >= deadline:
                                last = None
                                break
                            if last < store.compacted:
                                out.append({"type": "ERROR", "object": ApiError(
                                    410, "Expired", f"too old resource version: {last} ({store.compacted})").status()})
                                last = None
                                break
                            fresh = [h for h in store.history if h[0] > last]
                            due = time.monotonic() - srv.watch_lag_s
                            held = [h for h in fresh if h[4] > due]  # recorded in order: a suffix
                            fresh = fresh[:len(fresh) - len(held)]
                            if fresh:
                                for hrv, hkey, typ, obj, _ in fresh:
                                    if hkey == key and wanted(typ, obj):
                                        out.append({"type": typ, "object": obj})
                                last = fresh[-1][0]
                                if out:
                                    break
                                continue
                            if bookmarks and time.time() >= next_bookmark:
                                last = last if held else store.rv
                                out.append({"type": "BOOKMARK", "object": {
                                    "kind": res[3], "apiVersion": gv_of(res),
                                    "metadata": {"resourceVersion": str(last),
                                                 "annotations": {"k8s.io/initial-events-end": "true"}}}})
                                next_bookmark = time.time() + srv.args.bookmark_s
                                break
                            wait = min(deadline, next_bookmark if bookmarks else deadline) - time.time()
                            if held:
                                wait = min(wait, held[0][4] - due)
                            store.changed.wait(max(0.01, min(wait, 1.0)))
                    for e in out:
                        self.chunk(e)
                self.wfile.write(b"0\r\n\r\n")  # a watch that ended cleanly leaves the connection reusable.
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                self.close_connection = True

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--client-ca", help="accept client certificates signed by this CA")
    p.add_argument("--token", help="accept this bearer token")
    p.add_argument("--node", action="append", default=[], help="NAME:RES=N,... a Ready node (repeatable)")
    p.add_argument("--state", help="load objects from and save them to this file")
    p.add_argument("--bookmark-s", type=float, default=1.0)
    p.add_argument("--history", type=int, default=10000, help="watch events kept")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    srv = Server(args)
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    httpd = ThreadingHTTPServer((args.host, args.port), make_handler(srv))
    scheme = "http"
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            ctx.load_verify_locations(args.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
        scheme = "https"
    loop = threading.Thread(target=srv.cluster.run, daemon=True)
    loop.start()

    def stop(*_):
        srv.cluster.stop.set()
        loop.join()
        if args.state:
            srv.store.dump(args.state)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"fake-apiserver listening on {scheme}://{args.host}:{httpd.server_address[1]}", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
