#!/usr/bin/env python3
"""The worst main-thread stall while a burst of work falls due at once
(issue 32, "bounded steps"): one connection sends `PING` every
millisecond while

* N leases of ONE Dreams organization expire together (the lease timer),
* N leases of ONE Town agent expire together,
* beside them, natively: N keys set with `PX` falling due together
  (Redis's active expiry, the native analogue of the lease timer),
* and one blocking `DREAMS.DRAIN` meets 200,000 garbage items in ready
  before the one fire behind them (dead-lettered a bounded number per
  step);

for N in `BENCH_STALL_LEASES` (default "20000 100000"). The figure is
the slowest `PING` round trip (ms): the longest time the main thread did
not answer, plus one round trip. Also printed: `lease_max_tick_us` and
`lease_max_tick_expired` (INFO dreamtown) for the lease rows.

Not a test: figures vary with the machine's load. `make bench` runs it
after bench/promotion.py; `BENCH_STALL=0` skips it.
"""

import argparse
import os
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402
from resp import Client  # noqa: E402
from servers import server_bin  # noqa: E402

LEASE_SECS = 1.0
GARBAGE = 200_000


class Pinger:
    """`PING` every ms on its own connection; the slowest round trip (ms)."""

    def __init__(self, port):
        self.client = Client(port, timeout=120)
        self.worst = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            started = time.perf_counter()
            self.client.call("PING")
            took = time.perf_counter() - started
            self.worst = max(self.worst, took * 1000)
            time.sleep(max(0.0, 0.001 - took))

    def finish(self):
        self.stop.set()
        self.thread.join()
        self.client.close()
        return self.worst


def wait_for(what, condition, limit=600):
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.01)


def info(client, section):
    text = client.call("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#"))


def watched(server, due_in, done):
    """Ping from before `due_in` seconds from now until `done()` and 0.2 s
    more; the worst round trip (ms)."""
    pinger = Pinger(server.port)
    time.sleep(due_in + 0.05)
    wait_for("the burst to end", done)
    time.sleep(0.2)
    return pinger.finish()


def dreams_leases(module, n):
    server = run.Server(module, pin=False)
    try:
        c = server.client
        c.call("CONFIG", "SET", "dreamtown.queue-max", "1000000000")
        c.pipeline([("DREAMS.FIRE", "org", f"p{i}", "1") for i in range(n)])
        started = time.monotonic()
        c.pipeline([("DREAMS.DRAIN", "org", "1", "NOQUIET", "COUNT", "1000", "LEASE", str(LEASE_SECS))] * (n // 1000))
        due_in = max(0.0, LEASE_SECS - (time.monotonic() - started))
        worst = watched(server, due_in, lambda: c.call("LLEN", "exocortex:dreams:{org}:queue") == n)
        fields = info(c, "dreamtown")
        return worst, int(fields["dreamtown_lease_max_tick_us"]) / 1000, fields.get("dreamtown_lease_max_tick_expired", "-")
    finally:
        server.stop()


def town_leases(module, n):
    server = run.Server(module, pin=False)
    try:
        c = server.client
        message = '{"id":"m%d","from":"lead","to":"w","type":"task","priority":"normal"}'
        c.pipeline([("TOWN.SEND", "town", message % i) for i in range(n)])
        started = time.monotonic()
        c.call("TOWN.RECV", "town", "w", "COUNT", str(n), "RELIABLE", "LEASE", str(LEASE_SECS))
        due_in = max(0.0, LEASE_SECS - (time.monotonic() - started))
        worst = watched(server, due_in, lambda: c.call("LLEN", "tt:{town}:inbox:w") == n)
        fields = info(c, "dreamtown")
        return worst, int(fields["dreamtown_lease_max_tick_us"]) / 1000, fields.get("dreamtown_lease_max_tick_expired", "-")
    finally:
        server.stop()


def native_expiry(n):
    server = run.Server(None, pin=False)
    try:
        c = server.client
        started = time.monotonic()
        c.pipeline([("SET", f"k{i}", "v", "PX", str(int(LEASE_SECS * 1000))) for i in range(n)])
        due_in = max(0.0, LEASE_SECS - (time.monotonic() - started))
        return watched(server, due_in, lambda: c.call("DBSIZE") == 0)
    finally:
        server.stop()


def garbage_drain(module):
    server = run.Server(module, pin=False)
    try:
        c = server.client
        c.call("CONFIG", "SET", "dreamtown.queue-max", "1000000000")
        c.pipeline([("RPUSH", "exocortex:dreams:{org}:queue", f"garbage {i}") for i in range(GARBAGE)])
        c.call("DREAMS.FIRE", "org", "p", "1")
        pinger = Pinger(server.port)
        time.sleep(0.1)
        reply = c.call("DREAMS.DRAIN", "org", "60", "NOQUIET")
        time.sleep(0.1)
        worst = pinger.finish()
        if not isinstance(reply, bytes) or b'"project":"p"' not in reply:
            raise SystemExit(f"DREAMS.DRAIN did not reach the fire: {reply!r}")
        return worst
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", required=True)
    parser.add_argument("--leases", default=os.environ.get("BENCH_STALL_LEASES", "20000 100000"))
    args = parser.parse_args()
    module = str(Path(args.module).resolve())
    print(f"== worst PING stall (ms) while work falls due at once ({server_bin()}; PING every ms)")
    print(f"{'due together':>14} | {'Dreams leases':>13} | {'Town leases':>11} | {'native PX':>9} | "
          f"{'tick ms D/T':>13} | {'leases/tick D/T':>15}")
    for n in [int(k) for k in args.leases.split()]:
        dreams, dreams_tick, dreams_count = dreams_leases(module, n)
        town, town_tick, town_count = town_leases(module, n)
        native = native_expiry(n)
        print(f"{n:>14} | {dreams:>13.1f} | {town:>11.1f} | {native:>9.1f} | "
              f"{dreams_tick:>6.1f}/{town_tick:<6.1f} | {dreams_count:>7}/{town_count:<7}", flush=True)
    print(f"one blocking DREAMS.DRAIN over {GARBAGE} garbage items: worst PING {garbage_drain(module):.1f} ms")


if __name__ == "__main__":
    main()
