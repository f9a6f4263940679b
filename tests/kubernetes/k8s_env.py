"""Shared pieces of the Kubernetes integration tests: a test CA and
certificates (openssl), the test API server over HTTPS, a small REST client
(urllib), the real tidegated and tidegate-agent processes, and polling.
Standard library only."""
import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def wait_for(pred, secs=30):
    end = time.time() + secs
    while time.time() < end:
        try:
            if pred():
                return True
        except Exception:
            pass
        time.sleep(0.05)
    return False


def make_certs(d):
    """A test CA, a server certificate for 127.0.0.1 and a client certificate."""
    def ossl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
         "-subj", "/CN=tidegate-test-ca", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.crt")
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost"), ("client", "extendedKeyUsage=clientAuth")):
        ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj",
             f"/CN=tidegate-{name}", "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr")
        with open(f"{d}/{name}.ext", "w") as f:
            f.write(ext + "\n")
        ossl("x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.crt", "-CAkey", f"{d}/ca.key",
             "-CAcreateserial", "-days", "2", "-extfile", f"{d}/{name}.ext", "-out", f"{d}/{name}.crt")


def write_kubeconfig(path, url, ca, token=None, cert=None, key=None):
    """A kubeconfig with the CA inline (certificate-authority-data) and a token or a client certificate."""
    with open(ca, "rb") as f:
        ca_data = base64.b64encode(f.read()).decode()
    user = f"token: {token}" if token else f"client-certificate: {cert}\n    client-key: {key}"
    with open(path, "w") as f:
        f.write(f"""apiVersion: v1
kind: Config
current-context: test
clusters:
- name: test
  cluster:
    server: {url}
    certificate-authority-data: {ca_data}
users:
- name: test
  user:
    {user}
contexts:
- name: test
  context: {{cluster: test, user: test, namespace: default}}
""")


class ApiServer:
    def __init__(self, d, token, port=0, extra=()):
        self.d, self.token, self.port, self.extra = d, token, port, list(extra)
        self.proc = None
        self.start()

    def start(self):
        out = os.path.join(self.d, "apiserver.out")
        self.log = open(out, "w")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "fake_apiserver.py"), "--port", str(self.port),
             "--tls-cert", f"{self.d}/server.crt", "--tls-key", f"{self.d}/server.key",
             "--client-ca", f"{self.d}/ca.crt", "--token", self.token, "--state", f"{self.d}/apiserver.state",
             "--bookmark-s", "1", *self.extra], stdout=self.log, stderr=subprocess.STDOUT)
        url = []

        def ready():
            with open(out) as f:
                for line in f:
                    if "listening on " in line:
                        url.append(line.split("listening on ")[1].strip())
            return bool(url)
        if not wait_for(ready, 20):
            sys.exit("FAIL: the test API server did not start")
        self.url = url[0]
        self.port = int(self.url.rsplit(":", 1)[1])
        self.ctx = ssl.create_default_context(cafile=f"{self.d}/ca.crt")

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait()
            self.proc = None

    def call(self, method, path, body=None, ctype="application/json"):
        req = urllib.request.Request(self.url + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + self.token, "Content-Type": ctype})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    # Conveniences for batch/v1 Jobs in namespace `ns`.
    def create_job(self, name, team="research", gpus=1, parallelism=1, suspend=True, ns="default", grace=1,
                   labels=None, annotations=None, extra_spec=None, command=("sleep", "3600"), completions=None):
        lab = {} if team is None else {"tidegate.io/team": team}
        lab.update(labels or {})
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "labels": lab, "annotations": annotations or {}},
               "spec": {"suspend": suspend, "parallelism": parallelism, "completions": completions or parallelism,
                        "template": {"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": grace,
                                              "containers": [{"name": "main", "image": "busybox",
                                                              "command": list(command),
                                                              "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}}
        job["spec"].update(extra_spec or {})
        code, obj = self.call("POST", f"/apis/batch/v1/namespaces/{ns}/jobs", job)
        assert code == 201, (code, obj)
        return obj

    def job(self, name, ns="default"):
        code, obj = self.call("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")
        return obj if code == 200 else None

    def delete_job(self, name, ns="default"):
        return self.call("DELETE", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}",
                         {"propagationPolicy": "Background"})[0]

    def pods(self, job, ns="default", running_only=False):
        _, lst = self.call("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector=job-name%3D{job}")
        return [p for p in lst.get("items", []) if not running_only or
                (p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp"))]

    def suspended(self, name, ns="default"):
        j = self.job(name, ns)
        return j is not None and j["spec"].get("suspend") is True

    def unsuspended(self, name, ns="default"):
        j = self.job(name, ns)
        return j is not None and j["spec"].get("suspend") is False

    def reason(self, name, ns="default"):
        j = self.job(name, ns) or {}
        return (j.get("metadata", {}).get("annotations") or {}).get("tidegate.io/reason", "")

    def events(self, name, ns="default"):
        _, lst = self.call("GET", f"/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3D{name}")
        return [e["message"] for e in lst.get("items", [])]


class Broker:
    def __init__(self, bin_dir, d, config):
        self.bin, self.d = bin_dir, d
        with open(f"{d}/tidegate.yaml", "w") as f:
            f.write(config)
        self.out = open(f"{d}/broker.out", "w")
        self.proc = subprocess.Popen([f"{bin_dir}/tidegated", "--config", f"{d}/tidegate.yaml", "--db",
                                      f"{d}/tidegate.db", "--init", "--listen", "127.0.0.1:0"],
                                     stdout=self.out, stderr=open(f"{d}/broker.log", "w"))
        addr = []

        def ready():
            with open(f"{d}/broker.out") as f:
                for line in f:
                    if line.startswith("tidegated listening on "):
                        addr.append(line.split("listening on ")[1].strip())
            return bool(addr)
        if not wait_for(ready, 30):
            sys.exit("FAIL: tidegated did not start")
        self.addr = addr[0]

    def cli(self, *args):
        r = subprocess.run([f"{self.bin}/tidegate", "--server", self.addr, *args], capture_output=True, text=True)
        return r

    def state(self, job):
        r = self.cli("job", job, "-o", "json")
        if r.returncode != 0:
            return "unknown"
        return json.loads(r.stdout).get("state", "").replace("JOB_STATE_", "").lower()

    def info(self, job):
        r = self.cli("job", job, "-o", "json")
        return json.loads(r.stdout) if r.returncode == 0 else {}

    def jobs(self):
        r = self.cli("jobs", "-o", "json")
        return sorted((j["job"], j.get("replicas", 0)) for j in json.loads(r.stdout).get("jobs", [])
                      if j.get("state") not in ("JOB_STATE_ENDED", "JOB_STATE_REJECTED"))

    def gone(self, job):
        return self.state(job) in ("ended", "unknown")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait()


class Agent:
    def __init__(self, bin_dir, d, broker, kubeconfig, cluster="k8s", extra=()):
        self.args = [f"{bin_dir}/tidegate-agent", "--kind", "kubernetes", "--cluster", cluster, "--broker",
                     broker.addr, "--kubeconfig", kubeconfig, "--poll-ms", "100", *extra]
        self.logpath = f"{d}/agent-{cluster}.log"
        self.proc = None
        self.start()

    def start(self, kubeconfig=None):
        if kubeconfig:
            self.args[self.args.index("--kubeconfig") + 1] = kubeconfig
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=open(self.logpath, "a"))

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait()
            self.proc = None

    def log(self):
        with open(self.logpath) as f:
            return f.read()
