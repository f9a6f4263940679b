#!/usr/bin/python3
"""End-to-end: deploy/examples/elastic/trainer.py against the real tidegated.

One 8-GPU cluster, teams alpha and beta with 4 GPUs guaranteed each. The
trainer runs an elastic 1:4 job of 2-GPU replicas for alpha:

  1. it is admitted at 1 replica and grows to 4 (borrowing beta's idle 4), acked;
  2. beta asks for 2x2 GPUs, within its guarantee: the broker reclaims, the
     trainer writes a checkpoint file, acks the shrink to 2, beta's job is
     admitted and the trainer keeps training at 2;
  3. a stale `tidegate ack` exits 4, a repeated one 0;
  4. beta's job is released: the trainer grows back to 4;
  5. the broker restarts on the same address: the trainer reconnects, and a
     second reclaim is checkpointed and acked over the new stream;
  6. SIGTERM: the trainer exits 0 and its job is released.

The broker runs with TLS (deploy/security/issue-certs.sh), a roles file and
bearer tokens, as on a network: the trainer verifies it against the test CA
and presents its own token (framework of "train-", scheduler of alpha); this
script's `tidegate` calls are an admin's.

Every wait polls with a generous timeout; no duration is asserted. Exit 77
(skip) when Debian's python3-grpcio / python3-protobuf are missing.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
WAIT_S = 90

CONFIG = """\
clusters:
  - name: a
    kind: kubernetes
    capacity: {gpu: 8}
teams:
  - name: alpha
    quota: {gpu: {guaranteed: 4}}
    preemption: {within_team: never, reclaim: any, borrow_within_cohort: {policy: never}}
  - name: beta
    quota: {gpu: {guaranteed: 4}}
    preemption: {within_team: never, reclaim: any, borrow_within_cohort: {policy: never}}
policy:
  default_grace_s: 60
"""


ROLES = """\
principals:
  root: [admin]
  trainer: [{framework: "train-"}, {scheduler: [alpha]}]
