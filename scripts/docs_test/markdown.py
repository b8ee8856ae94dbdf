"""The runnable parts of a Markdown page, in order: fenced code blocks and
the docs test's directives.

A directive is an HTML comment, invisible on the rendered page, that tells
the docs test something the reader does not need to see:

    <!-- docs-test: NAME ARGS -->

or, with a body (one command or line per line):

    <!-- docs-test: NAME ARGS
    LINE
    LINE
    -->

The directives are listed in docs_test/page.py.
"""

import re

FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([A-Za-z0-9_+-]*)\s*$")
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:\s*(\S+)\s*(.*?)\s*(-->)?\s*$")


class Block:
    """A fenced code block: its language, its lines, where it starts."""

    def __init__(self, page, line, lang, lines):
        self.page, self.line, self.lang, self.lines = page, line, lang, lines

    def where(self, offset=0):
        return "%s:%d" % (self.page, self.line + offset)

    def text(self):
        return "\n".join(self.lines) + "\n"


class Directive:
    def __init__(self, page, line, name, args, body):
        self.page, self.line, self.name, self.args, self.body = page, line, name, args, body

    def where(self):
        return "%s:%d" % (self.page, self.line)


def parse(page, text):
    """Blocks and directives of a page, in order."""
    items = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m:
            indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
            body = []
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence[:3]):
                body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
                j += 1
            items.append(Block(page, i + 2, lang, body))
            i = j + 1
            continue
        m = DIRECTIVE.match(line)
        if m:
            name, args, closed = m.group(1), m.group(2), m.group(3)
            body = []
            j = i
            if not closed:
                j = i + 1
                while j < len(lines) and lines[j].strip() != "-->":
                    body.append(lines[j])
                    j += 1
                if j >= len(lines):
                    raise ValueError("%s:%d: unterminated docs-test directive" % (page, i + 1))
            items.append(Directive(page, i + 1, name, args, body))
            i = j + 1
            continue
        i += 1
    return items
