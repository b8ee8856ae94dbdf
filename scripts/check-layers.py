#!/usr/bin/env python3
"""The architecture check of `make lint`: no import cycle among the files of
src/, every file imports only from its own layer or the layers below, and
the module API's FFI is used only in `glue/`, and commands read their
arguments only through the protocol's request types.

It reads every `use` statement and every `crate::` / `super::` / `self::`
path in the code (inline `#[cfg(test)]` modules left out: tests may reach
anywhere), resolves each path to the file that defines the module it names,
and builds the graph of file -> file imports. Then it fails on:

* a cycle: a set of files that import each other in a circle (printed as
  one path round the circle), and
* a layer violation: a file importing from a layer above its own
  (LAYERS below, lowest first; docs/operations.md, "How it is built"), and
* FFI outside glue: `unsafe`, `redis_module::raw` (or a `raw::` path other
  than `std::os::raw::`) or the `api!` macro in a file outside `src/glue/`
  (comments and strings left out; tests included), unless FFI_EXCEPTIONS
  names the file and why, and
* a parse outside the protocol: the argument reader
  (`dreamtown_protocol::args`, `Args::new`) in a file of `src/commands/`,
  whose arguments are read by a request type of
  `dreamtown_protocol::request` (one definition of each command's wire
  format, shared with the client).

Each run first checks itself on a made-up tree that breaks every rule
(each must be reported), so a check that could no longer fail fails.

Usage: scripts/check-layers.py [--graph] [src-dir]
"""

import os
import re
import sys

# Lowest first. A file may import from its own layer and any layer before
# it in this list, never from one after it. Matched on the path under src/
# (first match wins).
LAYERS = [
    ("neutral core", ["lease/"]),
    ("core", ["lib.rs", "version.rs", "events.rs", "cluster_slot.rs", "test_random.rs", "dreams/", "town/"]),
    ("glue", ["glue/"]),
    ("metrics", ["metrics/"]),
    ("services", ["services/"]),
    ("entry", ["entry.rs"]),
    ("stores", ["stores/"]),
    ("commands", ["commands/"]),
    ("module", ["module/", "fuzzing.rs"]),
]

# Files outside glue/ allowed to use the module API's FFI, each with why.
# Empty: the load path (`RedisModule_OnLoad`/`OnUnload`) is made by
# `glue::load::entry_points!`, command entry points by `entry.rs`'s macros
# over `glue::argv`, and every callback is a typed glue trampoline.
FFI_EXCEPTIONS = {}

# What counts as FFI outside glue (on code without comments and strings).
FFI_PATTERNS = [
    ("unsafe", re.compile(r"\bunsafe\b")),
    ("redis_module::raw", re.compile(r"\bredis_module\s*::\s*raw\b")),
    ("a raw:: path", re.compile(r"(?<!os::)(?<![A-Za-z0-9_])raw\s*::")),
    ("api!", re.compile(r"\bapi\s*!")),
]

# The argument reader, which only the protocol's request types use.
PARSE_PATTERNS = [
    ("dreamtown_protocol::args", re.compile(r"\bdreamtown_protocol\s*::\s*args\b")),
    ("Args::new", re.compile(r"\bArgs\s*::\s*new\b")),
]

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(r"\b(?:crate|super|self)(?:\s*::\s*(?:%s|\{))+" % IDENT)


def layer_of(rel):
    for index, (name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix)):
                return index, name
    return None, None


def module_path(rel):
    """src-relative file path -> module path (list of names)."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return parts


def strip_comments_and_strings(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'b?"(?:\\.|[^"\\])*"', '""', text)
    return text


def strip_test_modules(text):
    """Drop `#[cfg(test)] mod name { ... }` blocks."""
    out = []
    at = 0
    for match in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub\s+)?mod\s+%s\s*\{" % IDENT, text):
        if match.start() < at:
            continue
        out.append(text[at : match.start()])
        depth = 0
        index = match.end() - 1
        while index < len(text):
            if text[index] == "{":
                depth += 1
            elif text[index] == "}":
                depth -= 1
                if depth == 0:
                    break
            index += 1
        at = index + 1
    out.append(text[at:])
    return "".join(out)


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (as lists of names)."""
    tree = re.sub(r"\s+", "", tree)
    results = []

    def walk(prefix, text):
        # Split text at top-level commas.
        depth, start, items = 0, 0, []
        for index, char in enumerate(text):
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
            elif char == "," and depth == 0:
                items.append(text[start:index])
                start = index + 1
        items.append(text[start:])
        for item in items:
            if not item:
                continue
            brace = item.find("{")
            if brace >= 0 and item.endswith("}"):
                head = [p for p in item[:brace].split("::") if p]
                walk(prefix + head, item[brace + 1 : -1])
            else:
                item = item.split(" as ")[0]
                results.append(prefix + [p for p in item.split("::") if p])

    walk([], tree)
    return results


def resolve(path, current, modules):
    """A path (list of names) used in module `current` -> the src-relative
    file of the deepest module it names, or None (outside the crate)."""
    if not path:
        return None
    if path[0] == "crate":
        base, rest = [], path[1:]
    elif path[0] in ("super", "self"):
        base = list(current)
        rest = list(path)
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    else:
        return None
    found = modules.get(tuple(base))
    for name in rest:
        candidate = tuple(base + [name])
        if candidate not in modules:
            break
        base.append(name)
        found = modules[candidate]
    return found


def ffi_problems(rel, text):
    """FFI outside glue in one file (its text without comments and strings)."""
    if rel.startswith("glue/") or rel in FFI_EXCEPTIONS:
        return []
    problems = []
    for what, pattern in FFI_PATTERNS:
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            problems.append(f"ffi: {rel}:{line}: {what} outside src/glue/ (put it behind a safe glue function)")
    return problems


