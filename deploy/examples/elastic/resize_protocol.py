"""The broker side of an elastic job: admission, the WatchResizes stream,
resize requests, acks and reconciling with what the broker counts (the
protocol of docs/design.md §5). ElasticTrainer (elastic_trainer.py) is the
training and checkpoint side that it drives through three hooks."""

import logging
import queue
import random
import threading
import time

from tidegate_client import find_leader, open_channel, split_servers

log = logging.getLogger("trainer")

class Stop(Exception):
    """Raised inside the loop to leave it: the reason and the exit code."""

    def __init__(self, why, code):
        super().__init__(why)
        self.code = code




class ResizeProtocol:
    """Follows one job's resize requests. A subclass provides the workload:
    save_checkpoint(reason, request=None), reform(replicas, reason, epoch,
    deadline_ms=0) -> bool, and form(info, reason), which starts the job at
    the size the broker admitted. `replicas` is what the job runs now; only
    the protocol and those hooks change it."""

    def __init__(self, args, grpc, pb, rpc, cfg):
        self.args = args
        self.grpc, self.pb, self.rpc, self.cfg = grpc, pb, rpc, cfg
        self.channel = None
        self.follow_leader()
        self.job = args.job
        self.replicas = 0          # what the job runs now (0: not formed).
        self.epoch_acked = 0       # the latest epoch acked (re-deliveries are skipped).
        self.events = queue.Queue()
        self.stopping = threading.Event()
        self.watch_call = None
        self.watch_lock = threading.Lock()
        self.watch_thread = None

    # --------------------------------------------------------- workload hooks

    def save_checkpoint(self, reason, request=None):
        raise NotImplementedError

    def reform(self, replicas, reason, epoch, deadline_ms=0):
        raise NotImplementedError

    def form(self, info, reason):
        raise NotImplementedError

    # --------------------------------------------------------------- helpers

    def follow_leader(self):
        """(Re)opens the channel; with several brokers, to the one that leads
        now (after an UNAVAILABLE the leader may have changed)."""
        if self.channel is not None and len(split_servers(self.args.server)) <= 1:
            return
        import copy
        args = copy.copy(self.args)
        if len(split_servers(args.server)) > 1:
            args.server = find_leader(self.grpc, args)
        self.channel = open_channel(self.grpc, args)
        self.admission = self.rpc.AdmissionServiceStub(self.channel)
        self.elastic = self.rpc.ElasticServiceStub(self.channel)

    def rpc_retry(self, what, fn, until=None):
        """Calls fn() and retries UNAVAILABLE with backoff until `until`
        (time.time()), forever when None, or until stopping."""
        delay = 0.5
        warned = False
        while True:
            try:
                result = fn()
                if warned:
                    log.info("%s: the broker answers again", what)
                return result
            except self.grpc.RpcError as e:
                if e.code() not in (self.grpc.StatusCode.UNAVAILABLE, self.grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise
                if until is not None and time.time() + delay > until:
                    raise
                if not warned:
                    log.warning("%s: broker unavailable (%s); retrying", what, e.details())
                    warned = True
                self.follow_leader()
            if self.stopping.wait(delay):
                raise Stop("stopped while waiting for the broker", 0)
            delay = min(delay * 2, self.args.max_backoff)

    def job_spec(self):
        spec = self.cfg.JobSpec(job=self.job, team=self.args.team)
        if self.args.cluster:
            spec.cluster = self.args.cluster
        lo, hi = self.args.elastic
        spec.elastic.min = lo
        spec.elastic.max = hi
        for name, count in self.args.per_replica.items():
            spec.per_replica[name] = count
        if self.args.grace_s is not None:
            spec.grace_s = self.args.grace_s
        if self.args.priority:
            spec.priority = self.args.priority
        return spec

    def state_name(self, state):
        return self.cfg.JobState.Name(state).replace("JOB_STATE_", "").lower()

    def running_size(self, info):
        """What the job runs at per the broker: a pending grow is reserved in
        `replicas` already but not formed yet."""
        if info.HasField("resize"):
            return info.resize.current_replicas
        return info.replicas

    # ------------------------------------------------------------- admission

    def admit(self):
        """Admits (or attaches to) the job; returns its JobInfo once admitted."""
        t = self.args.timeout
        if self.args.attach:
            info = self.rpc_retry("GetJob", lambda: self.admission.GetJob(self.pb.GetJobRequest(job=self.job), timeout=t))
            if info.spec.elastic.max == 0:
                raise Stop("job '%s' is not elastic" % self.job, 1)
            log.info("attached to %s (team %s, %s, %d replicas)", self.job, info.team,
                     self.state_name(info.state), self.running_size(info))
        else:
            req = self.pb.AdmitRequest(job=self.job_spec())
            resp = self.rpc_retry("Admit", lambda: self.admission.Admit(req, timeout=t))
            decision = self.cfg.Decision.Name(resp.decision).replace("DECISION_", "")
            if resp.decision == self.cfg.DECISION_REJECTED:
                raise Stop("Admit: REJECTED: %s" % resp.reason, 1)
            log.info("Admit %s (team %s, elastic %d:%d, per replica %s): %s%s", self.job, self.args.team,
                     self.args.elastic[0], self.args.elastic[1], self.args.per_replica, decision,
                     " (%s)" % resp.reason if resp.reason else "")
            info = resp.job
        if info.state == self.cfg.JOB_STATE_ADMITTED:
            return info
        return self.wait_admitted()

    def wait_admitted(self):
        """Streams WaitAdmission until the job is admitted."""
        while not self.stopping.is_set():
            call = self.admission.WaitAdmission(self.pb.WaitAdmissionRequest(job=self.job))
            with self.watch_lock:
                self.admit_call = call
            try:
                for msg in call:
                    j = msg.job
                    if j.state == self.cfg.JOB_STATE_ADMITTED:
                        log.info("%s admitted", self.job)
                        return j
                    if j.state in (self.cfg.JOB_STATE_ENDED, self.cfg.JOB_STATE_REJECTED):
                        raise Stop("%s %s while waiting for admission" % (self.job, self.state_name(j.state)), 1)
                    log.info("%s %s%s; waiting", self.job, self.state_name(j.state),
                             ": " + j.reason if j.reason else "")
                # The stream ended without an admission: ask once more.
                j = self.admission.GetJob(self.pb.GetJobRequest(job=self.job), timeout=self.args.timeout)
                if j.state == self.cfg.JOB_STATE_ADMITTED:
                    return j
                if j.state in (self.cfg.JOB_STATE_ENDED, self.cfg.JOB_STATE_REJECTED):
                    raise Stop("%s %s while waiting for admission" % (self.job, self.state_name(j.state)), 1)
            except self.grpc.RpcError as e:
                if self.stopping.is_set():
                    break
                if e.code() != self.grpc.StatusCode.UNAVAILABLE:
                    raise
                log.warning("WaitAdmission: broker unavailable; reconnecting")
                self.follow_leader()
                self.stopping.wait(1.0)
        raise Stop("stopped while waiting for admission", 0)

    # ----------------------------------------------------------------- watch

    def watch(self):
        """Thread: WatchResizes into self.events, reconnecting with backoff."""
        delay = 0.5
        lost = False
        while not self.stopping.is_set():
            if lost:
                # A stream says nothing until a request comes: probe with a
                # unary call so the log tells when the broker is back.
                try:
                    self.admission.GetJob(self.pb.GetJobRequest(job=self.job), timeout=2)
                    log.info("WatchResizes: the broker is back; re-subscribed")
                    lost = False
                    delay = 0.5
                except self.grpc.RpcError as e:
                    if e.code() in (self.grpc.StatusCode.UNAVAILABLE, self.grpc.StatusCode.DEADLINE_EXCEEDED):
                        self.follow_leader()
                        self.stopping.wait(delay * (0.5 + random.random()))
                        delay = min(delay * 2, self.args.max_backoff)
                        continue
                    # Anything else (NOT_FOUND: the job is gone) the stream reports.
            call = self.elastic.WatchResizes(self.pb.WatchResizesRequest(job=self.job))
            with self.watch_lock:
                self.watch_call = call
            if self.stopping.is_set():
                call.cancel()
            try:
                for r in call:
                    lost = False
                    delay = 0.5
                    self.events.put(("resize", r))
                self.events.put(("ended", None))  # OK: the job ended.
                return
            except self.grpc.RpcError as e:
                code = e.code()
                if self.stopping.is_set() or code == self.grpc.StatusCode.CANCELLED:
                    return
                if code in (self.grpc.StatusCode.UNAVAILABLE, self.grpc.StatusCode.DEADLINE_EXCEEDED,
                            self.grpc.StatusCode.INTERNAL, self.grpc.StatusCode.UNKNOWN):
                    if not lost:
                        log.warning("WatchResizes: %s (%s); reconnecting with backoff", code.name, e.details())
                        lost = True
                    self.stopping.wait(delay * (0.5 + random.random()))
                    delay = min(delay * 2, self.args.max_backoff)
                    continue
                self.events.put(("error", "WatchResizes: %s: %s" % (code.name, e.details())))
                return

    def start_watch(self):
        self.watch_thread = threading.Thread(target=self.watch, name="watch", daemon=True)
        self.watch_thread.start()

    def cancel_streams(self):
        """Stops the loop and the watch thread: cancels the open streams."""
        self.stopping.set()
        with self.watch_lock:
            for c in (self.watch_call, getattr(self, "admit_call", None)):
                if c is not None:
                    c.cancel()

    # ---------------------------------------------------------------- resize

    def handle_resize(self, r):
        # Only the latest request can be acked: skip to it.
        while True:
            try:
                kind, nxt = self.events.get_nowait()
            except queue.Empty:
                break
            if kind == "resize" and nxt.epoch > r.epoch:
                r = nxt
            elif kind != "resize":
                self.events.put((kind, nxt))
                break
        if r.epoch <= self.epoch_acked:
            return  # re-delivered after a reconnect, already answered.
        target = r.target_replicas
        left = r.deadline_ms / 1000.0 - time.time()
        log.info("resize epoch %d: %d -> %d replicas (%s), ack within %.0f s",
                 r.epoch, self.replicas, target, r.reason, left)
        shrink = target < self.replicas
        if shrink or (self.args.checkpoint_on_grow and target != self.replicas):
            self.save_checkpoint(r.reason, r)
            try:
                self.rpc_retry("ReportCheckpoint", lambda: self.admission.ReportCheckpoint(
                    self.pb.ReportCheckpointRequest(job=self.job), timeout=self.args.timeout),
                    until=r.deadline_ms / 1000.0)
            except self.grpc.RpcError as e:
                log.warning("ReportCheckpoint: %s: %s", e.code().name, e.details())
        now = self.replicas
        if target != self.replicas:
            if self.reform(target, r.reason, r.epoch, r.deadline_ms):
                now = target
                log.info("re-formed at %d replicas (was %d)", target, self.replicas)
            elif shrink:
                log.error("re-forming at %d failed: not acking; the broker enforces the shrink at the deadline",
                          target)
                return
            else:
                log.warning("re-forming at %d failed: staying at %d and acking that", target, self.replicas)
        self.replicas = now
        self.ack(r, now)

    def ack(self, r, replicas):
        req = self.pb.AckResizeRequest(job=self.job, epoch=r.epoch, replicas=replicas)
        try:
            resp = self.rpc_retry("AckResize", lambda: self.elastic.AckResize(req, timeout=self.args.timeout),
                                  until=r.deadline_ms / 1000.0 + 5)
        except self.grpc.RpcError as e:
            code = e.code()
            if code == self.grpc.StatusCode.FAILED_PRECONDITION:
                log.warning("AckResize epoch %d: %s; reconciling with the broker", r.epoch, e.details())
                self.reconcile()
                return
            if code == self.grpc.StatusCode.NOT_FOUND:
                raise Stop("AckResize: %s" % e.details(), 1)
            log.error("AckResize epoch %d: %s: %s", r.epoch, code.name, e.details())
            return
        self.epoch_acked = r.epoch
        j = resp.job
        demand = ",".join("%s=%d" % kv for kv in sorted(j.demand.items()))
        log.info("acked epoch %d at %d replicas (broker: %d replicas, %s%s)", r.epoch, replicas, j.replicas,
                 demand, ", borrowing" if j.borrowing else "")

    def reconcile(self):
        """After a stale ack: run at what the broker counts (a shrink it
        enforced, a grow it withdrew); a newer request arrives on the stream."""
        j = self.rpc_retry("GetJob", lambda: self.admission.GetJob(self.pb.GetJobRequest(job=self.job),
                                                                   timeout=self.args.timeout))
        if j.HasField("resize"):
            return  # a newer request is pending: the watch delivers it.
        if j.state != self.cfg.JOB_STATE_ADMITTED:
            return  # the periodic check handles it.
        if j.replicas != self.replicas:
            log.warning("the broker counts %d replicas, the job runs %d: re-forming at %d",
                        j.replicas, self.replicas, j.replicas)
            self.epoch_acked = max(self.epoch_acked, j.resize_epoch)
            if j.replicas < self.replicas:
                self.save_checkpoint("reconcile")
            if self.reform(j.replicas, "reconcile", j.resize_epoch):
                self.replicas = j.replicas
        self.epoch_acked = max(self.epoch_acked, j.resize_epoch)

    def check_job(self):
        """Periodic: the job may have been evicted whole, or ended."""
        try:
            j = self.admission.GetJob(self.pb.GetJobRequest(job=self.job), timeout=self.args.timeout)
        except self.grpc.RpcError as e:
            if e.code() == self.grpc.StatusCode.NOT_FOUND:
                raise Stop("the broker no longer knows %s" % self.job, 1)
            return  # unavailable: the watch thread reports it.
        if j.state == self.cfg.JOB_STATE_ADMITTED:
            if not j.HasField("resize") and j.replicas != self.replicas:
                self.reconcile()  # e.g. a shrink the broker enforced after a failed hook.
            return
        if j.state in (self.cfg.JOB_STATE_ENDED, self.cfg.JOB_STATE_REJECTED):
            raise Stop("%s %s by someone else" % (self.job, self.state_name(j.state)), 1)
        # Draining or queued: evicted whole. Stop, wait, start again.
        log.warning("%s is %s%s: checkpointing and stopping its replicas", self.job, self.state_name(j.state),
                    " (%s)" % j.reason if j.reason else "")
        self.save_checkpoint("evicted")
        try:
            self.admission.ReportCheckpoint(self.pb.ReportCheckpointRequest(job=self.job), timeout=self.args.timeout)
        except self.grpc.RpcError:
            pass
        self.reform(0, "evicted", j.resize_epoch)
        self.replicas = 0
        info = self.wait_admitted()
        self.form(info, "start")
