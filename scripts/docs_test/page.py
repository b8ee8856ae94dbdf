"""One page's examples, run in order as one script against a fresh server.

What runs, by block:

* a redis-cli transcript (its first line a prompt): replayed on one
  connection, replies compared (docs_test/transcript.py); afterwards every
  `dreamtown.*` setting must be back where the page started: an example
  that changes one restores it;
* `ACL SETUSER` lines: applied and exercised (docs_test/acl.py);
* a `# redis.conf` snippet: a real server started from it (docs_test/code.py);
* `python` and `js` blocks: run against the page's server (Python with the
  project's venv: redis-py; Node with target/node's ioredis); they must exit
  by themselves, with status 0;
* `rust` blocks: compiled (all pages' at the end);
* `json` blocks: parsed; a Prometheus configuration (`yaml`, with
  `scrape_configs:`): checked by `promtool check config`;
* `sh` blocks the page marks `run`: run in a scratch directory.

Anything else (syntax summaries, shell sessions, diagrams) is prose.

In code and commands the docs' addresses stand for the test's: port 6390
for the page's server, 7001-7003 for its cluster's nodes,
/path/to/libdreamtown.so for the module, /path/to/dreamtown/ for this
checkout.

Directives (HTML comments, see docs_test/markdown.py):

    skip REASON         the next block is not run (say why)
    setup               its body's commands run first, unseen (errors fail)
    background          each line of its body is sent on a connection of its own
                        and left blocked (waits until the server counts them
                        blocked), until the page ends
    wait-until          its body: a command, then a text; waits (up to 30 s)
                        until the command's reply contains the text
    subscribe N CHANNEL N clients subscribed to CHANNEL until the page ends
    server ARGS         extra arguments for the page's server (before any block)
    cluster             the page's code needs the 3-master cluster
    rust-before         its body goes first in the next Rust fragment
    run                 the next sh block runs
    acl-partial         the next ACL recipe grants part of a family on purpose
    sleep SECONDS       wait that long (prefer wait-until)
"""

import os
import re
import shlex
import tempfile
import time

from . import acl, code, markdown, resp, transcript
from .server import Cluster, Server

DOC_PORT = "6390"
DOC_CLUSTER = ["7001", "7002", "7003"]
DOC_MODULE = "/path/to/libdreamtown.so"
DOC_CHECKOUT = "/path/to/dreamtown/"


class Context:
    """What every page shares: binaries, paths, the Rust examples."""

    def __init__(self, root, server, module, python, node_modules, cargo, target_dir):
        self.root, self.server, self.module = root, server, module
        self.python, self.node_modules, self.cargo = python, node_modules, cargo
        self.rust = code.Rust(root, target_dir)
        self.rust.load_manifest("docs/client.md")


