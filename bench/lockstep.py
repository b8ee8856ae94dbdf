#!/usr/bin/env python3
"""Behaviour check for optimisations: send the same random sequence of
DREAMS.* and TOWN.* calls to two servers in lockstep, one with the OLD
module build and one with the NEW, and compare everything a client, a
replica or a subscriber can see.

    python3 bench/lockstep.py OLD.so NEW.so [--calls 6000] [--seed 7]

Compared, after normalising UUIDs and clock readings (which differ between
any two runs):
  - every reply (errors included, word for word);
  - the keyspace events each call fired (notify-keyspace-events KEA plus
    key-miss `m` and new-key `n`), in order;
  - the replication stream, as the AOF (`appendfsync always`) holds it;
  - INFO keyspace hits/misses, `INFO dreamtown`, and the final keyspace
    (every key's type, value and whether it has a TTL).

The calls cover the hot paths (RECORD with and without EVENT, FIRE, DRAIN
(with LEASE, and the one-trip DRAIN ... ACK), ACK, SEND, RECV with and
without RELIABLE, LEASE and the ACK clause, RECLAIM, AGENT LIST ...), wrong
key types, bad arguments, malformed messages, an ACL user confined to one
tenant, MULTI/EXEC and EVAL. Blocking forms use a 1 ms timeout. Exit status
1 on any difference that a second run of the same seed shows again (the
calls are the same, so behaviour differences repeat; a clock reading that
differs because a
second ticked between the two servers does not).
A development aid (stdlib only), not part of `make test`.

--touched-keys compares a build that checks only the keys of the path a
command takes (docs/bench.md, "Only the keys of the path a command
takes") with one that checks every key the seed names: the Dreams queue keys and event sets are then
never given a wrong type (where the two legitimately differ), key-miss
events and keyspace hit/miss counts are not compared (a key not opened is
not looked up), and a NOPERM error is compared without the key it names
(the first refused key depends on the order of the checks). Everything
else must still be identical.

--merged-moves compares a build that replicates a drain's pop of the ready
list and push onto the in-flight list as one `LMOVE ready processing LEFT
RIGHT` with one that replicates `LPOP ready` + `RPUSH processing <item>`:
both AOFs are rewritten into the merged form (an `LPOP` of an
organization's ready list directly followed by an `RPUSH` of one item onto
the same organization's in-flight list becomes that `LMOVE`, and a
MULTI/EXEC left around a single command is unwrapped) before they are
compared. Everything else must still be identical.
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from resp import Client, RedisError  # noqa: E402
from servers import server_bin  # noqa: E402

UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
RFC3339 = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")
CLOCK = re.compile(rb"(?<![0-9])1[0-9]{9}(?:[0-9]{3})?(?![0-9])")
SENTINEL = "lockstep-sentinel"


def normalise(value):
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, (bytes, str)):
        data = value.encode() if isinstance(value, str) else value
        data = UUID.sub(b"<uuid>", data)
        data = RFC3339.sub(b"<time>", data)
        data = CLOCK.sub(b"<clock>", data)
        return data
    if isinstance(value, RedisError):
        return ("error", normalise(str(value)))
    if isinstance(value, int) and value > 1_000_000_000:
        return "<clock>"
    return value


class Node:
    """One redis-server with one module build, plus a subscriber."""

    def __init__(self, module, port):
        self.dir = tempfile.mkdtemp(prefix="dreamtown-lockstep-")
        try:
            self._start(module, port)
        except BaseException:
            self.stop()
            raise

    def _start(self, module, port):
        self.port = port
        self.process = subprocess.Popen(
            [server_bin(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", self.dir,
             "--enable-debug-command", "yes", "--loadmodule", str(module)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.admin = Client(port)
                self.admin.call("PING")
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise SystemExit(f"server with {module} did not start")
                time.sleep(0.05)
        try:
            self.admin.call("CONFIG", "SET", "notify-keyspace-events", "KEAmn")
        except RedisError:
            self.admin.call("CONFIG", "SET", "notify-keyspace-events", "KEAm")
        self.admin.call("CONFIG", "SET", "dreamtown.queue-max", "40")
        self.admin.call("ACL", "SETUSER", "confined", "on", "nopass", "allcommands", "allchannels",
                        "~exocortex:dreams:{o1}:*", "~tt:{t1}:*")
        self.events = Client(port)
        for subscription in (["PSUBSCRIBE", "__key*__:*"], ["SUBSCRIBE", SENTINEL]):
            self.events.call(*subscription)
        self.publisher = Client(port)
        self.confined = Client(port)
        self.confined.call("AUTH", "confined", "x")
        self.drained = {}
        self.received = {}

    def call(self, client, args):
        try:
            return client.call(*args)
        except RedisError as error:
            return error

    def fired(self):
        self.publisher.call("PUBLISH", SENTINEL, "x")
        seen = []
        while True:
            message = self.events._read()
            if message[0] == b"message":
                return seen
            seen.append((message[2], message[3]))

    def aof(self):
        files = sorted(Path(self.dir, "appendonlydir").glob("*.incr.aof"))
        return b"".join(path.read_bytes() for path in files)

    def keyspace(self):
        dump = []
        for key in sorted(self.admin.call("KEYS", "*")):
            kind = self.admin.call("TYPE", key)
            if kind == "list":
                value = self.admin.call("LRANGE", key, 0, -1)
            elif kind == "hash":
                value = sorted(zip(*[iter(self.admin.call("HGETALL", key))] * 2))
            elif kind == "set":
                value = sorted(self.admin.call("SMEMBERS", key))
            elif kind == "zset":
                value = self.admin.call("ZRANGE", key, 0, -1, "WITHSCORES")
            elif kind == "string":
                value = self.admin.call("GET", key)
            else:
                value = self.admin.call("XLEN", key)
            dump.append((key, kind, normalise(value), self.admin.call("PTTL", key) > 0))
        return dump

    def stats(self):
        info = self.admin.call("INFO", "stats").decode()
        wanted = {k: v for k, v in re.findall(r"(keyspace_\w+):(\d+)", info)}
        module = self.admin.call("INFO", "dreamtown").decode()
        # Durations measured by the server's clock (`..._us`, `..._ms`:
        # the lease timer's longest tick, a catch-up's) differ between any
        # two runs, as clock readings do; every count is compared.
        timing = re.compile(r"^(dreamtown_\w+_(us|ms)|\w+_us|\w+_duration_ms):")
        return wanted, sorted(line for line in module.splitlines() if ":" in line and not timing.match(line))

    def stop(self):
        process = getattr(self, "process", None)
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def resp_commands(aof):
    """The commands of an AOF (RESP arrays of bulk strings), in order."""
    commands, at = [], 0
    while at < len(aof):
        end = aof.index(b"\r\n", at)
        count = int(aof[at + 1:end])
        at = end + 2
        command = []
        for _ in range(count):
            end = aof.index(b"\r\n", at)
            length = int(aof[at + 1:end])
            command.append(aof[end + 2:end + 2 + length])
            at = end + 2 + length + 2
        commands.append(command)
    return commands


def merge_moves(aof):
    """The AOF with each drain's LPOP + RPUSH as one LMOVE and single-command
    MULTI/EXEC blocks unwrapped, as RESP again (see --merged-moves)."""
    commands = resp_commands(aof)
    merged = []
    for command in commands:
        previous = merged[-1] if merged else None
        if (previous is not None and len(previous) == 2 and previous[0].upper() == b"LPOP"
                and previous[1].endswith(b"}:queue") and len(command) == 3 and command[0].upper() == b"RPUSH"
                and command[1] == previous[1][:-len(b"queue")] + b"processing"):
            merged[-1] = [b"LMOVE", previous[1], command[1], b"LEFT", b"RIGHT"]
            continue
        merged.append(command)
    unwrapped = []
    for index, command in enumerate(merged):
        unwrapped.append(command)
        if (len(unwrapped) >= 3 and command[0].upper() == b"EXEC" and unwrapped[-3][0].upper() == b"MULTI"):
            unwrapped[-3:] = [unwrapped[-2]]
    out = bytearray()
    for command in unwrapped:
        out += b"*%d\r\n" % len(command)
        for arg in command:
            out += b"$%d\r\n%s\r\n" % (len(arg), arg)
    return bytes(out)


# ---------------------------------------------------------------- workload

ORGS = ["o1", "o2"]
TOWNS = ["t1", "t2"]
AGENTS = ["a", "b", "c"]
PRIORITIES = ["low", "normal", "high", "urgent", "HIGH", "Urgent", "asap", None]


def message(rng):
    """A tinytown message, usually valid, sometimes subtly or badly not."""
    to = rng.choice(AGENTS)
    priority = rng.choice(PRIORITIES)
    mid = f"m{rng.randrange(50)}"
    parts = [f'"id":"{mid}"', f'"from":"{rng.choice(AGENTS)}"', f'"to":"{to}"', '"type":"task"',
             '"description":"d\\n\\u00e9 \\"q\\""', '"created_at":"2025-01-01T00:00:00Z"',
             '"correlation_id":null']
    if priority is not None:
        parts.append(f'"priority":"{priority}"')
    odd = rng.random()
    if odd < 0.04:
        parts.append(f'"to":"{to}"')
    elif odd < 0.07:
        parts.append('"priority":1')
    elif odd < 0.10:
        parts.append('"n":1e400')
    elif odd < 0.12:
        parts.append('"deep":' + "[" * 130 + "]" * 130)
    elif odd < 0.14:
        parts.append('"deep":' + "[" * 120 + "]" * 120)
    elif odd < 0.16:
        parts.append('"s":"\\ud800"')
    elif odd < 0.18:
        parts = [p for p in parts if not p.startswith('"to"')]
    elif odd < 0.20:
        parts.append('"x":[1,2,{"to":"z"}],"y":-0.5e-3,"z":true')
    rng.shuffle(parts)
    text = "{" + ",".join(parts) + "}"
    tail = rng.random()
    if tail < 0.03:
        text = text[:-1]
    elif tail < 0.05:
        text += " x"
    elif tail < 0.07:
        text = f'["{to}"]'
    elif tail < 0.08:
        text = text.replace('"to"', '"\\u0074o"')
    elif tail < 0.09:
        text = " \n" + text + "\t"
    return text


def dreams_call(rng, node_payload):
    org = rng.choice(ORGS)
    project = rng.choice(["web", "api", "x y"])
    kind = rng.random()
    if kind < 0.30:
        args = ["DREAMS.RECORD", org, project, rng.choice(["1", "2"]), str(rng.randrange(4)), str(rng.randrange(3))]
        if rng.random() < 0.3:
            args += ["EVENT", f"e{rng.randrange(20)}", "GENERATION", str(rng.randrange(1, 4))]
        if rng.random() < 0.3:
            args += ["TRIGGER", "2", "3", "0", str(rng.choice([0, 100]))]
        if rng.random() < 0.1:
            args += ["NODE", "n1"]
        return args
    if kind < 0.45:
        return ["DREAMS.FIRE", org, project, "1"] + (["NODE", "n2"] if rng.random() < 0.2 else [])
    if kind < 0.55:
        args = ["DREAMS.DRAIN", org, "0.001"] + (["NOQUIET"] if rng.random() < 0.7 else [])
        if rng.random() < 0.15:
            # Long enough that no lease runs out during a run.
            args += ["LEASE", "3600"]
        if rng.random() < 0.5:
            # The one-trip loop: acknowledge the last payload drained.
            args += ["ACK", node_payload, rng.choice(["SUCCESS", "FAILURE"])]
            args += ["NODE", "n3"] if rng.random() < 0.2 else []
        return args
    if kind < 0.65:
        return ["DREAMS.ACK", org, node_payload, rng.choice(["SUCCESS", "FAILURE"])]
    if kind < 0.70:
        return ["DREAMS.SETTLE", org, project, "1", f"e{rng.randrange(20)}", str(rng.randrange(1, 4))]
    if kind < 0.75:
        return [rng.choice(["DREAMS.LEN", "DREAMS.RECOVER"]), org]
    if kind < 0.80:
        return ["DREAMS.COUNTERS", org, project, "1"]
    bad = [["DREAMS.RECORD", org, project, "x", "1", "1"], ["DREAMS.RECORD", org, "", "1", "1", "1", "BOGUS"],
           ["DREAMS.FIRE", "{o}", "p", "1"], ["DREAMS.RECORD", org, project, "1", "1", "1", "EVENT", "e"],
           ["DREAMS.ACK", org, "{}", "SUCCESS"], ["DREAMS.FIRE", org, project, "1", "NODE"]]
    return rng.choice(bad)


# Stands for the id of the message the call's agent last received with
# RELIABLE on each server (each server's own replies; "m0" before any).
RECEIVED = "{received}"


def received_id(node, call, reply):
    """Note the id of the last message a reliable TOWN.RECV handed out."""
    at = next((i for i, a in enumerate(call) if a == "TOWN.RECV"), None)
    if at is None or "RELIABLE" not in call or len(call) < at + 3:
        return
    if "ACK" in call and isinstance(reply, list) and len(reply) == 2 and isinstance(reply[0], int):
        reply = reply[1]
    if isinstance(reply, list) and reply and isinstance(reply[-1], bytes):
        found = re.search(rb'"id":"(m\d+)"', reply[-1])
        if found:
            node.received[(call[at + 1], call[at + 2])] = found.group(1).decode()


def with_received(node, call):
    """`call` with RECEIVED replaced by its agent's last received id on `node`."""
    if RECEIVED not in call:
        return call
    at = next((i for i, a in enumerate(call) if isinstance(a, str) and a.startswith("TOWN.")), 0)
    agent = tuple(call[at + 1:at + 3])
    return [node.received.get(agent, "m0") if a == RECEIVED else a for a in call]


