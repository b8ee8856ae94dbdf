"""redis-cli transcripts: parsed into steps, replayed, replies compared.

A transcript is a fenced block whose first line is a redis-cli prompt
(`127.0.0.1:6390> ` or just `> `). Each prompt line is a command; the lines
up to the next prompt are what redis-cli printed, and a last `(0.51s)` line
is its timing note (printed for calls of half a second or more).

A reply matches the page when every line is equal, except where the page
shows something that differs from run to run; those are matched by
pattern:

* a UUID matches a UUID, and binds: the page's UUID then stands for the
  actual one in later commands and replies (a fire's `fire_id` drained and
  acknowledged). A UUID first seen in a command is the caller's own, and
  stands for itself;
* a unix time, seconds (10 digits) or milliseconds (13), matches one within
  two days of now, and an RFC 3339 time any RFC 3339 time;
* the value of a field whose name ends in `_ms` or `_us` (an age, a
  duration: `oldest_ready_age_ms`, `catch_up_last_duration_ms`) matches any
  integer, and so does a fire payload's `seconds_since_last_cycle`;
* a bulk string that matched by pattern binds too: the page's string then
  stands for the actual one when a later command passes it (a drained
  payload acknowledged);
* the reply of TTL, PTTL, EXPIRETIME and PEXPIRETIME matches within 2% (and
  5 units) of the page's;
* INFO's `<name>_version:` fields match any version (`0.2.0`);
* a line that is just `...` stands for any number of lines. INFO's text
  (printed raw) may end before the reply does: the page shows its first
  lines, or those after a `...`.
"""

import re
import time

from . import resp

PROMPT = re.compile(r"^(?:[\w.-]+:\d+(?:\[\d+\])?> |> )(.*)$")
TIMING = re.compile(r"^\((\d+\.\d\d)s\)$")
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)"
UNIX_MS = r"(?<![\d.])1[6-9]\d{11}(?![\d.])"
UNIX_S = r"(?<![\d.])1[6-9]\d{8}(?![\d.])"
# One alternation, longest first, so the tokenizer sees the whole token.
JSON_DURATION = r'(?<=seconds_since_last_cycle\\":)\d+'
VOLATILE = re.compile("(?P<uuid>%s)|(?P<rfc3339>%s)|(?P<ms>%s)|(?P<s>%s)|(?P<secs>%s)"
                      % (UUID, RFC3339, UNIX_MS, UNIX_S, JSON_DURATION))
BULK_LINE = re.compile(r'^(\s*(?:\d+[)#~] )*)(".*")$')
FIELD_DURATION = re.compile(r'"[\w.]*_(?:ms|us)"$')
INFO_DURATION = re.compile(r"^(\w*_(?:ms|us):)(\d+)$")
INFO_VERSION = re.compile(r"^(\w*_version:)\d+\.\d+\.\d+$")
INTEGER_LINE = re.compile(r"^((?:\s*\d+[)#~] )*\(integer\) )(-?\d+)$")
MAP_DURATION = re.compile(r'^(.*"[\w.]*_(?:ms|us)" => \(integer\) )(-?\d+)$')
TTL_COMMANDS = {"ttl", "pttl", "expiretime", "pexpiretime"}
TWO_DAYS = 2 * 86400


def is_transcript(block):
    first = next((line for line in block.lines if line.strip()), "")
    return bool(PROMPT.match(first))


class Step:
    def __init__(self, line_no, command, expected, timing):
        self.line_no, self.command, self.expected, self.timing = line_no, command, expected, timing


def steps(block):
    """The transcript's steps: (line, command text, expected lines, timing or None)."""
    out = []
    current = None
    for offset, line in enumerate(block.lines):
        m = PROMPT.match(line)
        if m:
            if current:
                out.append(current)
            current = Step(block.line + offset, m.group(1), [], None)
        elif current is not None:
            current.expected.append(line)
    if current:
        out.append(current)
    for step in out:
        while step.expected and not step.expected[-1].strip():
            step.expected.pop()
        if step.expected and TIMING.match(step.expected[-1].strip()):
            step.timing = float(TIMING.match(step.expected[-1].strip()).group(1))
            step.expected.pop()
    return out


