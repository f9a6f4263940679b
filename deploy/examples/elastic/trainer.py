#!/usr/bin/python3
"""A small elastic training loop that follows Tidegate's resize requests.

It stands in for a real elastic job (torchrun --nnodes=MIN:MAX, Ray Train
with a (min, max) worker range): no GPU is used, the "training" is a step
counter that advances at --rate steps per second per replica. What is real is
the protocol with tidegated (docs/design.md §5):

  1. Admit the job (elastic MIN:MAX) or, with --attach, follow an existing one;
     wait while it is queued.
  2. Subscribe to ElasticService.WatchResizes; reconnect with backoff when the
     broker goes away (the pending request, if any, comes first again).
  3. On a shrink: write a checkpoint file (JSON: step, replicas, epoch, ...),
     call ReportCheckpoint, re-form at the new size, AckResize.
     On a grow: re-form at the new size, AckResize.
     "Re-form" is the restart hook: ElasticTrainer.reform(), which by default
     runs --on-resize CMD with TIDEGATE_JOB, TIDEGATE_EPOCH, TIDEGATE_REPLICAS,
     TIDEGATE_REASON (and more, see --help) in its environment.
  4. When --steps are done, or on SIGTERM/SIGINT: write a final checkpoint,
     run the hook with TIDEGATE_REPLICAS=0, Release the job, exit 0.

Python stubs are generated from api/tidegate/v1/*.proto with Debian's protoc
and grpc_python_plugin (protobuf-compiler-grpc) into a cache directory on
first use, or taken from --stubs DIR / $TIDEGATE_PY_STUBS. Needs Debian's
python3-grpcio and python3-protobuf; run it with /usr/bin/python3.

Exit codes: 0 done (work finished, or stopped by a signal, job released);
1 the job ended or was rejected before the work was done, or a protocol
error; 2 bad flags; 3 missing Python modules or stubs.
"""

import argparse
import logging
import os
import signal
import subprocess
import sys

from elastic_trainer import ElasticTrainer, Stop  # noqa: F401 (for `import trainer` users)
from tidegate_client import DEFAULT_PROTO_DIR, find_leader, load_modules, open_channel  # noqa: F401

log = logging.getLogger("trainer")


def parse_resources(text):
    out = {}
    for part in text.split(","):
        name, sep, count = part.partition("=")
        if not sep or not name.strip() or not count.strip().isdigit() or int(count) <= 0:
            raise argparse.ArgumentTypeError("'%s': want NAME=COUNT[,NAME=COUNT...], e.g. gpu=8" % text)
        out[name.strip()] = int(count)
    return out


