#!/usr/bin/env python3
"""The worst main-thread stall around a promotion (`REPLICAOF NO ONE`),
with the module and without it, on the same server binary: issue 19's
target is module <= 2 x native + 10 ms, at 1M and 5M keys.

For each keyspace size and each configuration, one server:
`DEBUG POPULATE <keys>`, then (module only) leased tenants (Dreams
organizations and Town agents, leases of 10 minutes so none runs out),
`REPLICAOF` a port where no one listens (the server becomes a replica),
then a second connection sends `PING` back to back while the first sends
`REPLICAOF NO ONE`; the pinger keeps going until the module's catch-up has
ended (`INFO dreamtown`, `catching_up:0`) and 0.5 s more; without the
module it pings as long (a longer window sees more of the machine's own
hiccups, so both get the same).
The figure is the slowest `PING` round trip, which is the longest time the
main thread did not answer (plus one round trip).

Also printed: the catch-up's duration, turns, most keys in one turn and
longest turn (`INFO dreamtown_leases`), and the index's memory per leased
tenant (`used_memory` with 10,000 organizations indexed, minus the same
after a demotion dropped the index, divided by 10,000).

Not a test: figures vary with the machine's load. `make bench` runs it
after bench/run.py; `BENCH_PROMOTION=0` skips it, `BENCH_PROMOTION_KEYS`
sets the sizes (default "1000000 5000000").
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
from run import free_port  # noqa: E402
from servers import server_bin  # noqa: E402

TENANTS = 50
LEASE_SECS = "600"


def dead_port():
    """A loopback port where no one listens (bound, then released)."""
    return free_port()


class Server(run.Server):
    """bench/run.py's server, unpinned, with `DEBUG` enabled, the module
    or not; a client with a long timeout for `DEBUG POPULATE`."""

    def __init__(self, module):
        super().__init__(module, pin=False, extra=["--enable-debug-command", "yes"])
        self.client.close()
        self.client = Client(self.port, timeout=300)

    def info(self, section):
        text = self.client.call("INFO", section).decode()
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#"))


def lease_tenants(client, count, prefix):
    """`count` Dreams organizations and `count` Town agents with one leased
    item each."""
    commands = []
    for i in range(count):
        org = f"{prefix}-org-{i}"
        commands.append(("DREAMS.FIRE", org, "p", "1"))
        commands.append(("DREAMS.DRAIN", org, "0.01", "NOQUIET", "LEASE", LEASE_SECS))
        town = f"{prefix}-town-{i}"
        message = '{"id":"m%d","from":"lead","to":"w","priority":"normal"}' % i
        commands.append(("TOWN.SEND", town, message))
        commands.append(("TOWN.RECV", town, "w", "RELIABLE", "LEASE", LEASE_SECS))
    client.pipeline(commands)


def worst_ping(server, module, window):
    """Promote `server` (a replica of a dead port) while pinging; the
    slowest PING (ms) and how long the pinger watched (s): with the module,
    until its catch-up ended and 0.5 s more; without it, `window` s (the
    module's window, so both are watched as long)."""
    pinger = Client(server.port, timeout=120)
    worst = [0.0]
    stop = threading.Event()

    def ping():
        while not stop.is_set():
            started = time.perf_counter()
            pinger.call("PING")
            worst[0] = max(worst[0], (time.perf_counter() - started) * 1000)

    thread = threading.Thread(target=ping)
    thread.start()
    time.sleep(0.2)
    promoted = time.monotonic()
    server.client.call("REPLICAOF", "NO", "ONE")
    if module:
        deadline = time.monotonic() + 600
        while server.info("dreamtown").get("dreamtown_catching_up") != "0":
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        time.sleep(0.5)
    else:
        time.sleep(window)
    watched = time.monotonic() - promoted
    stop.set()
    thread.join()
    pinger.close()
    return worst[0], watched


def measure(module, keys):
    row = {}
    window = 1.0
    # The module first: its catch-up sets how long both are watched.
    for label, path in (("module", module), ("native", None)):
        server = Server(path)
        try:
            server.client.call("DEBUG", "POPULATE", str(keys))
            if path:
                lease_tenants(server.client, TENANTS, "bench")
            server.client.call("REPLICAOF", "127.0.0.1", str(dead_port()))
            time.sleep(0.3)
            row[label], watched = worst_ping(server, path, window)
            if path:
                window = watched
                fields = server.info("dreamtown")
                row["catch_up_ms"] = int(fields["dreamtown_catch_up_last_duration_ms"])
                row["turns"] = int(fields["dreamtown_catch_up_turns"])
                row["max_keys_per_turn"] = int(fields["dreamtown_catch_up_max_keys_per_turn"])
                row["max_turn_ms"] = int(fields["dreamtown_catch_up_max_turn_us"]) / 1000
                row["max_turn_cpu_ms"] = int(fields["dreamtown_catch_up_max_turn_cpu_us"]) / 1000
                row["max_tick_ms"] = int(fields["dreamtown_lease_max_tick_us"]) / 1000
                row["indexed"] = int(fields["dreamtown_catch_up_tenants_indexed"])
        finally:
            server.stop()
    return row


def memory_per_tenant(module, count=10_000):
    server = Server(module)
    try:
        lease_tenants(server.client, count, "mem")
        fields = server.info("dreamtown")
        indexed = int(fields["dreamtown_lease_tenants_indexed"])
        estimate = int(fields["dreamtown_lease_index_bytes"])
        with_index = int(server.info("memory")["used_memory"])
        server.client.call("REPLICAOF", "127.0.0.1", str(dead_port()))
        deadline = time.monotonic() + 30
        while server.info("dreamtown").get("dreamtown_lease_tenants_indexed") != "0":
            if time.monotonic() > deadline:
                raise SystemExit("the index was not dropped on demotion")
            time.sleep(0.05)
        without = int(server.info("memory")["used_memory"])
        return indexed, (with_index - without) / indexed, estimate / indexed
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", required=True)
    parser.add_argument("--keys", default=os.environ.get("BENCH_PROMOTION_KEYS", "1000000 5000000"))
    args = parser.parse_args()
    args.module = str(Path(args.module).resolve())
    sizes = [int(k) for k in args.keys.split()]
    print(f"== promotion stall ({server_bin()}; {TENANTS} organizations + {TENANTS} agents leased)")
    print(f"{'keys':>9} | {'native ms':>9} | {'module ms':>9} | {'target ms':>9} | {'':4} | "
          f"{'catch-up ms':>11} | {'turns':>6} | {'keys/turn':>9} | {'turn ms':>7} | {'turn cpu':>8} | {'tick ms':>7}")
    missed = False
    for keys in sizes:
        row = measure(args.module, keys)
        target = 2 * row["native"] + 10
        verdict = "PASS" if row["module"] <= target else "MISS"
        missed |= verdict == "MISS"
        print(f"{keys:>9} | {row['native']:>9.1f} | {row['module']:>9.1f} | {target:>9.1f} | {verdict} | "
              f"{row['catch_up_ms']:>11} | {row['turns']:>6} | {row['max_keys_per_turn']:>9} | "
              f"{row['max_turn_ms']:>7.2f} | {row['max_turn_cpu_ms']:>8.2f} | {row['max_tick_ms']:>7.2f}", flush=True)
    indexed, measured, estimate = memory_per_tenant(args.module)
    print(f"index memory per leased tenant: {measured:.0f} bytes measured (used_memory, {indexed} tenants), "
          f"{estimate:.0f} bytes by INFO's estimate")
    if missed and os.environ.get("BENCH_STRICT") == "1":
        sys.exit(1)


if __name__ == "__main__":
    main()