class Bindings:
    """The page's UUIDs and what they stand for in this run."""

    def __init__(self):
        self.uuid = {}
        self.strings = {}  # page bytes -> actual bytes

    def own(self, text):
        """UUIDs a command names for the first time are the caller's own."""
        for u in re.findall(UUID, text):
            if u not in self.uuid and u not in self.uuid.values():
                self.uuid[u] = u

    def apply(self, data):
        if data in self.strings:
            return self.strings[data]
        for page, actual in self.uuid.items():
            if page != actual:
                data = data.replace(page.encode(), actual.encode())
        return data


def _line_pattern(expected):
    """A regex for one expected line and the kinds of its volatile parts."""
    parts, kinds, pos = [], [], 0
    for m in VOLATILE.finditer(expected):
        parts.append(re.escape(expected[pos:m.start()]))
        kind = m.lastgroup
        parts.append("(%s)" % {"uuid": UUID, "rfc3339": RFC3339, "ms": r"\d{13}", "s": r"\d{10}",
                               "secs": r"\d+"}[kind])
        kinds.append((kind, m.group(0)))
        pos = m.end()
    parts.append(re.escape(expected[pos:]))
    return "".join(parts), kinds


def _duration(expected, previous):
    """The integer of a line that holds an age or a duration, else None."""
    m = INTEGER_LINE.match(expected)
    if m and previous is not None and FIELD_DURATION.search(previous.strip()):
        return m
    return MAP_DURATION.match(expected) or INFO_DURATION.match(expected)


def line_matches(expected, actual, previous, command, bindings, tentative):
    """Whether `actual` is what the page's `expected` line stands for."""
    if expected == actual:
        for u in re.findall(UUID, expected):
            if bindings.uuid.get(u, tentative.get(u, u)) != u:
                return False
            if u not in bindings.uuid and u not in bindings.uuid.values():
                tentative.setdefault(u, u)
        return True
    name = command[0].decode(errors="replace").lower() if command else ""
    if name in TTL_COMMANDS:
        e, a = INTEGER_LINE.match(expected), INTEGER_LINE.match(actual)
        if e and a and e.group(1) == a.group(1):
            want, got = int(e.group(2)), int(a.group(2))
            return abs(got - want) <= max(5, abs(want) * 0.02)
    v = INFO_VERSION.match(expected)
    if v:
        return re.match(re.escape(v.group(1)) + r"\d+\.\d+\.\d+$", actual) is not None
    d = _duration(expected, previous)
    if d:
        pattern = re.escape(d.group(1)) + r"(-?\d+)$"
        return re.match(pattern, actual) is not None
    pattern, kinds = _line_pattern(expected)
    if not kinds:
        return False
    m = re.fullmatch(pattern, actual)
    if not m:
        return False
    now = time.time()
    for (kind, page), got in zip(kinds, m.groups()):
        if kind == "uuid":
            bound = bindings.uuid.get(page, tentative.get(page))
            if bound is not None and bound != got:
                return False
            taken = set(bindings.uuid.values()) | set(tentative.values())
            if bound is None and got in taken:
                return False
            tentative[page] = got
        elif kind == "ms" and abs(int(got) / 1000 - now) > TWO_DAYS:
            return False
        elif kind == "s" and abs(int(got) - now) > TWO_DAYS:
            return False
    e, a = BULK_LINE.match(expected), BULK_LINE.match(actual)
    if e and a:
        tentative[("string", unrepr(e.group(2)))] = unrepr(a.group(2))
    return True