"""


class Failure(Exception):
    pass


class Env:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.db = os.path.join(tmp, "ledger.db")
        self.config = os.path.join(tmp, "tidegate.yaml")
        with open(self.config, "w") as f:
            f.write(CONFIG)
        self.server = None
        self.broker = None
        self.broker_log = os.path.join(tmp, "tidegated.log")
        self.trainer = None
        self.trainer_log = os.path.join(tmp, "trainer.log")
        self.hook_log = os.path.join(tmp, "hook.log")
        self.ckpt_dir = os.path.join(tmp, "checkpoints")
        self.ckpt = os.path.join(self.ckpt_dir, "checkpoint.json")
        self.pki = os.path.join(tmp, "pki")
        os.makedirs(self.pki)
        script = os.path.join(os.path.dirname(os.path.abspath(args.trainer)), "..", "..", "security",
                              "issue-certs.sh")
        r = subprocess.run(["sh", script, "127.0.0.1"], cwd=self.pki, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise Failure("issue-certs.sh failed: " + r.stderr[-2000:])
        self.roles = os.path.join(tmp, "roles.yaml")
        with open(self.roles, "w") as f:
            f.write(ROLES)
        self.tokens = os.path.join(tmp, "tokens")
        with open(self.tokens, "w") as f:
            for principal in ("root", "trainer"):
                token = principal + "-" + os.urandom(16).hex()
                with open(os.path.join(tmp, principal + ".token"), "w") as t:
                    t.write(token + "\n")
                f.write("%s %s\n" % (principal, hashlib.sha256(token.encode()).hexdigest()))

    # ------------------------------------------------------------- processes

    def start_broker(self, listen="127.0.0.1:0"):
        err = open(self.broker_log, "a")
        self.broker = subprocess.Popen([self.args.tidegated, "--config", self.config, "--db", self.db, "--init",
                                        "--listen", listen,
                                        "--tls-cert", os.path.join(self.pki, "broker.crt"),
                                        "--tls-key", os.path.join(self.pki, "broker.key"),
                                        "--roles", self.roles, "--tokens", self.tokens],
                                       stdout=subprocess.PIPE, stderr=err, text=True)
        err.close()
        # "tidegated listening on ADDR" (port 0: the kernel picks a free one).
        deadline = time.time() + 60
        while time.time() < deadline:
            line = self.broker.stdout.readline()
            if not line:
                raise Failure("tidegated exited (%s) before listening; see %s" % (self.broker.wait(), self.broker_log))
            m = re.match(r"tidegated listening on (\S+)", line)
            if m:
                self.server = m.group(1)
                print("tidegated listening on", self.server, flush=True)
                return
        raise Failure("tidegated did not say where it listens")

    def stop_broker(self):
        if self.broker and self.broker.poll() is None:
            self.broker.send_signal(signal.SIGTERM)
            try:
                self.broker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.broker.kill()
                self.broker.wait()
        if self.broker and self.broker.stdout:
            self.broker.stdout.close()

    def start_trainer(self):
        env = dict(os.environ)
        if self.args.stubs and os.path.exists(os.path.join(self.args.stubs, "tidegate", "v1", "service_pb2_grpc.py")):
            env["TIDEGATE_PY_STUBS"] = self.args.stubs
        else:
            env.pop("TIDEGATE_PY_STUBS", None)
            env["XDG_CACHE_HOME"] = os.path.join(self.tmp, "cache")  # trainer.py generates them there.
        hook = 'echo "$TIDEGATE_REASON $TIDEGATE_REPLICAS $TIDEGATE_EPOCH $TIDEGATE_PREVIOUS_REPLICAS" >> %s' % self.hook_log
        cmd = ["/usr/bin/python3", self.args.trainer, "--server", self.server, "--job", "train-a",
               "--team", "alpha", "--elastic", "1:4", "--per-replica", "gpu=2", "--grace-s", "60",
               "--checkpoint-dir", self.ckpt_dir, "--on-resize", hook, "--log-every", "1",
               "--max-backoff", "2",
               "--ca", os.path.join(self.pki, "ca.crt"), "--token-file", os.path.join(self.tmp, "trainer.token")]
        log = open(self.trainer_log, "w")
        self.trainer = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.tmp)
        log.close()

    # ------------------------------------------------------------------- cli

    def cli(self, *argv):
        r = subprocess.run([self.args.tidegate, "--server", self.server, "--ca", os.path.join(self.pki, "ca.crt"),
                            "--token-file", os.path.join(self.tmp, "root.token")] + list(argv),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        return r.returncode, r.stdout, r.stderr

    def job(self, name):
        code, out, err = self.cli("job", name, "-o", "json")
        if code != 0:
            return None
        return json.loads(out)

    # ----------------------------------------------------------------- waits

    def wait_for(self, what, predicate, timeout=WAIT_S):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            if self.trainer and self.trainer.poll() is not None and not what.startswith("trainer exit"):
                raise Failure("%s: the trainer exited %d" % (what, self.trainer.returncode))
            try:
                last = predicate()
            except Exception as e:  # a broker restarting, a file half-written
                last = e
            if last and not isinstance(last, Exception):
                print("ok:", what, flush=True)
                return last
            time.sleep(0.2)
        raise Failure("timed out waiting for: %s (last: %r)" % (what, last))

    def settled(self, name, replicas):
        """The job runs at `replicas` with no resize waiting for an ack."""
        j = self.job(name)
        if j and j["state"] == "JOB_STATE_ADMITTED" and int(j["replicas"]) == replicas and "resize" not in j:
            return j
        return None

    def hook_lines(self):
        if not os.path.exists(self.hook_log):
            return []
        with open(self.hook_log) as f:
            return [l.split() for l in f if l.strip()]

    def trainer_text(self):
        with open(self.trainer_log) as f:
            return f.read()

    def progress_at(self, replicas, after_offset):
        """A progress line at `replicas` logged after `after_offset`: the step."""
        text = self.trainer_text()[after_offset:]
        steps = [int(m.group(1)) for m in re.finditer(r"step (\d+) at %d replicas" % replicas, text)]
        return steps


def run(env):
    env.start_broker()
    env.start_trainer()

    # 1. Admitted at 1, grown to 4 and acked.
    j = env.wait_for("train-a grows to 4 replicas and acks", lambda: env.settled("train-a", 4))
    grow_epoch = int(j["resize_epoch"])
    if not j.get("borrowing"):
        raise Failure("train-a at 4x2 GPUs should borrow 4 of beta's: %s" % j)
    env.wait_for("the hook ran for start and grow",
                 lambda: [l[:2] for l in env.hook_lines()][:2] == [["start", "1"], ["grow", "4"]])
    if os.path.exists(env.ckpt):
        raise Failure("a checkpoint was written before any shrink")

    # 2. Beta reclaims its guarantee: shrink, checkpoint, ack; beta admitted.
    code, out, err = env.cli("admit", "--job", "b-1", "--team", "beta", "--replicas", "2", "--per-replica", "gpu=2",
                             "-o", "json")
    if code != 0:
        raise Failure("tidegate admit b-1 exited %d: %s" % (code, err))
    decision = json.loads(out).get("decision")
    print("b-1:", decision, flush=True)
    if decision not in ("DECISION_RECLAIMING", "DECISION_ADMITTED"):
        raise Failure("b-1 fits beta's guarantee: expected RECLAIMING, got %s" % decision)
    j = env.wait_for("train-a shrinks to 2 and acks", lambda: env.settled("train-a", 2))
    shrink_epoch = int(j["resize_epoch"])
    env.wait_for("b-1 is admitted", lambda: (env.job("b-1") or {}).get("state") == "JOB_STATE_ADMITTED")
    ckpt = env.wait_for("the checkpoint file", lambda: json.load(open(env.ckpt)))
    if ckpt["epoch"] != shrink_epoch or ckpt["target_replicas"] != 2 or ckpt["replicas"] != 4 \
            or ckpt["reason"] != "reclaim" or ckpt["job"] != "train-a":
        raise Failure("checkpoint %s: want epoch %d, 4 -> 2, reason reclaim" % (ckpt, shrink_epoch))
    if ["reclaim", "2", str(shrink_epoch), "4"] not in env.hook_lines():
        raise Failure("the hook did not run for the shrink: %s" % env.hook_lines())
    offset = len(env.trainer_text())
    steps = env.wait_for("the trainer keeps training at 2 replicas",
                         lambda: (lambda s: s if len(s) >= 2 and s[-1] > s[0] else None)(env.progress_at(2, offset)))
    if steps[0] < ckpt["step"]:
        raise Failure("training went backwards after the shrink: %s < %d" % (steps, ckpt["step"]))

    # 3. A stale ack (an older epoch, or the latest at another size than it
    # was acked at): FAILED_PRECONDITION, exit 4. The same ack again is a
    # retry after a lost answer: exit 0, nothing changes.
    for epoch, size in ((grow_epoch, 2), (shrink_epoch, 3)):
        code, out, err = env.cli("ack", "train-a", str(epoch), str(size))
        if code != 4:
            raise Failure("stale `tidegate ack train-a %d %d` exited %d (want 4): %s%s" % (epoch, size, code, out, err))
    print("ok: stale acks exit 4", flush=True)
    code, out, err = env.cli("ack", "train-a", str(shrink_epoch), "2")
    if code != 0 or not env.settled("train-a", 2):
        raise Failure("repeated `tidegate ack train-a %d 2` exited %d (want 0): %s%s" % (shrink_epoch, code, out, err))
    print("ok: a repeated ack exits 0", flush=True)

    # 4. Beta's job ends: train-a grows back.
    code, out, err = env.cli("release", "b-1")
    if code != 0:
        raise Failure("tidegate release b-1 exited %d: %s" % (code, err))
    j = env.wait_for("train-a grows back to 4", lambda: env.settled("train-a", 4))
    if int(j["resize_epoch"]) <= shrink_epoch:
        raise Failure("grow back: epoch %s is not after the shrink's %d" % (j["resize_epoch"], shrink_epoch))

    # 5. The broker restarts on the same address: the trainer reconnects and
    #    answers the next reclaim over the new stream.
    offset = len(env.trainer_text())
    env.stop_broker()
    env.start_broker(listen=env.server)
    env.wait_for("the trainer sees the broker back", lambda: "the broker is back" in env.trainer_text()[offset:])
    env.wait_for("train-a survived the restart at 4", lambda: env.settled("train-a", 4))
    code, out, err = env.cli("admit", "--job", "b-2", "--team", "beta", "--replicas", "2", "--per-replica", "gpu=2")
    if code != 0:
        raise Failure("tidegate admit b-2 exited %d: %s" % (code, err))
    j = env.wait_for("train-a shrinks to 2 again after the restart", lambda: env.settled("train-a", 2))
    second = int(j["resize_epoch"])
    env.wait_for("b-2 is admitted", lambda: (env.job("b-2") or {}).get("state") == "JOB_STATE_ADMITTED")
    env.wait_for("the checkpoint file for the second shrink", lambda: json.load(open(env.ckpt))["epoch"] == second)

    # 6. SIGTERM: clean exit, job released.
    env.trainer.send_signal(signal.SIGTERM)
    try:
        rc = env.trainer.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        raise Failure("the trainer did not exit within %d s of SIGTERM" % WAIT_S)
    if rc != 0:
        raise Failure("the trainer exited %d after SIGTERM (want 0)" % rc)
    print("ok: the trainer exited 0 on SIGTERM", flush=True)
    code, out, err = env.cli("job", "train-a", "-o", "json")
    if code == 0 and json.loads(out).get("state") != "JOB_STATE_ENDED":
        raise Failure("train-a after the trainer stopped: %s" % out)
    if code not in (0, 3):
        raise Failure("tidegate job train-a exited %d: %s" % (code, err))
    if env.hook_lines()[-1][:2] != ["stop", "0"]:
        raise Failure("the hook did not run with 0 replicas at stop: %s" % env.hook_lines())
    print("ok: train-a is released", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tidegated", required=True)
    p.add_argument("--tidegate", required=True)
    p.add_argument("--trainer", required=True)
    p.add_argument("--stubs", default="", help="generated Python stubs (CMake); else trainer.py generates them")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = p.parse_args()
    for name in ("tidegated", "tidegate", "trainer", "stubs"):
        if getattr(args, name):
            setattr(args, name, os.path.abspath(getattr(args, name)))
    try:
        import grpc  # noqa: F401
        import google.protobuf  # noqa: F401
    except ImportError as e:
        print("skipped: %s (apt-get install python3-grpcio python3-protobuf)" % e)
        return SKIP
    for path in (args.tidegated, args.tidegate):
        if not os.access(path, os.X_OK):
            print("missing binary:", path)
            return 1

    tmp = tempfile.mkdtemp(prefix="tidegate-elastic-")
    env = Env(args, tmp)
    ok = False
    try:
        run(env)
        ok = True
    except Failure as e:
        print("FAILED:", e, flush=True)
    finally:
        if env.trainer and env.trainer.poll() is None:
            env.trainer.kill()
            env.trainer.wait()
        env.stop_broker()
        if not ok:
            for name in (env.trainer_log, env.hook_log, env.broker_log):
                if os.path.exists(name):
                    print("----- %s" % name)
                    with open(name) as f:
                        sys.stdout.write(f.read()[-8000:])
        if args.keep or not ok and os.environ.get("TIDEGATE_KEEP_TMP"):
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