def town_call(rng):
    town = rng.choice(TOWNS)
    agent, other = rng.sample(AGENTS, 2)
    kind = rng.random()
    def some_id():
        # Usually the id of the message this agent last received reliably
        # on the server the call goes to (see RECEIVED), so that
        # acknowledgements often find a pending message.
        return RECEIVED if rng.random() < 0.7 else f"m{rng.randrange(50)}"

    if kind < 0.30:
        text = message(rng)
        return ["TOWN.SEND", town, text] + (["URGENT"] if rng.random() < 0.15 else [])
    if kind < 0.45:
        args = ["TOWN.RECV", town, agent]
        for option in (["COUNT", str(rng.randrange(1, 4))], ["URGENT"], ["RELIABLE"], ["BLOCK", "0.001"]):
            if rng.random() < 0.3:
                args += option
        # The one-trip agent loop (an ACK clause, usually with RELIABLE as
        # it needs), sometimes leased (long enough not to run out here).
        reliable = "RELIABLE" in args
        if rng.random() < (0.5 if reliable else 0.05):
            args += ["ACK", some_id()]
        if rng.random() < (0.15 if reliable else 0.02):
            args += ["LEASE", "300"]
        return args
    if kind < 0.50:
        return ["TOWN.ACK", town, agent, some_id()]
    if kind < 0.53:
        return ["TOWN.RECLAIM", town, agent, other]
    if kind < 0.56:
        return [rng.choice(["TOWN.REQUEUE", "TOWN.LEN"]), town, agent]
    if kind < 0.58:
        return ["TOWN.PEEK", town, agent, str(rng.randrange(5))]
    if kind < 0.66:
        sub = rng.choice(["SET", "SET", "GET", "DEL", "LIST", "BYNAME", "INCR", "HEARTBEAT"])
        if sub == "SET":
            return ["TOWN.AGENT", "SET", town, agent, "id", agent, "name", rng.choice(["x", "y"]), "state", "idle"]
        if sub == "LIST":
            return ["TOWN.AGENT", "LIST", town]
        if sub == "BYNAME":
            return ["TOWN.AGENT", "BYNAME", town, rng.choice(["x", "y"])]
        if sub == "INCR":
            return ["TOWN.AGENT", "INCR", town, agent, rng.choice(["ROUNDS", "TASKS"])]
        return ["TOWN.AGENT", sub, town, agent]
    if kind < 0.70:
        sub = rng.choice(["SET", "GET", "DEL", "LIST"])
        task = f"k{rng.randrange(4)}"
        if sub == "SET":
            return ["TOWN.TASK", "SET", town, task, "id", task, "state", "pending"]
        return ["TOWN.TASK", sub, town] + ([] if sub == "LIST" else [task])
    if kind < 0.74:
        sub = rng.choice(["PUSH", "POP", "LIST", "LEN", "REMOVE"])
        return ["TOWN.BACKLOG", sub, town] + ([f"k{rng.randrange(4)}"] if sub in ("PUSH", "REMOVE") else [])
    if kind < 0.77:
        return ["TOWN.ACTIVITY", rng.choice(["LOG", "GET"]), town, agent] + (["did x"] if rng.random() < 0.5 else [])
    if kind < 0.80:
        return ["TOWN.STOP", rng.choice(["REQUEST", "CHECK", "CLEAR"]), town, agent]
    if kind < 0.82:
        return ["TOWN.BROADCAST", town, rng.choice(['{"type":"hi"}', "[1]", "{"])]
    if kind < 0.83:
        return ["TOWN.RESET", town] + (["AGENTS"] if rng.random() < 0.5 else [])
    bad = [["TOWN.SEND", town], ["TOWN.RECV", town, agent, "COUNT", "0"], ["TOWN.SEND", "{t}", "{}"],
           ["TOWN.AGENT", "NOPE", town], ["TOWN.RECV", town, ""], ["TOWN.SEND", town, b"\xff\xfe"]]
    return rng.choice(bad)