def unrepr(quoted):
    """The bytes of a bulk string as redis-cli shows it (the inverse of resp.repr_bytes)."""
    out, i, text = bytearray(), 1, quoted
    while i < len(text) - 1:
        c = text[i]
        if c == "\\" and i + 1 < len(text) - 1:
            n = text[i + 1]
            if n == "x":
                out.append(int(text[i + 2 : i + 4], 16))
                i += 4
                continue
            out += {"n": b"\n", "r": b"\r", "t": b"\t", "a": b"\a", "b": b"\b"}.get(n, n.encode())
            i += 2
            continue
        out += c.encode()
        i += 1
    return bytes(out)


def lines_match(expected, actual, command, bindings, raw):
    """Match with `...` wildcards; on success the UUIDs bound, else None."""
    memo = {}

    def go(i, j, tentative):
        key = (i, j, tuple(sorted(tentative.items(), key=repr)))
        if key in memo:
            return None
        if i == len(expected):
            return tentative if (j == len(actual) or raw) else None
        if expected[i].strip() == "...":
            for k in range(j, len(actual) + 1):
                found = go(i + 1, k, dict(tentative))
                if found is not None:
                    return found
            memo[key] = True
            return None
        if j == len(actual):
            memo[key] = True
            return None
        trial = dict(tentative)
        previous = expected[i - 1] if i > 0 else None
        if line_matches(expected[i], actual[j], previous, command, bindings, trial):
            found = go(i + 1, j + 1, trial)
            if found is not None:
                return found
        memo[key] = True
        return None

    return go(0, 0, {})


class Replay:
    """Replays a page's transcripts on one connection."""

    def __init__(self, connection_factory, substitute):
        self.connect = connection_factory
        self.conn = connection_factory()
        self.substitute = substitute
        self.bindings = Bindings()
        self.commands = 0
        self.failures = []
        self.log = []  # (page line, command, lines as the page would show them)

    def args_of(self, text):
        self.bindings.own(text)
        return [self.substitute(self.bindings.apply(a)) for a in resp.split_args(text)]

    def run_block(self, block):
        for step in steps(block):
            self.run_step(block, step)

    def run_step(self, block, step):
        where = "%s:%d" % (block.page, step.line_no)
        try:
            args = self.args_of(step.command)
        except resp.SplitError as e:
            self.failures.append("%s: %s" % (where, e))
            return
        if not args:
            return
        self.commands += 1
        started = time.time()
        try:
            reply = self.conn.call(*args)
        except (OSError, ConnectionError) as e:
            self.failures.append("%s: %s: %s" % (where, step.command, e))
            self.conn = self.connect()
            return
        elapsed = time.time() - started
        raw = resp.prints_raw(args)
        actual = resp.format_raw(reply) if raw else resp.format_tty(reply)
        found = lines_match(step.expected, actual, args, self.bindings, raw)
        shown = actual if found is None else step.expected
        if found is None:
            inverse = {a: p for p, a in self.bindings.uuid.items()}
            shown = [re.sub(UUID, lambda m: inverse.get(m.group(0), m.group(0)), line) for line in actual]
        if elapsed >= 0.5:
            shown = shown + ["(%.2fs)" % elapsed]
        self.log.append((step.line_no, step.command, shown))
        if found is None:
            self.failures.append(
                "%s: %s\n    the page shows:\n%s\n    the server replied:\n%s"
                % (where, step.command, _indent(step.expected), _indent(actual))
            )
        else:
            for page, got in found.items():
                if isinstance(page, tuple):
                    self.bindings.strings[page[1]] = got
                else:
                    self.bindings.uuid[page] = got
        if step.timing is not None and not (max(0.45, step.timing - 0.3) <= elapsed <= step.timing + 3.0):
            self.failures.append("%s: %s took %.2fs, the page shows (%.2fs)" % (where, step.command, elapsed, step.timing))

    def setup(self, where, lines):
        """Hidden commands (a `setup` directive): run, errors fail."""
        for line in lines:
            if not line.strip():
                continue
            args = self.args_of(line)
            reply = self.conn.call(*args)
            if isinstance(reply, resp.Error):
                self.failures.append("%s: setup %s: %s" % (where, line.strip(), reply))


def _indent(lines):
    return "\n".join("      " + line for line in lines) if lines else "      (nothing)"
