"""A Python client of tidegated, shared by the elastic trainer and any other
script: the gRPC stubs (generated from api/tidegate/v1/*.proto with Debian's
protoc and grpc_python_plugin into a cache directory on first use, or taken
from a directory given), and channels that connect as `tidegate` does
(TLS, mTLS, bearer tokens; several brokers: the leader).

Needs Debian's python3-grpcio and python3-protobuf; run with /usr/bin/python3.
"""

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile

log = logging.getLogger("trainer")

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "..", "api"))
PROTOS = ("tidegate/v1/config.proto", "tidegate/v1/service.proto")
GRPC_PLUGIN = "/usr/bin/grpc_python_plugin"


# --------------------------------------------------------------------- stubs


def generate_stubs(proto_dir, out_dir):
    """Runs protoc + grpc_python_plugin on PROTOS into out_dir (atomically)."""
    protoc = shutil.which("protoc")
    plugin = shutil.which("grpc_python_plugin") or GRPC_PLUGIN
    if not protoc or not os.path.exists(plugin):
        raise RuntimeError("protoc and grpc_python_plugin are needed to generate the Python stubs "
                           "(apt-get install protobuf-compiler protobuf-compiler-grpc)")
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".stubs-", dir=parent)
    try:
        subprocess.run([protoc, "-I", proto_dir, "--python_out=" + tmp, "--grpc_python_out=" + tmp,
                        "--plugin=protoc-gen-grpc_python=" + plugin] + list(PROTOS),
                       check=True, cwd=proto_dir)
        try:
            os.rename(tmp, out_dir)
        except OSError:  # another process won the race: use its copy.
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def stubs_dir_for(proto_dir):
    """A cache directory named after the protos' contents."""
    h = hashlib.sha256()
    for p in PROTOS:
        with open(os.path.join(proto_dir, p), "rb") as f:
            h.update(f.read())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.access(os.path.dirname(base) if not os.path.exists(base) else base, os.W_OK):
        base = tempfile.gettempdir()
    return os.path.join(base, "tidegate", "py-stubs-" + h.hexdigest()[:16])


def load_modules(stubs, proto_dir):
    """Imports grpc and the generated modules; returns (grpc, pb, rpc, cfg)."""
    try:
        import grpc  # noqa: F401
        import google.protobuf  # noqa: F401
    except ImportError as e:
        raise RuntimeError("%s: install Debian's python3-grpcio and python3-protobuf "
                           "and run with /usr/bin/python3" % e)
    if not stubs:
        stubs = os.environ.get("TIDEGATE_PY_STUBS", "")
    if not stubs:
        for p in PROTOS:
            if not os.path.exists(os.path.join(proto_dir, p)):
                raise RuntimeError("no %s under %s: pass --proto-dir DIR (the repository's api/) or --stubs DIR"
                                   % (p, proto_dir))
        stubs = stubs_dir_for(proto_dir)
        if not os.path.exists(os.path.join(stubs, "tidegate", "v1", "service_pb2_grpc.py")):
            log.info("generating Python stubs from %s into %s", proto_dir, stubs)
            generate_stubs(proto_dir, stubs)
    sys.path.insert(0, stubs)
    import grpc
    from tidegate.v1 import config_pb2 as cfg
    from tidegate.v1 import service_pb2 as pb
    from tidegate.v1 import service_pb2_grpc as rpc
    return grpc, pb, rpc, cfg


# ------------------------------------------------------------------ channels


def split_servers(server):
    return [s.strip() for s in server.split(",") if s.strip()]


def find_leader(grpc, args):
    """Several brokers (--server a,b,c; docs/ha.md): the one whose gRPC health
    says `tidegate.leader` is SERVING, else the first. Raw bytes: field 1 of
    HealthCheckRequest is the service; the answer 08 01 is SERVING."""
    import copy
    servers = split_servers(args.server)
    service = b"tidegate.leader"
    for address in servers:
        one = copy.copy(args)
        one.server = address
        channel = open_channel(grpc, one)
        try:
            check = channel.unary_unary("/grpc.health.v1.Health/Check")
            if check(b"\x0a" + bytes([len(service)]) + service, timeout=1) == b"\x08\x01":
                return address
        except grpc.RpcError:
            pass
        finally:
            channel.close()
    return servers[0]


def open_channel(grpc, args):
    """A channel to the broker as `tidegate` connects (docs/security.md): TLS
    when --tls, --ca or --cert is given (the broker is always verified), a
    client certificate for mTLS, and a bearer token on every call."""
    def read(path):
        with open(path, "rb") as f:
            return f.read()
    token = args.token
    if args.token_file:
        with open(args.token_file) as f:
            token = f.readline().strip()
    if not (args.tls or args.ca or args.cert):
        channel = grpc.insecure_channel(args.server)
        if token:
            # Plaintext (loopback): add the header with an interceptor, since
            # grpc refuses call credentials on an insecure channel.
            channel = grpc.intercept_channel(channel, _BearerInterceptor(grpc, token))
        return channel
    creds = grpc.ssl_channel_credentials(
        root_certificates=read(args.ca) if args.ca else None,
        private_key=read(args.key) if args.key else None,
        certificate_chain=read(args.cert) if args.cert else None)
    if token:
        creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(token))
    return grpc.secure_channel(args.server, creds)


def _BearerInterceptor(grpc, token):
    import collections

    class Details(collections.namedtuple("Details", ("method", "timeout", "metadata", "credentials",
                                                     "wait_for_ready", "compression")),
                  grpc.ClientCallDetails):
        pass

    class Interceptor(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
        def _with_token(self, d):
            metadata = list(d.metadata or []) + [("authorization", "Bearer " + token)]
            return Details(d.method, d.timeout, metadata, d.credentials,
                           getattr(d, "wait_for_ready", None), getattr(d, "compression", None))

        def intercept_unary_unary(self, continuation, d, request):
            return continuation(self._with_token(d), request)

        def intercept_unary_stream(self, continuation, d, request):
            return continuation(self._with_token(d), request)

    return Interceptor()
