"""The elastic training loop that follows Tidegate's resize requests
(trainer.py is its command line; the protocol is described there and in
README.md): the training and checkpoint side. The broker side (admission,
WatchResizes, acks) is ResizeProtocol in resize_protocol.py. Subclass
ElasticTrainer and override train_step(), save_checkpoint() or reform() to
plug in a real framework."""

import json
import logging
import os
import queue
import signal
import subprocess
import tempfile
import time

from resize_protocol import ResizeProtocol, Stop  # noqa: F401 (Stop: for `from elastic_trainer import Stop`)

log = logging.getLogger("trainer")


class ElasticTrainer(ResizeProtocol):
    """The loop. Subclass it and override train_step(), save_checkpoint() or
    reform() to plug in a real framework; the protocol stays the same."""

    def __init__(self, args, grpc, pb, rpc, cfg):
        super().__init__(args, grpc, pb, rpc, cfg)
        self.step = 0.0
        self.checkpoint_path = os.path.join(args.checkpoint_dir, "checkpoint.json")

    # ---------------------------------------------------------- overridables

    def train_step(self, dt):
        """Simulated work: `rate` steps per second per replica."""
        self.step += dt * self.args.rate * self.replicas

    def save_checkpoint(self, reason, request=None):
        """Writes the checkpoint file atomically; returns its path."""
        os.makedirs(self.args.checkpoint_dir, exist_ok=True)
        state = {
            "job": self.job,
            "step": int(self.step),
            "replicas": self.replicas,
            "epoch": request.epoch if request is not None else self.epoch_acked,
            "target_replicas": request.target_replicas if request is not None else self.replicas,
            "reason": reason,
            "at_ms": int(time.time() * 1000),
        }
        fd, tmp = tempfile.mkstemp(prefix=".checkpoint-", dir=self.args.checkpoint_dir)
        with os.fdopen(fd, "w") as f:
            json.dump(state, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.checkpoint_path)
        log.info("checkpoint: step %d at %d replicas (epoch %d, %s) -> %s",
                 state["step"], self.replicas, state["epoch"], reason, self.checkpoint_path)
        return self.checkpoint_path

    def reform(self, replicas, reason, epoch, deadline_ms=0):
        """The restart hook: make the job run at `replicas` (0 = stop).

        Returns True when the job now runs at that size. The default runs
        --on-resize CMD (if given) through the shell; torchrun and Ray Train
        users put their scaling command there (see README.md)."""
        cmd = self.args.on_resize
        if not cmd:
            return True
        env = dict(os.environ)
        env.update({
            "TIDEGATE_JOB": self.job,
            "TIDEGATE_EPOCH": str(epoch),
            "TIDEGATE_REPLICAS": str(replicas),
            "TIDEGATE_PREVIOUS_REPLICAS": str(self.replicas),
            "TIDEGATE_REASON": reason,
            "TIDEGATE_DEADLINE_MS": str(deadline_ms),
            "TIDEGATE_CHECKPOINT": self.checkpoint_path,
            "TIDEGATE_SERVER": self.args.server,
        })
        timeout = None
        if deadline_ms:
            # Leave a second for the ack itself.
            timeout = max(1.0, deadline_ms / 1000.0 - time.time() - 1.0)
        log.info("hook: %s (replicas %d -> %d, %s)", cmd, self.replicas, replicas, reason)
        # Its own process group, so that a hook past the deadline is stopped
        # with everything it started.
        proc = subprocess.Popen(cmd, shell=True, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log.error("hook: still running after %.0f s (the request's deadline); stopping it", timeout)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue
            return False
        if rc != 0:
            log.error("hook: exited %d", rc)
            return False
        return True
    # ------------------------------------------------------------------ main

    def form(self, info, reason):
        size = self.running_size(info)
        self.epoch_acked = max(self.epoch_acked, info.resize_epoch - (1 if info.HasField("resize") else 0))
        if not self.reform(size, reason, info.resize_epoch):
            raise Stop("the hook could not start the job at %d replicas" % size, 1)
        self.replicas = size
        log.info("running at %d replicas (step %d)", size, int(self.step))

    def resume(self):
        try:
            with open(self.checkpoint_path) as f:
                state = json.load(f)
        except (OSError, ValueError):
            return
        if state.get("job") == self.job:
            self.step = float(state.get("step", 0))
            log.info("resuming from %s at step %d", self.checkpoint_path, int(self.step))

    def run(self):
        try:
            self.resume()
            info = self.admit()
            self.form(info, "start")
            self.start_watch()
            code = self.loop()
        except Stop as s:
            if s.code:
                log.error("%s", s)
            else:
                log.info("%s", s)
            code = s.code
        except self.grpc.RpcError as e:
            log.error("%s: %s", e.code().name, e.details())
            code = 1
        return self.finish(code)

    def loop(self):
        last = time.monotonic()
        last_log = last
        last_check = last
        while True:
            try:
                kind, payload = self.events.get(timeout=self.args.tick)
            except queue.Empty:
                kind, payload = None, None
            now = time.monotonic()
            self.train_step(now - last)
            last = now
            if self.stopping.is_set():
                raise Stop("stopping on signal", 0)
            if kind == "resize":
                self.handle_resize(payload)
            elif kind == "ended":
                raise Stop("the broker ended %s (released elsewhere?)" % self.job, 1)
            elif kind == "error":
                raise Stop(payload, 1)
            if self.args.steps and self.step >= self.args.steps:
                log.info("done: %d steps", int(self.step))
                return 0
            if now - last_log >= self.args.log_every:
                log.info("step %d at %d replicas", int(self.step), self.replicas)
                last_log = now
            if self.args.poll_s and now - last_check >= self.args.poll_s:
                self.check_job()
                last_check = now

    def finish(self, code):
        self.cancel_streams()
        if self.replicas > 0:
            try:
                self.save_checkpoint("stop")
            except OSError as e:
                log.error("final checkpoint: %s", e)
            self.reform(0, "stop", self.epoch_acked)
            self.replicas = 0
        if self.args.release:
            try:
                resp = self.admission.Release(self.pb.ReleaseRequest(job=self.job), timeout=self.args.timeout)
                log.info("released %s (was %s)", self.job, self.state_name(resp.job.state))
            except self.grpc.RpcError as e:
                if e.code() != self.grpc.StatusCode.NOT_FOUND:
                    log.error("Release: %s: %s", e.code().name, e.details())
                    code = code or 1
        if self.watch_thread:
            self.watch_thread.join(timeout=5)
        self.channel.close()
        return code
