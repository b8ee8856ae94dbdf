#!/usr/bin/env python3
"""Checks the internal links of README.md and docs/*.md.

Every `](target)` link (and `[name]: target` definition) that is not a URL
must name an existing file, relative to the page it is in, and when it has a
`#anchor` into a Markdown page, that page must have a heading whose GitHub
anchor is exactly it. Anchors are made as GitHub makes them: the heading's
text as rendered (code backticks, emphasis and link syntax gone), lower-cased,
every character that is not a letter, digit, mark, space, `-` or `_` dropped,
spaces turned into `-`, and `-1`, `-2`, ... added to repeated ones. Headings
and links inside fenced code blocks and code spans do not count.

Also the names of code: every `a::b` path in a comment of the Rust sources
(src/, client/, console/, test-support/, bench/, tests/, fuzz/) or in a code
span of a page whose first segment is a module of one of the tree's crates
(or `crate::`, `dreamtown::`, `dreamtown_client::`, ...) must name a module
that exists and, past the last module, an item that module defines
(`fn`, `struct`, `enum`, `trait`, `type`, `const`, `static`, `mod`, a macro,
a variant or a `pub use`); what follows an item (a method, a field) is not
checked. A path not from the crate's root is also tried from each of its
modules (a sibling's path, a page naming a tool's module by its place).
So a comment or page naming a module that was moved or renamed fails.

Usage: scripts/check-doc-links.py [FILE.md|FILE.rs ...]
  default: README.md, CHANGELOG.md, docs/*.md, */README.md, seeds/*.md and
  the Rust sources above
Prints every broken link or stale name as path:line: target (reason);
exits 1 if any.
"""

import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text):
    """(line number, line) for every line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), start=1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            yield number, line
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
            fence = None


def rendered(heading):
    """A heading's text as GitHub renders it, near enough for its anchor."""
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links, images
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)  # emphasis markers
    return text


def slug(heading):
    kept = []
    for char in rendered(heading).strip().lower():
        if char in " -_" or unicodedata.category(char)[0] in "LNM":
            kept.append(char)
    return "".join(kept).replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        found = set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def links(text):
    for number, line in prose_lines(text):
        definition = LINK_DEFINITION.match(line)
        if definition:
            yield number, definition.group(1)
            continue
        for match in INLINE_LINK.finditer(CODE_SPAN.sub("``", line)):
            yield number, match.group(1)


def check(page):
    problems = []
    for number, target in links(page.read_text(encoding="utf-8")):
        if not target or URL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        destination = (page.parent / file_part).resolve() if file_part else page
        where = f"{page.relative_to(ROOT)}:{number}: {target}"
        if not destination.exists():
            problems.append(f"{where} (no such file)")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            problems.append(f"{where} (no heading with anchor #{anchor})")
    return problems


