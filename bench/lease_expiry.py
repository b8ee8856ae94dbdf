#!/usr/bin/env python3
"""Expiry of N leases falling due at once (issue 11): fill an organization
with N fires, drain them all under a lease of LEASE seconds (pipelined, so
the deadlines lie within a few hundred ms), then measure, from the first
deadline, the wall time until every item is back in ready and the server
main thread's CPU spent meanwhile. Also one org per lease (N tenants) with
--tenants. Usage: python3 bench/lease_expiry.py [--items 10000] [--tenants]
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from resp import Client  # noqa: E402
from run import Server, thread_cpu_secs  # noqa: E402


def pipeline(client, commands):
    out = []
    for args in commands:
        out.append(b"*%d\r\n" % len(args))
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    client.sock.sendall(b"".join(out))
    return [client._read() for _ in commands]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--lease", type=float, default=3.0)
    parser.add_argument("--tenants", action="store_true", help="one organization per item")
    parser.add_argument("--module", default=str(Path(__file__).resolve().parent.parent / "target/release/libdreamtown.so"))
    args = parser.parse_args()
    server = Server(args.module, pin=False)
    try:
        client = server.client
        client.call("CONFIG", "SET", "dreamtown.queue-max", "1000000000")
        orgs = [f"o{i}" if args.tenants else "o" for i in range(args.items)]
        pipeline(client, [["DREAMS.FIRE", org, f"p{i}", "1"] for i, org in enumerate(orgs)])
        before_ms = int(time.time() * 1000)
        drained = pipeline(client, [["DREAMS.DRAIN", org, "1", "NOQUIET", "LEASE", args.lease] for org in orgs])
        assert all(isinstance(d, bytes) for d in drained), "every drain got an item"
        granted_ms = int(time.time() * 1000)
        first_due = before_ms + int(args.lease * 1000)
        last_due = granted_ms + int(args.lease * 1000)
        # Wait until just before the first deadline, then measure.
        while time.time() * 1000 < first_due - 50:
            time.sleep(0.01)
        cpu0 = thread_cpu_secs(server.pid)
        start = time.time()

        def ready_total():
            if args.tenants:
                # INFO counter: cheaper than 10,000 LLENs.
                info = client.call("INFO", "dreamtown").decode()
                return int(next(line.split(":")[1] for line in info.splitlines() if line.startswith("dreamtown_leases_expired:")))
            return client.call("LLEN", "exocortex:dreams:{o}:queue")

        while ready_total() < args.items:
            if time.time() - start > 60:
                raise SystemExit("leases did not all expire within 60 s")
            time.sleep(0.005)
        done_ms = int(time.time() * 1000)
        cpu = thread_cpu_secs(server.pid) - cpu0
        shape = f"{args.items} tenants x 1 lease" if args.tenants else f"1 tenant x {args.items} leases"
        print(f"{shape}: deadlines spread over {last_due - first_due} ms (granting took that long);")
        print(f"  all back in ready {done_ms - last_due} ms after the last deadline "
              f"({done_ms - first_due} ms after the first);")
        print(f"  server main-thread CPU while expiring (incl. polling INFO/LLEN): {cpu * 1000:.1f} ms "
              f"= {cpu * 1e6 / args.items:.1f} us per lease")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
