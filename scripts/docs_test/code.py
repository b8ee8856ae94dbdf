"""Code examples: Python and Node run against the page's server, shell
recipes the page marks runnable run, redis.conf snippets loaded by a real
server, JSON parsed, and Rust compiled (`cargo check`, all pages' Rust at
once, in one scratch crate under target/docs-test/rust, with the
workspace's lockfile).
"""

import json
import os
import re
import subprocess
import tempfile
import textwrap

from . import resp, transcript
from .server import Server

TIMEOUT = 120


PRINTED = re.compile(r"(?:#|//) → (.*)$")


def run_program(argv, where, env=None, timeout=TIMEOUT, cwd=None, source=None):
    """Run a program; a failure message, or None. When `source` marks what
    its prints print (`# → text` or `// → text` at the end of a line), its
    standard output must be those lines, in order (matched as transcripts'
    replies are: UUIDs and times by pattern)."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        return "%s: did not exit within %ds:\n%s" % (where, timeout, _tail(out))
    out = done.stdout.decode(errors="replace")
    if done.returncode != 0:
        return "%s: exited %d:\n%s" % (where, done.returncode, _tail(out + done.stderr.decode(errors="replace")))
    expected = [m.group(1).rstrip() for m in map(PRINTED.search, (source or "").split("\n")) if m]
    if expected:
        actual = out.rstrip("\n").split("\n") if out.strip() else []
        if transcript.lines_match(expected, actual, [], transcript.Bindings(), raw=False) is None:
            return "%s: printed\n%s\n    where the page says\n%s" % (
                where, "\n".join("      " + a for a in actual), "\n".join("      " + e for e in expected))
    return None


def _tail(text, n=25):
    lines = text.rstrip().split("\n")
    return "\n".join("      " + line for line in lines[-n:])


def python(block, source, python_bin, workdir):
    path = os.path.join(workdir, "example_%d.py" % block.line)
    with open(path, "w") as f:
        f.write(source)
    return run_program([python_bin, path], block.where(), cwd=workdir, source=source)


def node(block, source, node_modules, workdir):
    path = os.path.join(workdir, "example_%d.js" % block.line)
    with open(path, "w") as f:
        f.write(source)
    env = dict(os.environ, NODE_PATH=node_modules)
    return run_program(["node", path], block.where(), env=env, cwd=workdir, timeout=60, source=source)


def shell(block, source, workdir, env):
    path = os.path.join(workdir, "example_%d.sh" % block.line)
    with open(path, "w") as f:
        f.write(source)
    return run_program(["bash", "-euo", "pipefail", path], block.where(), env=env, cwd=workdir)


def is_redis_conf(block):
    first = next((line.strip() for line in block.lines if line.strip()), "")
    return block.lang in ("conf", "") and first in ("# redis.conf", "# valkey.conf")


def redis_conf(block, source, binary):
    """Start a server from the snippet; its settings must be what it says."""
    failures = []
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write(source)
        conf = f.name
    expected = []
    for line in source.split("\n"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if words[0].lower() == "loadmodule":
            pairs = words[2:]
            expected += [("dreamtown." + pairs[i], pairs[i + 1]) for i in range(0, len(pairs) - 1, 2)]
        elif words[0].lower() not in ("include", "rename-command", "user"):
            expected.append((words[0], " ".join(words[1:]).strip('"')))
    try:
        server = Server(binary, None, config_file=conf)
    except RuntimeError as e:
        os.unlink(conf)
        return ["%s: %s does not start with this snippet:\n%s" % (block.where(), os.path.basename(binary), e)]
    try:
        c = server.connect()
        modules = c.call("MODULE", "LIST")
        if "loadmodule" in source and not any(b"dreamtown" in m for entry in modules for m in entry):
            failures.append("%s: the snippet's server has no dreamtown module" % block.where())
        for name, value in expected:
            got = c.call("CONFIG", "GET", name)
            if isinstance(got, list) and len(got) == 2 and got[1].decode() != value:
                failures.append("%s: CONFIG GET %s is %r, the snippet sets %r"
                                % (block.where(), name, got[1].decode(), value))
        c.close()
    finally:
        server.stop()
        os.unlink(conf)
    return failures


def prometheus_config(block, source, workdir):
    """A Prometheus configuration (`scrape_configs:`): promtool checks it,
    the rule files it names included."""
    path = os.path.join(workdir, "prometheus_%d.yml" % block.line)
    with open(path, "w") as f:
        f.write(source)
    return run_program(["promtool", "check", "config", path], block.where(), cwd=workdir)


def json_block(block):
    try:
        json.loads(block.text())
    except ValueError as e:
        return "%s: not JSON: %s" % (block.where(), e)
    return None


class Rust:
    """Every Rust example of every page, compiled (`cargo check`: type-checked,
no code generated) in one scratch crate.

    A block with `fn main` is a program of its own; any other block is a
    fragment, compiled as the body of an async function returning
    `Result<(), Box<dyn Error>>`, its `use` lines hoisted, after the lines
    of a `rust-before` directive (what the page's prose says it has:
    `let mut queue = ...;`). The crate's dependencies are the TOML block of
    docs/client.md that shows them (its `path` made absolute)."""

    PRELUDE = textwrap.dedent("""\
        #![allow(unused, unreachable_code, clippy::all)]
        use std::time::*;
        use dreamtown_client::dreams::*;
        use dreamtown_client::town::*;
        """)

    def __init__(self, root, target_dir):
        self.root, self.target_dir = root, target_dir
        self.crate = os.path.join(target_dir, "docs-test", "rust")
        self.blocks = []
        self.dependencies = None

    def add(self, block, source, before):
        self.blocks.append((block, source, before))

    def load_manifest(self, page):
        """The [dependencies] block of `page` (docs/client.md), whichever pages run."""
        from . import markdown
        with open(os.path.join(self.root, page)) as f:
            for item in markdown.parse(page, f.read()):
                if isinstance(item, markdown.Block) and self.is_manifest(item):
                    self.manifest(item)
                    return

    @staticmethod
    def is_manifest(block):
        return block.lang == "toml" and block.lines[:1] == ["[dependencies]"] and "dreamtown-client" in block.text()

    def manifest(self, block):
        """docs/client.md's [dependencies] block: the crate's dependencies."""
        text = block.text()
        self.dependencies = re.sub(r'path = "client"', 'path = "%s"' % os.path.join(self.root, "client"), text)
        self.dependencies_where = block.where()

    def build(self, cargo):
        if not self.blocks:
            return []
        if self.dependencies is None:
            return ["Rust examples, but no [dependencies] block (docs/client.md) to build them with"]
        bins = os.path.join(self.crate, "src", "bin")
        os.makedirs(bins, exist_ok=True)
        for name in os.listdir(bins):
            os.unlink(os.path.join(bins, name))
        names = {}
        for block, source, before in self.blocks:
            name = re.sub(r"[^a-z0-9]+", "_", "%s_%d" % (block.page.lower(), block.line)).strip("_")
            names[name] = block
            with open(os.path.join(bins, name + ".rs"), "w") as f:
                f.write("// %s\n" % block.where())
                f.write(self.program(source, before))
        with open(os.path.join(self.crate, "Cargo.toml"), "w") as f:
            f.write('[package]\nname = "docs-examples"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n')
            f.write(self.dependencies)
            f.write("\n[workspace]\n")
        with open(os.path.join(self.root, "Cargo.lock")) as src, open(os.path.join(self.crate, "Cargo.lock"), "w") as dst:
            dst.write(src.read())
        env = dict(os.environ, CARGO_TARGET_DIR=self.target_dir)
        done = subprocess.run([cargo, "check", "--quiet", "--bins", "--message-format=short",
                               "--manifest-path", os.path.join(self.crate, "Cargo.toml")],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        if done.returncode == 0:
            return []
        out = done.stdout.decode(errors="replace")
        failures = []
        for name, block in names.items():
            errors = [line for line in out.split("\n") if "/%s.rs:" % name in line and "error" in line]
            if errors:
                failures.append("%s: does not compile:\n%s" % (block.where(), "\n".join("      " + e for e in errors[:10])))
        if not failures:
            failures.append("the Rust examples do not build (dependencies %s):\n%s" % (self.dependencies_where, _tail(out)))
        return failures

    def program(self, source, before):
        if re.search(r"\bfn main\s*\(", source):
            return self.PRELUDE.split("\n", 1)[0] + "\n" + source
        uses, body = [], []
        for line in source.split("\n"):
            (uses if line.startswith("use ") else body).append(line)
        inner = "\n".join(before + body)
        return (self.PRELUDE + "\n".join(uses) + "\n\n"
                + "async fn fragment() -> Result<(), Box<dyn std::error::Error>> {\n"
                + textwrap.indent(inner, "    ") + "\n    Ok(())\n}\n\nfn main() {}\n")