# The crates of the tree: a path's first segment names one, or (without a
# crate name) a module of the crate the file is in; the pages may name any.
CRATES = {
    "dreamtown": ROOT / "src",
    "dreamtown_client": ROOT / "client/src",
    "dreamtown_console": ROOT / "console/src",
    "dreamtown_test_support": ROOT / "test-support/src",
    "dreamtown_bench": ROOT / "bench/src",
    "dreamtown_migrate": ROOT / "migrate/src",
    "dreamtown_exporter": ROOT / "exporter/src",
    "dreamtown_protocol": ROOT / "protocol/src",
}
CRATE_OF_DIRECTORY = {"client": "dreamtown_client", "console": "dreamtown_console", "test-support": "dreamtown_test_support", "bench": "dreamtown_bench", "src": "dreamtown", "tests": "dreamtown", "migrate": "dreamtown_migrate", "exporter": "dreamtown_exporter", "protocol": "dreamtown_protocol"}
RUST_SOURCES = ["src", "client", "console", "test-support", "bench", "tests", "migrate", "exporter", "protocol", "fuzz/fuzz_targets"]
CODE_PATH = re.compile(r"(?<![\w:])([a-z_][a-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
COMMENT = re.compile(r"(?<![:\"'])//(.*)$")
DEFINITION = (
    r"(?:\bfn|\bstruct|\benum|\btrait|\btype|\bconst|\bstatic|\bmod|\bunion|macro_rules!)\s+{0}\b"
    r"|^\s*pub(?:\([^)]*\))?\s+use\s[^;]*\b{0}\b"  # a re-export
    r"|^\s*{0}\s*[,({{=]"  # an enum variant
    r"|^\s*(?:#\[[^\]]*\]\s*)+{0}\b"  # an attributed variant
)


def module_file(directory):
    for name in ("lib.rs", "mod.rs"):
        if (directory / name).exists():
            return directory / name
    return None


def defines(file, name, cache={}):
    if file not in cache:
        cache[file] = file.read_text(encoding="utf-8")
    return re.search(DEFINITION.format(re.escape(name)), cache[file], re.M) is not None


def resolves(directory, segments):
    """Whether segments name a module under directory, or an item of one."""
    file = module_file(directory)
    for segment in segments:
        if directory is not None and (directory / f"{segment}.rs").exists():
            file = directory / f"{segment}.rs"
            directory = directory / segment if (directory / segment).is_dir() else None
        elif directory is not None and (directory / segment / "mod.rs").exists():
            directory = directory / segment
            file = directory / "mod.rs"
        else:
            return file is not None and defines(file, segment)
    return True


def has_module(directory, name):
    return (directory / f"{name}.rs").exists() or (directory / name / "mod.rs").exists()


def module_directories(crate, cache={}):
    if crate not in cache:
        root = CRATES[crate]
        cache[crate] = [root, *sorted(p for p in root.rglob("*") if p.is_dir())]
    return cache[crate]


def code_paths(page):
    """(line number, path) of every a::b path in a Rust comment or a page's code span."""
    markdown = page.suffix == ".md"
    fence = None
    for number, line in enumerate(page.read_text(encoding="utf-8").split("\n"), start=1):
        if markdown:
            spans = [m.group(2) for m in CODE_SPAN.finditer(line)]
        else:
            comment = COMMENT.search(line)
            spans = [comment.group(1)] if comment else []
        for span in spans:
            for path in CODE_PATH.findall(span):
                yield number, path


def check_names(page):
    parts = page.relative_to(ROOT).parts
    home = CRATE_OF_DIRECTORY.get(parts[0]) if page.suffix == ".rs" else None
    homes = [home] if home else list(CRATES)
    problems = []
    for number, path in code_paths(page):
        first, *rest = path.split("::")
        if first == "crate" and home:
            tries = [(CRATES[home], rest)]
        elif first in CRATES:
            tries = [(CRATES[first], rest)]
        else:
            tries = [(d, [first, *rest]) for crate in homes for d in module_directories(crate) if has_module(d, first)]
        if not tries or not tries[0][1]:
            continue  # not a path into this tree (std::, redis::, a crate's own name)
        if not any(resolves(directory, segments) for directory, segments in tries):
            problems.append(f"{page.relative_to(ROOT)}:{number}: {path} (names nothing in the tree)")
    return problems


def default_files():
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    pages += sorted(ROOT.glob("*/README.md")) + sorted((ROOT / "seeds").glob("*.md"))
    sources = sorted(p for d in RUST_SOURCES for p in (ROOT / d).rglob("*.rs") if "target" not in p.relative_to(ROOT).parts)
    return [p for p in pages if p.exists()], sources


def main(arguments):
    if arguments:
        files = [Path(a).resolve() for a in arguments]
        pages, sources = [f for f in files if f.suffix != ".rs"], [f for f in files if f.suffix == ".rs"]
    else:
        pages, sources = default_files()
    broken = [p for page in pages for p in check(page)]
    # CHANGELOG.md is history: the names its past entries (and the breaking
    # changes' "was") give were the tree's then. Its links are checked.
    stale = [p for file in pages + sources if file.name != "CHANGELOG.md" for p in check_names(file)]
    for problem in broken + stale:
        print(problem)
    print(f"{len(pages)} pages, {len(broken)} broken links; {len(pages) + len(sources)} files, {len(stale)} stale code names", file=sys.stderr)
    return 1 if broken or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
