#!/usr/bin/env python3
"""Instructions per call of each hot command, beside its floor: the
distance to the limit, printed on every `make bench` run.

One redis-server runs under valgrind callgrind, collecting only under
`processCommand`. For each hot command: its state is set up (counted fires
for DRAIN and the one-trip DRAIN ... ACK, drained payloads for ACK, a
filled inbox for RECV), one call
checks the path, the counters are zeroed (`callgrind_control -z`), N calls
are made (redis-benchmark, or pipelined from here when each call needs its
own argument, or one at a time when it needs the previous reply), and the profile is dumped (`callgrind_control -d`) and split
as bench/budget.py splits it:

  total  = Redis around the module + API calls + allocations + own code
  floor  = Redis around the module + the module API calls it made

The floor is what the path cannot do without under the spec's rules (Redis's
dispatch and reply buffer, opening and ACL-checking each key the path
touches, reading and writing the values, replicating the effects, the
reply; docs/bench.md counts them piece by piece); the distance to it is
the module's own code and heap allocations.

    python3 bench/instructions.py [--calls 5000] [--module target/release/libdreamtown.so]

Needs valgrind (callgrind_control). Counts are within about 1% run to run
(the server's hash seed is random).
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import budget  # noqa: E402
import workloads as w  # noqa: E402
from resp import Client  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Profiled:
    """redis-server with the module, under callgrind."""

    def __init__(self, module, keep=None):
        self.keep = keep
        self.dir = tempfile.mkdtemp(prefix="dreamtown-instructions-")
        self.port = free_port()
        self.out = os.path.join(self.dir, "callgrind.out")
        self.dumps = 0
        self.process = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=processCommand",
             f"--callgrind-out-file={self.out}",
             "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--loadmodule", str(module)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while True:
            try:
                self.client = Client(self.port, timeout=300)
                self.client.call("PING")
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise SystemExit("redis-server under valgrind did not start")
                time.sleep(0.2)
        for name, value in w.SERVER_CONFIG:
            self.client.call("CONFIG", "SET", name, value)

    def control(self, flag):
        subprocess.run(["callgrind_control", flag, str(self.process.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def measure(self, run, calls, label):
        """Zero, run, dump: the split per call of what `run` did (the dump
        kept as <keep>/<label>.callgrind.out when asked to keep them)."""
        self.control("-z")
        run()
        self.control("-d")
        self.dumps += 1
        path = f"{self.out}.{self.dumps}"
        if self.keep:
            os.makedirs(self.keep, exist_ok=True)
            shutil.copy(path, os.path.join(self.keep, label.replace(" ", "_").replace("/", "_") + ".callgrind.out"))
        costs = budget.parse(path)
        everything = budget.total(path)
        is_module = lambda obj: obj is not None and budget.MODULE in obj  # noqa: E731
        entry = sum(c for (ob, _, cob, _), c in costs.items() if not is_module(ob) and is_module(cob))
        api = alloc = 0
        for (ob, _, cob, callee), cost in costs.items():
            if is_module(ob) and not is_module(cob) and callee and not callee.startswith("0x"):
                if "libc.so" in (cob or "") or "ld-linux" in (cob or ""):
                    continue
                if callee in budget.ALLOCATOR:
                    alloc += cost
                else:
                    api += cost
        per = lambda cost: round(cost / calls)  # noqa: E731
        return {
            "instructions": per(everything),
            "around": per(everything - entry),
            "api": per(api),
            "alloc": per(alloc),
            "own": per(entry - api - alloc),
            "floor": per(everything - entry + api),
        }

    def benchmark(self, command, calls, random_keyspace=None):
        argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(self.port), "-n", str(calls), "-P", "32",
                "-c", "1", "-q"] + (["-r", str(random_keyspace)] if random_keyspace else []) + command
        return lambda: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        try:
            self.client.call("SHUTDOWN", "NOSAVE")
        except (OSError, ConnectionError):
            pass
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _expect(ok, what, reply):
    if not ok:
        raise SystemExit(f"instructions: {what}: unexpected reply {reply!r} (not the path measured)")


def measure_all(module, calls=5000, log=print, keep=None, only=None):
    """{command: split per call} for the hot commands (those whose name
    starts with `only`, when given)."""
    wanted = lambda name: not only or name.startswith(only)  # noqa: E731
    server = Profiled(module, keep)
    c = server.client
    results = {}
    try:
        def simple(name, command, expect, random_keyspace=None, setup=None):
            c.call("FLUSHALL")
            if setup:
                setup()
            first = [a.replace("__rand_int__", "first") for a in command]
            reply = c.call(*first)
            _expect(expect(reply), name, reply)
            results[name] = server.measure(server.benchmark(command, calls, random_keyspace), calls, name)
            log(f"   {name:<28} {results[name]['instructions']:>8,} instructions per call")

        if wanted("DREAMS"):
            simple("DREAMS.RECORD", w.RECORD, w._counted("accumulated"))
            simple("DREAMS.RECORD EVENT", w.RECORD_EVENT, w._counted("accumulated"),
                   random_keyspace=w.EVENT_KEYSPACE)
            simple("DREAMS.FIRE", w.FIRE, w._queued)
            measure_drain_ack(server, calls, results, log)
        if wanted("TOWN"):
            send = ["TOWN.SEND", w.TOWN, w.MESSAGE_NORMAL]
            simple("TOWN.SEND", send, lambda r: r == 1)
            fill = lambda: c.call("EVAL", w.PREFILL_LUA, "1", w.MODULE_INBOX, w.MESSAGE_NORMAL, str(calls + 10))  # noqa: E731
            simple("TOWN.RECV", ["TOWN.RECV", w.TOWN, w.AGENT], w._one_message, setup=fill)
            measure_agent_loop(server, calls, results, log)
        for name, command in (("HINCRBY", w.HINCRBY), ("RPUSH", w.RPUSH)):
            if wanted(name):
                simple(name, command, lambda r: isinstance(r, int))
    finally:
        server.stop()
    return results


def measure_drain_ack(server, calls, results, log):
    """DREAMS.DRAIN and DREAMS.ACK: `calls` counted fires, one per region
    (as loadgen's consumer loop), drained one per call, then each
    acknowledged."""
    c = server.client
    c.call("FLUSHALL")
    fills = [["DREAMS.RECORD", w.ORG, f"p{i}", w.MEMORY_TYPE, "1", "1", "NODE", w.NODE,
              "TRIGGER", "1", "1000000", "0", "999999999"] for i in range(calls + 1)]
    for reply in c.pipeline(fills):
        _expect(isinstance(reply, list) and reply[0] == "queued", "fill", reply)
    first = c.call("DREAMS.DRAIN", w.ORG, "5", "NOQUIET")
    _expect(isinstance(first, bytes), "DREAMS.DRAIN", first)
    drained = []

    def drain():
        drained.extend(c.pipeline([["DREAMS.DRAIN", w.ORG, "5", "NOQUIET"]] * calls))

    results["DREAMS.DRAIN"] = server.measure(drain, calls, "DREAMS.DRAIN")
    for reply in drained:
        _expect(isinstance(reply, bytes), "DREAMS.DRAIN", reply)
    reply = c.call("DREAMS.ACK", w.ORG, first, "SUCCESS", "NODE", w.NODE)
    _expect(isinstance(reply, list) and reply[0] == "acknowledged", "DREAMS.ACK", reply)
    acked = []

    def ack():
        acked.extend(c.pipeline([["DREAMS.ACK", w.ORG, p, "SUCCESS", "NODE", w.NODE] for p in drained]))

    results["DREAMS.ACK"] = server.measure(ack, calls, "DREAMS.ACK")
    for reply in acked:
        _expect(isinstance(reply, list) and reply[0] == "acknowledged", "DREAMS.ACK", reply)
    for name in ("DREAMS.DRAIN", "DREAMS.ACK"):
        log(f"   {name:<28} {results[name]['instructions']:>8,} instructions per call")

    # The one-trip loop (loadgen's dreams-module-onetrip): the same counted
    # fires, each call acknowledging the payload the previous call drained.
    # Each call needs the last reply, so calls go one at a time.
    onetrip = "DREAMS.DRAIN ... ACK"
    c.call("FLUSHALL")
    for reply in c.pipeline(fills):
        _expect(isinstance(reply, list) and reply[0] == "queued", "fill", reply)
    last = [c.call("DREAMS.DRAIN", w.ORG, "5", "NOQUIET")]
    _expect(isinstance(last[0], bytes), "DREAMS.DRAIN", last[0])

    def one_trip():
        reply = c.call("DREAMS.DRAIN", w.ORG, "5", "NOQUIET", "ACK", last[0], "SUCCESS", "NODE", w.NODE)
        _expect(isinstance(reply, list) and len(reply) == 2 and isinstance(reply[0], list)
                and reply[0][0] == "acknowledged" and isinstance(reply[1], bytes), onetrip, reply)
        last[0] = reply[1]

    one_trip()
    results[onetrip] = server.measure(lambda: [one_trip() for _ in range(calls - 1)], calls - 1, onetrip)
    log(f"   {onetrip:<28} {results[onetrip]['instructions']:>8,} instructions per call")

    # The same loop with the organization's concurrency capped (issue 45):
    # every drain reads the limits key and checks the in-flight count.
    capped = "DREAMS.DRAIN ... ACK capped"
    c.call("FLUSHALL")
    for reply in c.pipeline(fills):
        _expect(isinstance(reply, list) and reply[0] == "queued", "fill", reply)
    _expect(c.call("DREAMS.LIMIT", "SET", w.ORG, "CONCURRENCY", "1") in ("OK", b"OK"), "DREAMS.LIMIT SET", None)
    last[0] = c.call("DREAMS.DRAIN", w.ORG, "5", "NOQUIET")
    _expect(isinstance(last[0], bytes), "DREAMS.DRAIN", last[0])
    one_trip()
    results[capped] = server.measure(lambda: [one_trip() for _ in range(calls - 1)], calls - 1, capped)
    log(f"   {capped:<28} {results[capped]['instructions']:>8,} instructions per call")


def measure_agent_loop(server, calls, results, log):
    """The reliable agent loop on one agent's inbox, prefilled as
    loadgen's prefill_agent (bench/src/agent.rs) does (TOWN.SEND of its messages:
    distinct ids, some `high`, so not in send order). The ids come in the
    inbox's order, so every call's argument is known before the run:

    - TOWN.RECV RELIABLE: receive only (the pending list grows);
    - TOWN.RECV RELIABLE + TOWN.ACK: the two-trip loop, per message (the
      acknowledgement finds its message alone in the pending list);
      TOWN.ACK is that pair less the receive alone;
    - TOWN.RECV ... RELIABLE ACK: the one-trip loop (loadgen's
      agent-onetrip), each call acknowledging what the one before got.
    """
    c = server.client
    receive = ["TOWN.RECV", w.TOWN, w.AGENT, "BLOCK", "5", "RELIABLE"]
    ack = lambda message_id: ["TOWN.ACK", w.TOWN, w.AGENT, message_id]  # noqa: E731

    def prefill():
        c.call("FLUSHALL")
        messages = w.agent_messages(calls + 10)
        for reply in c.pipeline([["TOWN.SEND", w.TOWN, m] for m in messages]):
            _expect(isinstance(reply, int), "TOWN.SEND", reply)
        inbox = c.call("LRANGE", w.MODULE_INBOX, "0", "-1")
        return inbox, [json.loads(m)["id"] for m in inbox]

    def received(reply, message):
        return isinstance(reply, list) and reply == [message]

    inbox, ids = prefill()
    first = c.call(*receive)
    _expect(received(first, inbox[0]), "TOWN.RECV RELIABLE", first)
    results["TOWN.RECV RELIABLE"] = server.measure(server.benchmark(receive, calls), calls, "TOWN.RECV RELIABLE")

    inbox, ids = prefill()
    first = c.call(*receive)
    _expect(received(first, inbox[0]), "TOWN.RECV RELIABLE", first)
    reply = c.call(*ack(ids[0]))
    _expect(reply == 1, "TOWN.ACK", reply)
    pairs = [command for k in range(1, calls + 1) for command in (receive, ack(ids[k]))]
    replies = []
    results["TOWN.RECV RELIABLE + ACK"] = server.measure(
        lambda: replies.extend(c.pipeline(pairs)), calls, "TOWN.RECV RELIABLE + ACK")
    for k, (got, acked) in enumerate(zip(replies[::2], replies[1::2]), start=1):
        _expect(received(got, inbox[k]) and acked == 1, "TOWN.RECV RELIABLE + ACK", (got, acked))
    pair, alone = results["TOWN.RECV RELIABLE + ACK"], results["TOWN.RECV RELIABLE"]
    results["TOWN.ACK (pair - RECV)"] = {key: pair[key] - alone[key] for key in pair}

    inbox, ids = prefill()
    first = c.call(*receive)
    _expect(received(first, inbox[0]), "TOWN.RECV RELIABLE", first)
    trips = [receive + ["ACK", ids[k - 1]] for k in range(1, calls + 1)]
    replies = []
    results["TOWN.RECV ... ACK one trip"] = server.measure(
        lambda: replies.extend(c.pipeline(trips)), calls, "TOWN.RECV one trip")
    for k, reply in enumerate(replies, start=1):
        _expect(isinstance(reply, list) and reply[:1] == [1] and received(reply[1], inbox[k]),
                "TOWN.RECV ... RELIABLE ACK", reply)
    for name in ("TOWN.RECV RELIABLE", "TOWN.RECV RELIABLE + ACK", "TOWN.ACK (pair - RECV)",
                 "TOWN.RECV ... ACK one trip"):
        log(f"   {name:<28} {results[name]['instructions']:>8,} instructions per call")


def table(results):
    lines = [f"{'command':<28} {'instructions':>12} {'floor':>8} {'distance':>9}  "
             f"(floor = Redis around {'+':>1} API calls; distance = module code + allocations)"]
    for name, r in results.items():
        distance = r["instructions"] - r["floor"]
        lines.append(f"{name:<28} {r['instructions']:>12,} {r['floor']:>8,} {distance:>9,}  "
                     f"({r['around']:,} + {r['api']:,}; {r['own']:,} + {r['alloc']:,})")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", default=str(ROOT / "target" / "release" / "libdreamtown.so"))
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--keep", metavar="DIR", help="keep each command's callgrind dump in DIR "
                        "(for callgrind_annotate --inclusive=yes)")
    parser.add_argument("--only", metavar="PREFIX", help="measure only the commands whose name starts so "
                        "(DREAMS, TOWN)")
    args = parser.parse_args()
    print(table(measure_all(Path(args.module).resolve(), args.calls, keep=args.keep, only=args.only)))


if __name__ == "__main__":
    main()
