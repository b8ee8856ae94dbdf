#!/usr/bin/env python3
"""make test-docs: every example in README.md and docs/*.md, run.

Each page is one script, run in order against a fresh server with the module
(its redis-cli transcripts replayed and compared, its ACL recipes applied
and exercised, its redis.conf snippets loaded, its Python and Node examples
run), then every page's Rust examples are compiled. What runs and how:
scripts/docs_test/page.py. Also: `make help` and docs/operations.md's
Development table name every make target.

    scripts/test-docs.py [PAGE ...]      (default: README.md docs/*.md)
    scripts/test-docs.py --print PAGE    also print each transcript as this
                                         server answers it (to update a page)

Environment (the Makefile sets them): DREAMTOWN_SERVER, DREAMTOWN_MODULE,
DOCS_PYTHON (a python with redis-py), DOCS_NODE_MODULES (with ioredis),
CARGO, CARGO_TARGET_DIR.
"""

import glob
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from docs_test.page import Context, PageRun  # noqa: E402


def make_targets_listed():
    """Every target of the Makefile is in `make help` and the Development table."""
    failures = []
    with open(os.path.join(ROOT, "Makefile")) as f:
        makefile = f.read()
    phony = set()
    for m in re.finditer(r"^\.PHONY:(.*)$", makefile, re.M):
        phony |= set(m.group(1).split())
    phony -= {"all", "help"}
    helptext = subprocess.run(["make", "-s", "--no-print-directory", "help"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True).stdout
    named = set(re.findall(r"(?:make |/ )([a-z][a-z-]*)", helptext))
    for target in sorted(phony - named):
        failures.append("Makefile: `make help` does not list `%s`" % target)
    with open(os.path.join(ROOT, "docs", "operations.md")) as f:
        ops = f.read()
    table = ops[ops.index("## Development"):]
    table = table[: table.index("\n\n", table.index("| target"))]
    listed = set(re.findall(r"`make ([a-z-]+)`", table)) | set(re.findall(r"/ `make ([a-z-]+)`", table))
    for target in sorted(phony - listed):
        failures.append("docs/operations.md: the Development table does not list `make %s`" % target)
    return failures


def main(argv):
    show = "--print" in argv
    argv = [a for a in argv if a != "--print"]
    pages = argv or ["README.md"] + sorted(glob.glob("docs/*.md", root_dir=ROOT))
    target_dir = os.path.abspath(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"))
    ctx = Context(
        root=ROOT,
        server=os.environ.get("DREAMTOWN_SERVER", "redis-server"),
        module=os.environ.get("DREAMTOWN_MODULE", os.path.join(target_dir, "release", "libdreamtown.so")),
        python=os.environ.get("DOCS_PYTHON", os.path.join(ROOT, ".venv", "bin", "python")),
        node_modules=os.environ.get("DOCS_NODE_MODULES", os.path.join(ROOT, "target", "node", "node_modules")),
        cargo=os.environ.get("CARGO", "cargo"),
        target_dir=target_dir,
    )
    started = time.time()
    failures = []
    for page in pages:
        run = PageRun(ctx, os.path.join(ROOT, page))
        t = time.time()
        try:
            failures += run.run()
        except Exception as e:  # a server that would not start, a broken page
            failures.append("%s: %s: %s" % (page, type(e).__name__, e))
        print("%s  (%.1fs)" % (run.summary(), time.time() - t), flush=True)
        if show and run.replay:
            for line_no, command, shown in run.replay.log:
                print("%s:%d\n127.0.0.1:6390> %s\n%s" % (page, line_no, command, "\n".join(shown)))
    t = time.time()
    failures += ctx.rust.build(ctx.cargo)
    print("Rust examples: %d compiled  (%.1fs)" % (len(ctx.rust.blocks), time.time() - t), flush=True)
    if not argv:
        failures += make_targets_listed()
    for f in failures:
        print("FAIL " + f)
    print("docs: %d failure(s) in %.0fs" % (len(failures), time.time() - started))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
