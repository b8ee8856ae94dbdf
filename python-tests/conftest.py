"""pytest fixtures: a real redis-server with the dreamtown module loaded.

The server binary is DREAMTOWN_SERVER (``make test SERVER=...`` sets it: a
redis-server or valkey-server), else ``redis-server`` on PATH.

Each test gets its own server on a free loopback port (``--save ''``),
started with ``--loadmodule <built .so>``, waited for with PING, and stopped
by its own pid afterwards. The module path comes from DREAMTOWN_MODULE
(``make test`` sets it) or the newest build under target/.
"""

import itertools
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

import pytest
import redis

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEADLINE = 20.0


def module_path():
    configured = os.environ.get("DREAMTOWN_MODULE")
    if configured:
        return configured
    builds = [ROOT / "target" / profile / "libdreamtown.so" for profile in ("release", "debug")]
    builds = [path for path in builds if path.exists()]
    if not builds:
        raise RuntimeError("build the module first (make build) or set DREAMTOWN_MODULE")
    return str(max(builds, key=lambda path: path.stat().st_mtime))


def server_bin():
    """The server binary under test: DREAMTOWN_SERVER, else redis-server."""
    return os.environ.get("DREAMTOWN_SERVER") or "redis-server"


def cli_bin():
    """The cli of ``server_bin()``: DREAMTOWN_CLI, else redis-cli/valkey-cli beside it."""
    configured = os.environ.get("DREAMTOWN_CLI")
    if configured:
        return configured
    server = pathlib.Path(server_bin())
    name = "valkey-cli" if server.name.startswith("valkey") else "redis-cli"
    if server.parent != pathlib.Path(".") and (server.parent / name).exists():
        return str(server.parent / name)
    return name


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(what, condition, deadline=DEADLINE):
    """Poll ``condition`` until it is truthy; fail with ``what`` at the deadline."""
    started = time.monotonic()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() - started > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        time.sleep(0.01)


class Server:
    """A redis-server process with the module; ``client()`` connects to it."""

    def __init__(self, extra=(), module_args=(), port=None):
        """On a free port, or on ``port`` (one attempt: the caller chose it)."""
        self.dir = tempfile.mkdtemp(prefix="dreamtown-py-")
        last_error = None
        for _ in range(1 if port else 5):
            self.port = port or free_port()
            command = [
                server_bin(),
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--enable-debug-command", "yes",
                "--repl-diskless-sync-delay", "0",
                "--dir", self.dir,
                "--loadmodule", module_path(), *module_args,
                *extra,
            ]
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_until("PING", self._answers)
                return
            except AssertionError as error:
                last_error = error
                self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        raise RuntimeError(f"{server_bin()} did not start: {last_error}")

    def _answers(self):
        if self.process.poll() is not None:
            raise AssertionError(f"{server_bin()} exited with {self.process.returncode}")
        try:
            return self.client().ping()
        except redis.exceptions.ConnectionError:
            return False

    def client(self, **kwargs):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=30, **kwargs)

    def alive(self):
        try:
            return self.client().ping()
        except redis.exceptions.ConnectionError:
            return False

    def stop(self):
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def server():
    """A fresh server for one test."""
    instance = Server()
    yield instance
    instance.cleanup()


@pytest.fixture
def r(server):
    """A redis-py client (bytes replies) of the test's server."""
    return server.client()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r_both(server, request):
    """A redis-py client speaking RESP2, then (a second run) RESP3: for
    tests of replies whose shape the protocol decides (field/value pairs
    are a flat list in RESP2, a dict in RESP3)."""
    return server.client(protocol=request.param)


def as_dict(reply):
    """Field/value pairs as a dict of text: a RESP3 map (a dict) or a
    RESP2 flat list."""
    if isinstance(reply, dict):
        pairs = list(reply.items())
    else:
        pairs = [(reply[i], reply[i + 1]) for i in range(0, len(reply), 2)]
    text = lambda value: value.decode() if isinstance(value, bytes) else value
    return {text(field): text(value) for field, value in pairs}


_counter = itertools.count()


@pytest.fixture
def tenant():
    """A tenant name unique to the test."""
    return f"t{os.getpid()}-{next(_counter)}-{uuid.uuid4().hex[:6]}"


def port_is_free(port):
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port_run(count):
    """``count`` consecutive free loopback ports whose cluster bus ports
    (+10000) are free too, all below 65536 (so the first is < 55535)."""
    while True:
        base = free_port()
        ports = range(base, base + count)
        if base + count - 1 < 55535 and all(port_is_free(p) and port_is_free(p + 10000) for p in ports):
            return base


class Cluster:
    """A Redis Cluster of ``masters`` nodes, no replicas, the module on
    every node, created with the cli's ``--cluster create`` and waited for
    until every node reports cluster_state:ok."""

    def __init__(self, masters=3):
        self.nodes = []
        last_error = None
        for _ in range(5):
            base = free_port_run(masters)
            try:
                for port in range(base, base + masters):
                    self.nodes.append(Server(port=port, extra=(
                        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "5000")))
                break
            except RuntimeError as error:  # a port was taken meanwhile
                last_error = error
                self.cleanup()
        else:
            raise RuntimeError(f"cluster nodes did not start: {last_error}")
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        created = subprocess.run(
            [cli_bin(), "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        if created.returncode != 0:
            self.cleanup()
            raise RuntimeError(f"cluster create failed: {created.stdout}{created.stderr}")
        for node in self.nodes:
            wait_until(f"cluster_state:ok on {node.port}",
                       lambda node=node: node.client().cluster("info")["cluster_state"] == "ok")

    def cleanup(self):
        for node in self.nodes:
            node.cleanup()
        self.nodes = []


@pytest.fixture
def cluster():
    """A fresh 3-master cluster with the module, for one test."""
    instance = Cluster(3)
    yield instance
    instance.cleanup()