def parse_range(text):
    lo, sep, hi = text.partition(":")
    try:
        lo, hi = int(lo), int(hi)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s': want MIN:MAX, e.g. 1:4" % text)
    if not sep or lo < 1 or hi < lo:
        raise argparse.ArgumentTypeError("'%s': want MIN:MAX with 1 <= MIN <= MAX" % text)
    return lo, hi


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default only where the help text does not already say it."""

    def _get_help_string(self, action):
        if ("default" in (action.help or "") or isinstance(action.default, (bool, tuple, dict))
                or action.default in (None, "", argparse.SUPPRESS)):
            return action.help
        return super()._get_help_string(action)


def main(argv=None, trainer_class=None):
    """The command line; trainer_class: an ElasticTrainer subclass to run instead."""
    p = argparse.ArgumentParser(
        description="A small elastic training loop driven by tidegated's resize requests "
                    "(deploy/examples/elastic/README.md).",
        epilog="The hook (--on-resize) runs through /bin/sh with TIDEGATE_JOB, TIDEGATE_EPOCH, "
               "TIDEGATE_REPLICAS (the size to run at; 0 = stop), TIDEGATE_PREVIOUS_REPLICAS, "
               "TIDEGATE_REASON (start, grow, reclaim, preempt, tide:<team>, reconcile, evicted, stop), "
               "TIDEGATE_DEADLINE_MS, TIDEGATE_CHECKPOINT and TIDEGATE_SERVER set. It must return once the "
               "job runs at TIDEGATE_REPLICAS (exit 0), or fail (non-zero): a failed grow is acked at the old "
               "size, a failed shrink is not acked (the broker enforces it at the deadline). "
               "Exit codes: 0 done or stopped by SIGTERM/SIGINT; 1 the job ended or was rejected early, "
               "or a protocol error; 2 bad flags; 3 missing python3-grpcio/python3-protobuf or stubs.",
        formatter_class=HelpFormatter)
    p.add_argument("--server", default=os.environ.get("TIDEGATE_SERVER", "127.0.0.1:50051"),  # or a,b,c: the leader
                   help="the broker (default: $TIDEGATE_SERVER, else 127.0.0.1:50051)")
    p.add_argument("--tls", action="store_true", default=os.environ.get("TIDEGATE_TLS") == "1",
                   help="connect with TLS, verifying the broker against the system's CAs")
    p.add_argument("--ca", default=os.environ.get("TIDEGATE_CA"),
                   help="connect with TLS, verifying the broker against this CA (PEM; $TIDEGATE_CA)")
    p.add_argument("--cert", default=os.environ.get("TIDEGATE_CERT"),
                   help="client certificate for mTLS (PEM; $TIDEGATE_CERT)")
    p.add_argument("--key", default=os.environ.get("TIDEGATE_KEY"), help="the key of --cert ($TIDEGATE_KEY)")
    p.add_argument("--token-file", default=os.environ.get("TIDEGATE_TOKEN_FILE"),
                   help="file holding a bearer token ($TIDEGATE_TOKEN_FILE; or the token in $TIDEGATE_TOKEN)")
    p.set_defaults(token=os.environ.get("TIDEGATE_TOKEN"))
    p.add_argument("--job", required=True, help="the job id, e.g. k8s:ml/bert-large")
    p.add_argument("--team", help="the leaf team it runs for (required unless --attach)")
    p.add_argument("--cluster", default="", help="the cluster (may be omitted with one)")
    p.add_argument("--elastic", type=parse_range, default=(1, 4), metavar="MIN:MAX",
                   help="replica range: admitted with MIN, grows toward MAX (default 1:4)")
    p.add_argument("--per-replica", type=parse_resources, default={"gpu": 1}, metavar="NAME=COUNT,...",
                   help="what one replica needs (default gpu=1)")
    p.add_argument("--grace-s", type=int, default=None,
                   help="seconds a shrink may take before the broker enforces it (default: the policy's)")
    p.add_argument("--priority", type=int, default=0, help="priority, higher first")
    p.add_argument("--attach", action="store_true",
                   help="follow an existing job (admitted by an adapter or `tidegate admit`) instead of admitting")
    p.add_argument("--no-release", dest="release", action="store_false",
                   help="do not Release the job on exit (e.g. when an adapter owns it)")
    p.add_argument("--on-resize", metavar="CMD", default="",
                   help="shell command that makes the job run at $TIDEGATE_REPLICAS replicas (the restart hook)")
    p.add_argument("--checkpoint-dir", default=None,
                   help="where checkpoint.json goes (default ./checkpoints/<job>)")
    p.add_argument("--checkpoint-on-grow", action="store_true",
                   help="also checkpoint before re-forming to grow (restart-based frameworks lose the rest)")
    p.add_argument("--steps", type=int, default=0, help="steps of work to do, then release and exit (0: run until SIGTERM)")
    p.add_argument("--rate", type=float, default=10.0, help="steps per second per replica")
    p.add_argument("--tick", type=float, default=0.2, help="loop period, seconds")
    p.add_argument("--log-every", type=float, default=10.0, help="progress log period, seconds")
    p.add_argument("--poll-s", type=float, default=5.0,
                   help="how often to check the job's state (whole eviction, end); 0: never")
    p.add_argument("--timeout", type=float, default=10.0, help="per-RPC timeout, seconds")
    p.add_argument("--max-backoff", type=float, default=10.0, help="longest wait between reconnects, seconds")
    p.add_argument("--stubs", default="", metavar="DIR",
                   help="directory with generated tidegate/v1/*_pb2*.py (default: $TIDEGATE_PY_STUBS, "
                        "else generated into a cache directory)")
    p.add_argument("--proto-dir", default=DEFAULT_PROTO_DIR, help="the api/ directory holding tidegate/v1/*.proto")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    args = p.parse_args(argv)
    if not args.attach and not args.team:
        p.error("--team is required unless --attach")
    if args.checkpoint_dir is None:
        args.checkpoint_dir = os.path.join("checkpoints", args.job.replace("/", "_").replace(":", "_"))

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s trainer[" + args.job + "] %(levelname)s %(message)s",
                        datefmt="%H:%M:%S", stream=sys.stderr)
    try:
        grpc, pb, rpc, cfg = load_modules(args.stubs, args.proto_dir)
    except (RuntimeError, subprocess.CalledProcessError, ImportError, OSError) as e:
        log.error("%s", e)
        return 3

    trainer = (trainer_class or ElasticTrainer)(args, grpc, pb, rpc, cfg)

    def on_signal(signum, frame):
        if not trainer.stopping.is_set():
            log.info("%s: stopping", signal.Signals(signum).name)
        trainer.stopping.set()
        with trainer.watch_lock:
            c = getattr(trainer, "admit_call", None)
        if c is not None:
            c.cancel()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return trainer.run()


if __name__ == "__main__":
    sys.exit(main())