class PageRun:
    def __init__(self, ctx, path):
        self.ctx, self.path = ctx, path
        self.name = os.path.relpath(path, ctx.root)
        self.failures = []
        self.counts = {}
        self.server = None
        self.cluster = None
        self.replay = None
        self.keep = []  # background and subscribed connections
        self.blocked = 0

    def count(self, what, n=1):
        self.counts[what] = self.counts.get(what, 0) + n

    def substitute_text(self, text):
        text = text.replace(DOC_MODULE, self.ctx.module)
        text = text.replace(DOC_CHECKOUT, self.ctx.root + "/")
        text = re.sub(r"(?<!\d)%s(?!\d)" % DOC_PORT, str(self.server.port), text)
        if self.cluster:
            for doc, port in zip(DOC_CLUSTER, self.cluster.ports):
                text = re.sub(r"(?<!\d)%s(?!\d)" % doc, str(port), text)
        return text

    def substitute_arg(self, arg):
        if arg == DOC_MODULE.encode():
            return self.ctx.module.encode()
        if arg == DOC_PORT.encode():
            return str(self.server.port).encode()
        return arg

    def run(self):
        with open(self.path) as f:
            items = markdown.parse(self.name, f.read())
        server_args = []
        for item in items:
            if isinstance(item, markdown.Directive) and item.name == "server":
                server_args += shlex.split(item.args)
        needs_cluster = any(isinstance(i, markdown.Directive) and i.name == "cluster" for i in items)
        self.server = Server(self.ctx.server, self.ctx.module, server_args)
        self.workdir = tempfile.mkdtemp(prefix="docs-test-page-")
        try:
            if needs_cluster:
                self.cluster = Cluster(self.ctx.server, self.ctx.module)
            self.replay = transcript.Replay(self.server.connect, self.substitute_arg)
            self.settings = self.dreamtown_settings()
            pending = {}
            for item in items:
                if isinstance(item, markdown.Directive):
                    self.directive(item, pending)
                else:
                    self.block(item, pending)
                    pending = {}
            self.failures += self.replay.failures
            if self.cluster:
                self.failures += self.cluster_redirects()
        finally:
            for c in self.keep:
                c.close()
            if self.cluster:
                self.cluster.stop()
            self.server.stop()
        return self.failures

    def cluster_redirects(self):
        """A page's cluster examples route every call to its owner: no node
        answered MOVED or ASK (clients follow them silently)."""
        failures = []
        for node in self.cluster.nodes:
            c = node.connect()
            try:
                stats = c.call("INFO", "errorstats").decode()
            finally:
                c.close()
            for line in stats.split("\r\n"):
                if line.startswith(("errorstat_MOVED:", "errorstat_ASK:")):
                    failures.append("%s: the cluster examples made node %d answer %s"
                                    % (self.name, node.port, line))
        return failures

    def wait_until(self, d, args, done, deadline=30.0):
        c = self.server.connect()
        try:
            end = time.time() + deadline
            while True:
                reply = c.call(*args)
                if done(reply):
                    return
                if time.time() > end:
                    self.failures.append("%s: %s: still %r after %ds" % (d.where(), d.name, reply, deadline))
                    return
                time.sleep(0.02)
        finally:
            c.close()

    def dreamtown_settings(self):
        c = self.server.connect()
        try:
            flat = c.call("CONFIG", "GET", "dreamtown.*")
        finally:
            c.close()
        return dict(zip(flat[::2], flat[1::2]))

    def directive(self, d, pending):
        if d.name in ("skip", "rust-before", "run", "acl-partial"):
            pending[d.name] = d
        elif d.name == "setup":
            self.replay.setup(d.where(), d.body)
        elif d.name == "background":
            for line in d.body:
                if line.strip():
                    c = self.server.connect()
                    c.send(self.replay.args_of(line))
                    self.keep.append(c)
                    self.blocked += 1
            self.wait_until(d, ["INFO", "clients"], lambda r: _field(r, "blocked_clients") >= self.blocked)
        elif d.name == "wait-until":
            command, text = d.body[0], d.body[1]
            args = self.replay.args_of(command)
            self.wait_until(d, args, lambda r: text.encode() in r if isinstance(r, bytes) else text in str(r))
        elif d.name == "subscribe":
            n, channel = d.args.split()
            for _ in range(int(n)):
                c = self.server.connect()
                c.send(["SUBSCRIBE", channel])
                c.read()
                self.keep.append(c)
        elif d.name == "sleep":
            time.sleep(float(d.args))
        elif d.name not in ("server", "cluster"):
            self.failures.append("%s: unknown docs-test directive %r" % (d.where(), d.name))

    def block(self, block, pending):
        if "skip" in pending:
            if not pending["skip"].args:
                self.failures.append("%s: a skip says why" % pending["skip"].where())
            self.count("skipped")
            return
        source = self.substitute_text(block.text())
        if transcript.is_transcript(block):
            before = self.replay.commands
            self.replay.run_block(block)
            self.count("commands", self.replay.commands - before)
            now = self.dreamtown_settings()
            changed = ["%s %s (was %s)" % (k.decode(), now[k].decode(), v.decode())
                       for k, v in self.settings.items() if now.get(k) != v]
            if changed:
                self.failures.append("%s: the example leaves %s: restore it in the example"
                                     % (block.where(), ", ".join(changed)))
                self.settings = now
        elif block.lines and all(l.strip().upper().startswith("ACL SETUSER") for l in block.lines if l.strip()):
            recipe = acl.Recipe(self.server.connect, self.substitute_arg)
            recipe.run(block, "acl-partial" in pending)
            self.failures += recipe.failures
            self.count("ACL calls", recipe.calls)
        elif code.is_redis_conf(block):
            self.failures += code.redis_conf(block, source, self.ctx.server)
            self.count("redis.conf")
        elif block.lang in ("python", "py"):
            self.run_one("python", code.python(block, source, self.ctx.python, self.workdir))
        elif block.lang in ("js", "javascript"):
            self.run_one("node", code.node(block, source, self.ctx.node_modules, self.workdir))
        elif block.lang in ("sh", "bash") and "run" in pending:
            env = dict(os.environ, DREAMTOWN_PORT=str(self.server.port))
            self.run_one("sh", code.shell(block, source, self.workdir, env))
        elif block.lang == "rust":
            before = pending["rust-before"].body if "rust-before" in pending else []
            self.ctx.rust.add(block, source, before)
            self.count("rust")
        elif code.Rust.is_manifest(block):
            self.count("toml")  # the Rust examples' dependencies: compiled with them
        elif block.lang in ("yaml", "yml") and "scrape_configs:" in source:
            self.run_one("promtool", code.prometheus_config(block, source, self.workdir))
        elif block.lang == "json":
            self.run_one("json", code.json_block(block))

    def run_one(self, what, failure):
        self.count(what)
        if failure:
            self.failures.append(failure)

    def summary(self):
        parts = ["%d %s" % (n, what) for what, n in sorted(self.counts.items())]
        return "%s: %s" % (self.name, ", ".join(parts) if parts else "nothing to run")


def _field(info, name):
    for line in info.decode(errors="replace").split("\r\n"):
        if line.startswith(name + ":"):
            return int(line.split(":", 1)[1])
    return 0