def parse_problems(rel, text):
    """Arguments read outside the protocol's request types, in a command's file."""
    if not rel.startswith("commands/"):
        return []
    problems = []
    for what, pattern in PARSE_PATTERNS:
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            problems.append(
                f"parse: {rel}:{line}: {what} in a command (read its arguments with a request type of"
                " dreamtown_protocol::request)"
            )
    return problems


def self_test():
    """Run the check on a made-up tree that breaks every rule; each break
    must be reported. Returns a list of what was not."""
    import tempfile

    tree = {
        "lib.rs": "mod glue;\nmod services;\nmod commands;\n",
        "glue/mod.rs": "pub mod timer;\n",
        "glue/timer.rs": "use redis_module::raw;\npub fn f() { unsafe { api!(X)() }; raw::Y; }\n",
        "services/mod.rs": "pub mod a;\npub mod b;\n",
        # A cycle (a <-> b) and an upward import (services -> commands).
        "services/a.rs": "use super::b;\nuse crate::commands::c;\n",
        "services/b.rs": "use super::a;\n",
        "commands/mod.rs": "pub mod c;\n",
        # FFI outside glue, each form; std::os::raw and comments are fine.
        "commands/c.rs": "use std::os::raw::c_int;\n// unsafe raw:: api!\n"
        "use redis_module::raw;\nfn f() { let x = unsafe { api!(RedisModule_Milliseconds)() }; }\n"
        "fn g() -> u32 { raw::REDISMODULE_OK }\n"
        "use dreamtown_protocol::args::Args;\nfn h(argv: &[&[u8]]) { let a = Args::new(argv); }\n",
    }
    expected = [
        "layer: services/a.rs (services) imports commands/c.rs (commands)",
        "cycle of 2 files",
        "ffi: commands/c.rs:3: redis_module::raw",
        "ffi: commands/c.rs:4: unsafe",
        "ffi: commands/c.rs:4: api!",
        "ffi: commands/c.rs:5: a raw:: path",
        "parse: commands/c.rs:6: dreamtown_protocol::args",
        "parse: commands/c.rs:7: Args::new",
    ]
    with tempfile.TemporaryDirectory() as root:
        for rel, text in tree.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        problems, _ = check(root)
    missed = [e for e in expected if not any(p.startswith(e) for p in problems)]
    unexpected = [p for p in problems if "glue/" in p.split(":")[1] or "c_int" in p]
    return missed + [f"reported by mistake: {p}" for p in unexpected]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show_graph = "--graph" in sys.argv
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "src")
    missed = self_test()
    if missed:
        print("check-layers: its self-test failed; not reported:\n  " + "\n  ".join(missed), file=sys.stderr)
        return 1
    problems, graph = check(root)
    if show_graph:
        for rel in sorted(graph):
            print(f"{rel}: {' '.join(sorted(graph[rel]))}")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(f"check-layers: {len(problems)} problem(s) in {len(graph)} files", file=sys.stderr)
        return 1
    print(
        f"check-layers: {len(graph)} files, no import cycle, every import within its layer or below,"
        " FFI only in glue/, arguments read only by the protocol's request types"
    )
    return 0


def check(root):
    """(problems, import graph) of the tree under `root`."""
    files = {}
    for directory, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs"):
                full = os.path.join(directory, name)
                files[os.path.relpath(full, root)] = full
    modules = {tuple(module_path(rel)): rel for rel in files}

    graph = {rel: set() for rel in files}
    ffi = []
    for rel, full in files.items():
        with open(full, encoding="utf-8") as handle:
            code = strip_comments_and_strings(handle.read())
        ffi.extend(ffi_problems(rel, code))
        ffi.extend(parse_problems(rel, code))
        text = strip_test_modules(code)
        current = module_path(rel)
        paths = []
        for statement in re.finditer(r"\buse\s+([^;]+);", text):
            paths.extend(expand_use_tree(statement.group(1)))
        for match in PATH_RE.finditer(text):
            raw = re.sub(r"\s+", "", match.group(0)).rstrip(":{")
            paths.append([p for p in raw.split("::") if p])
        for path in paths:
            target = resolve(path, current, modules)
            # A module's own children are its parts, not its dependencies.
            if target and target != rel:
                graph[rel].add(target)

    problems = []
    for rel in sorted(graph):
        own, own_name = layer_of(rel)
        if own is None:
            problems.append(f"{rel}: in no layer (add it to LAYERS in {os.path.basename(__file__)})")
            continue
        for target in sorted(graph[rel]):
            theirs, their_name = layer_of(target)
            if theirs is not None and theirs > own:
                problems.append(f"layer: {rel} ({own_name}) imports {target} ({their_name})")

    # Cycles: strongly connected components of more than one file (Tarjan).
    index_of, low, stack, on_stack, components = {}, {}, [], set(), []
    counter = [0]

    def connect(node):
        index_of[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index_of:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index_of[target])
        if low[node] == index_of[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in index_of:
            connect(node)
    for component in components:
        members = set(component)
        # One circle through the component, for the message.
        start = component[0]
        path, seen, node = [start], {start}, start
        while True:
            nxt = sorted(t for t in graph[node] if t in members)
            step = next((t for t in nxt if t == start and len(path) > 1), None) or next(
                (t for t in nxt if t not in seen), None
            )
            if step is None or step == start:
                break
            path.append(step)
            seen.add(step)
            node = step
        problems.append(f"cycle of {len(component)} files: " + " -> ".join(path + [start]))

    problems.extend(sorted(ffi))
    return problems, graph

if __name__ == "__main__":
    sys.exit(main())
