"""A RESP2/RESP3 connection that shows replies as redis-cli shows them.

The docs' transcripts are what `redis-cli` prints in a terminal; this module
sends a transcript's command line as redis-cli would (its `sdssplitargs`
quoting) and renders the reply with redis-cli 7.0's `cliFormatReplyTTY`
(and its raw output for INFO), so a reply can be compared line by line.
No dependency beyond the standard library: the docs test runs where only
python3 is installed.
"""

import socket
import time


class Error(str):
    """An error reply (its text)."""


class Status(str):
    """A simple-string reply."""


class Verbatim(str):
    """A RESP3 verbatim string (its text, without the format prefix)."""


class Double(str):
    """A RESP3 double, as the server spelled it."""


class Big(str):
    """A RESP3 big number."""


class Map(list):
    """A RESP3 map, as [key, value, key, value, ...]."""


class Set(list):
    """A RESP3 set."""


class Push(list):
    """A RESP3 push message."""


class Bool(int):
    """A RESP3 boolean."""


class SplitError(ValueError):
    pass


def split_args(line):
    """redis-cli's sdssplitargs: the arguments of an interactive command line."""
    args = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i].isspace():
            i += 1
        if i >= n:
            return args
        current = bytearray()
        in_double = in_single = False
        while True:
            c = line[i] if i < n else ""
            if in_double:
                if c == "\\" and i + 3 < n and line[i + 1] == "x" and _hex(line[i + 2]) and _hex(line[i + 3]):
                    current.append(int(line[i + 2 : i + 4], 16))
                    i += 3
                elif c == "\\" and i + 1 < n:
                    i += 1
                    current += {"n": b"\n", "r": b"\r", "t": b"\t", "b": b"\b", "a": b"\a"}.get(
                        line[i], line[i].encode()
                    )
                elif c == '"':
                    if i + 1 < n and not line[i + 1].isspace():
                        raise SplitError("closing quote must be followed by a space: " + line)
                    i += 1
                    break
                elif c == "":
                    raise SplitError("unterminated quotes: " + line)
                else:
                    current += c.encode()
            elif in_single:
                if c == "\\" and i + 1 < n and line[i + 1] == "'":
                    i += 1
                    current += b"'"
                elif c == "'":
                    if i + 1 < n and not line[i + 1].isspace():
                        raise SplitError("closing quote must be followed by a space: " + line)
                    i += 1
                    break
                elif c == "":
                    raise SplitError("unterminated quotes: " + line)
                else:
                    current += c.encode()
            else:
                if c in ("", " ", "\n", "\r", "\t"):
                    break
                if c == '"':
                    in_double = True
                elif c == "'":
                    in_single = True
                else:
                    current += c.encode()
            i += 1
        args.append(bytes(current))


def _hex(c):
    return c in "0123456789abcdefABCDEF"


def repr_bytes(data):
    """redis-cli's sdscatrepr: a bulk string as the terminal shows it."""
    out = ['"']
    for b in data:
        c = chr(b)
        if c in '\\"':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif c == "\a":
            out.append("\\a")
        elif c == "\b":
            out.append("\\b")
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append("\\x%02x" % b)
    out.append('"')
    return "".join(out)


class Connection:
    """One connection; `call(args)` returns the decoded reply."""

    def __init__(self, port, host="127.0.0.1", timeout=60):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))

    def call(self, *args):
        self.send(args)
        return self.read()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2 :]
        return data

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return Status(rest.decode(errors="replace"))
        if kind == b"-":
            return Error(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        if kind == b"%":
            return Map(x for _ in range(int(rest)) for x in (self.read(), self.read()))
        if kind == b"~":
            return Set(self.read() for _ in range(int(rest)))
        if kind == b">":
            return Push(self.read() for _ in range(int(rest)))
        if kind == b"_":
            return None
        if kind == b"#":
            return Bool(rest == b"t")
        if kind == b",":
            return Double(rest.decode())
        if kind == b"(":
            return Big(rest.decode())
        if kind == b"=":
            return Verbatim(self._exact(int(rest))[4:].decode(errors="replace"))
        if kind == b"|":
            # An attribute: skip it, the reply follows.
            for _ in range(int(rest) * 2):
                self.read()
            return self.read()
        raise ValueError("unknown reply type %r" % line)


# Commands whose reply redis-cli prints raw even in a terminal (INFO's text).
RAW_COMMANDS = {"info", "lolwut", "client list", "client info", "cluster nodes", "cluster info", "memory doctor",
                "memory malloc-stats", "latency doctor", "latency graph", "debug htstats", "debug htstats-key",
                "proxy info"}


def prints_raw(args):
    name = args[0].decode(errors="replace").lower() if args else ""
    sub = args[1].decode(errors="replace").lower() if len(args) > 1 else ""
    return name in RAW_COMMANDS or (name + " " + sub) in RAW_COMMANDS


def format_raw(reply):
    if isinstance(reply, (bytes, bytearray)):
        return [line for line in reply.decode(errors="replace").replace("\r\n", "\n").rstrip("\n").split("\n")]
    return format_tty(reply)


def _multiline(reply):
    return isinstance(reply, list) and len(reply) > 0


def format_tty(reply, prefix=""):
    """cliFormatReplyTTY: the lines redis-cli prints for `reply`."""
    return _tty(reply, prefix).rstrip("\n").split("\n")


def _tty(r, prefix):
    if isinstance(r, Error):
        return "(error) %s\n" % r
    if isinstance(r, Status):
        return r + "\n"
    if isinstance(r, Bool):
        return "(true)\n" if r else "(false)\n"
    if isinstance(r, int):
        return "(integer) %d\n" % r
    if isinstance(r, Double):
        return "(double) %s\n" % r
    if isinstance(r, Big):
        return "(big number) %s\n" % r
    if isinstance(r, Verbatim):
        return r + "\n"
    if isinstance(r, (bytes, bytearray)):
        return repr_bytes(r) + "\n"
    if r is None:
        return "(nil)\n"
    if isinstance(r, list):
        if not r:
            if isinstance(r, Map):
                return "(empty hash)\n"
            if isinstance(r, Set):
                return "(empty set)\n"
            if isinstance(r, Push):
                return "(empty push)\n"
            return "(empty array)\n"
        is_map = isinstance(r, Map)
        count = len(r) // 2 if is_map else len(r)
        idxlen = len(str(count))
        sub_prefix = prefix + " " * (idxlen + 2)
        sep = "~" if isinstance(r, Set) else "#" if is_map else ")"
        out = ""
        i = 0
        while i < len(r):
            human = (i // 2 if is_map else i) + 1
            out += "%s%*d%s " % ("" if i == 0 else prefix, idxlen, human, sep)
            out += _tty(r[i], sub_prefix)
            if is_map:
                i += 1
                out = out[:-1] + " => "
                if _multiline(r[i]):
                    out += "\n" + sub_prefix
                out += _tty(r[i], sub_prefix)
            i += 1
        return out
    raise ValueError("cannot format %r" % (r,))


def wait_for(port, deadline=30.0):
    """Wait until a server answers PING on `port`."""
    end = time.time() + deadline
    while True:
        try:
            c = Connection(port, timeout=2)
            try:
                if c.call("PING") == "PONG":
                    return
            finally:
                c.close()
        except (OSError, ConnectionError):
            pass
        if time.time() > end:
            raise TimeoutError("no server answered on port %d" % port)
        time.sleep(0.05)
