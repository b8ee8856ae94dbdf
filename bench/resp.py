"""A minimal RESP2 client (stdlib only) for the bench's setup and checks:
loading scripts, flushing between runs, verifying that a workload takes the
path it claims to measure. Never used for the timed load itself."""

import socket


class RedisError(Exception):
    """An error reply."""


class Client:
    """One blocking connection to 127.0.0.1:port."""

    def __init__(self, port, timeout=30.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rb")

    def close(self):
        self.file.close()
        self.sock.close()

    def call(self, *args):
        """Send one command; its reply (str for status, bytes for bulk,
        int, list, None), or raise RedisError."""
        out = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self.sock.sendall(b"".join(out))
        reply = self._read()
        if isinstance(reply, RedisError):
            raise reply
        return reply

    def pipeline(self, commands, batch=1000):
        """Send `commands` (lists of arguments) in batches without waiting
        for each reply; the replies in order (errors as RedisError values,
        not raised). For untimed setup and measurement of many calls."""
        replies = []
        for start in range(0, len(commands), batch):
            out = []
            chunk = commands[start:start + batch]
            for args in chunk:
                out.append(b"*%d\r\n" % len(args))
                for arg in args:
                    data = arg if isinstance(arg, bytes) else str(arg).encode()
                    out.append(b"$%d\r\n%s\r\n" % (len(data), data))
            self.sock.sendall(b"".join(out))
            replies.extend(self._read() for _ in chunk)
        return replies

    def _read(self):
        line = self.file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed by the server")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self.file.read(size + 2)
            return data[:-2]
        if kind == b"*":
            size = int(rest)
            if size < 0:
                return None
            return [self._read() for _ in range(size)]
        raise ConnectionError(f"bad RESP line {line!r}")