def sabotage(rng, touched_keys=False):
    """Put a wrong-typed value where a command expects another type."""
    keys = [
        "exocortex:dreams:{o2}:queue", "exocortex:dreams:{o2}:deferred",
        "exocortex:dreams:{o2}:counters:1:api", "exocortex:dreams:{o2}:events:1:api",
        "tt:{t2}:inbox:c", "tt:{t2}:urgent:c", "tt:{t2}:index:mailboxes", "tt:{t2}:agent:c",
    ]
    if touched_keys:
        keys = [k for k in keys if ":queue" not in k and ":deferred" not in k and ":events:" not in k]
    key = rng.choice(keys)
    if rng.random() < 0.1:
        field = rng.choice(["memories", "edges", "last_success", "settled_generation"])
        return [["DEL", "exocortex:dreams:{o2}:counters:1:web"],
                ["HSET", "exocortex:dreams:{o2}:counters:1:web", field, rng.choice(["x", "", "1.5", "-"])]]
    if rng.random() < 0.7:
        return [["DEL", key]]
    return [["DEL", key], ["SET", key, "x"]]


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args):
    """One lockstep run: (differences, reply kinds, AOF size)."""
    port = free_port
    nodes = [Node(args.old, port())]
    try:
        nodes.append(Node(args.new, port()))
    except BaseException:
        nodes[0].stop()
        raise
    rng = random.Random(args.seed)
    differences = 0
    kinds = {}

    def report(what, index, call, a, b):
        nonlocal differences
        differences += 1
        if differences <= 20:
            if isinstance(a, list) and isinstance(b, list) and len(repr(a)) > 2000:
                at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                a, b = a[at:at + 2], b[at:at + 2]
            print(f"DIFF {what} at call {index} {call!r}:\n  old: {a!r}\n  new: {b!r}")

    try:
        for index in range(args.calls):
            roll = rng.random()
            confined = rng.random() < 0.1
            if roll < 0.03:
                batch = [(c, False) for c in sabotage(rng, args.touched_keys)]
            elif roll < 0.5:
                batch = [(dreams_call(rng, "{drained}"), confined)]
            else:
                batch = [(town_call(rng), confined)]
            if rng.random() < 0.05:
                batch = [(["MULTI"], False)] + batch + [(town_call(rng), False), (["EXEC"], False)]
            elif rng.random() < 0.03:
                inner = dreams_call(rng, "{drained}") if rng.random() < 0.5 else town_call(rng)
                script = "return redis.call(unpack(ARGV))"
                batch = [(["EVAL", script, "0"] + inner, False)]
            for call, as_confined in batch:
                replies = []
                for node in nodes:
                    concrete = [node.drained.get("p", "{}") if a == "{drained}" else a for a in with_received(node, call)]
                    client = node.confined if as_confined else node.admin
                    reply = node.call(client, concrete)
                    if call[0] == "DREAMS.DRAIN" and isinstance(reply, bytes):
                        node.drained["p"] = reply
                    elif call[0] == "DREAMS.DRAIN" and isinstance(reply, list) and len(reply) == 2 \
                            and isinstance(reply[1], bytes):
                        node.drained["p"] = reply[1]
                    received_id(node, concrete, reply)
                    reply = normalise(reply)
                    if args.touched_keys and isinstance(reply, tuple) and reply[1].startswith(b"NOPERM"):
                        reply = ("error", re.sub(rb"'[^']*'$", b"'<key>'", reply[1]))
                    replies.append(reply)
                shape = replies[0]
                shape = shape[0] if isinstance(shape, tuple) else type(shape).__name__ if not isinstance(shape, bytes) or len(shape) > 20 else shape
                key = (call[0] if call[0] != "EVAL" else "EVAL " + str(call[3]), repr(shape)[:60])
                kinds[key] = kinds.get(key, 0) + 1
                if replies[0] != replies[1]:
                    report("reply", index, call, *replies)
                events = [normalise(node.fired()) for node in nodes]
                if args.touched_keys:
                    events = [[e for e in seen if b"keymiss" not in (e[1], e[0][-7:])] for seen in events]
                if events[0] != events[1]:
                    report("events", index, call, *events)
        stats = (lambda n: n.stats()[1]) if args.touched_keys else (lambda n: n.stats())
        aofs = {id(n): n.aof() for n in nodes}
        if args.merged_moves:
            aofs[id(nodes[0])] = merge_moves(aofs[id(nodes[0])])
            aofs[id(nodes[1])] = merge_moves(aofs[id(nodes[1])])
        checks = [("AOF", lambda n: normalise(aofs[id(n)])), ("stats", stats),
                  ("keyspace", lambda n: n.keyspace())]
        for what, get in checks:
            a, b = get(nodes[0]), get(nodes[1])
            if a != b:
                report(what, "end", [], a if what != "AOF" else len(a), b if what != "AOF" else len(b))
                if what == "AOF":
                    la, lb = a.split(b"\r\n"), b.split(b"\r\n")
                    first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
                    print("  first AOF difference near:", la[max(0, first - 12):first + 3], lb[max(0, first - 12):first + 3])
        aof_size = len(nodes[0].aof())
    finally:
        for node in nodes:
            node.stop()
    return differences, kinds, aof_size


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--calls", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--touched-keys", action="store_true",
                        help="NEW checks only the keys on a command's path; see above")
    parser.add_argument("--summary", action="store_true", help="print what kinds of replies each command got")
    parser.add_argument("--merged-moves", action="store_true",
                        help="NEW replicates a drain's LPOP + RPUSH as one LMOVE; see above")
    args = parser.parse_args()
    differences, kinds, aof_size = run(args)
    note = ""
    if differences:
        # The same seed makes the same calls, so a behaviour difference
        # shows again; a clock reading (a RECORD's seconds since the last
        # cycle) can differ once when a second ticks between the servers.
        print(f"lockstep: {differences} difference(s); running seed {args.seed} again")
        again, kinds, aof_size = run(args)
        if again:
            print(f"lockstep: {again} difference(s) again")
            sys.exit(1)
        note = " (on the second run; the first differed, see above)"
    if args.summary:
        for (command, shape), count in sorted(kinds.items()):
            print(f"{count:6} {command:<16} {shape}")
    print(f"lockstep: {args.calls} steps (seed {args.seed}), replies, events, AOF ({aof_size:,} bytes), "
          f"stats and keyspace identical{note}")


if __name__ == "__main__":
    main()
