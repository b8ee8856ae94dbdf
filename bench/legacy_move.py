"""How long a tenant answers TRYAGAIN while its slot moves the legacy way.

A measurement, not a test (`make bench-legacy-move`; results in
docs/resharding.md). It starts a 3-master cluster with the module, fills
one tenant per scenario, then moves the tenant's slot exactly as
`redis-cli --cluster reshard` does (SETSLOT IMPORTING on the target,
MIGRATING on the source, GETKEYSINSLOT/MIGRATE in batches of 10 keys,
SETSLOT NODE on target, source and the third master), while

* a probe sends `ASKING` + `DREAMS.LEN <tenant>` to the target every
  millisecond or so, which is where a cluster client lands (the source
  answers ASK): the span from its first to its last TRYAGAIN is how long
  the tenant refused commands;
* a redis-py `RedisCluster` with default settings calls `DREAMS.LEN` in a
  loop and counts the calls that failed (redis-py gives up on a TRYAGAIN
  after 16 tries: `ClusterError: TTL exhausted`), and a second one whose
  `RedisClusterRequestTTL` is 2400 (half back to back, half 50 ms apart);
* when node and ioredis are installed (`make node-deps`), two ioredis
  clients do the same through the recipe of docs/operations.md: one with
  ioredis's defaults (16 redirections, 100 ms after a TRYAGAIN), one with
  `maxRedirections: 400` (ASK and TRYAGAIN both count: about 20 s).

Scenarios: a small queue (10 fires), a deep one (1,000 fires, the default
ceiling, plus a Town inbox of 20,000 messages), and the small queue with
20,000 filler keys of other data in the slot. Prints one line per scenario.

    .venv/bin/python bench/legacy_move.py [--runs 3]
"""

import argparse
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis
from redis.cluster import RedisCluster

IOREDIS_DIR = pathlib.Path(os.environ.get("DREAMTOWN_IOREDIS_DIR") or pathlib.Path(__file__).resolve().parent.parent / "target" / "node")
IOREDIS = shutil.which("node") and (IOREDIS_DIR / "node_modules" / "ioredis").is_dir()
# redis-py's per-call redirection budget for the patient client: half of
# the tries back to back, half 50 ms apart; an ASK and a TRYAGAIN per
# round, so about TTL / 80 seconds of TRYAGAIN (30 s).
PATIENT_TTL = 2400
IOREDIS_CLIENTS = [("ioredis default", {}), ("ioredis 400", {"maxRedirections": 400})]

ROOT = pathlib.Path(__file__).resolve().parent.parent
SERVER = os.environ.get("DREAMTOWN_SERVER") or "redis-server"
MODULE = os.environ.get("DREAMTOWN_MODULE") or str(ROOT / "target" / "release" / "libdreamtown.so")


def cli_bin():
    if os.environ.get("DREAMTOWN_CLI"):
        return os.environ["DREAMTOWN_CLI"]
    server = pathlib.Path(SERVER)
    name = ("valkey" if server.name.startswith("valkey") else "redis") + "-cli"
    return str(server.parent / name) if (server.parent / name).exists() else name


def free_cluster_port():
    """A loopback port whose bus port (+10000) is free too, below 55535."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port >= 55535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


class Cluster:
    def __init__(self, masters=3):
        self.dir = tempfile.mkdtemp(prefix="dreamtown-legacy-move-")
        self.ports, self.procs = [], []
        for n in range(masters):
            port = free_cluster_port()
            node_dir = os.path.join(self.dir, str(n))
            os.makedirs(node_dir)
            self.procs.append(subprocess.Popen(
                [SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", node_dir, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--loadmodule", MODULE], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            self.ports.append(port)
        for port in self.ports:
            wait(lambda port=port: self.node(port).ping())
        subprocess.run([cli_bin(), "--cluster", "create", *[f"127.0.0.1:{p}" for p in self.ports],
                        "--cluster-yes"], check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        wait(lambda: all(b"cluster_state:ok" in self.node(p).execute_command("CLUSTER", "INFO")
                         for p in self.ports))

    def node(self, port):
        return redis.Redis(port=port, socket_timeout=60)

    def owner(self, slot):
        for start, end, master, *_ in self.node(self.ports[0]).execute_command("CLUSTER", "SLOTS"):
            if start <= slot <= end:
                return master[1]
        raise RuntimeError(f"no owner of {slot}")

    def stop(self):
        for proc in self.procs:
            proc.kill()
            proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait(condition, deadline=30.0):
    started = time.monotonic()
    while True:
        try:
            if condition():
                return
        except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError):
            pass
        if time.monotonic() - started > deadline:
            raise RuntimeError("timed out")
        time.sleep(0.02)


def message(tenant, n):
    return json.dumps({"id": f"{tenant}-{n}", "from": "lead", "to": "a", "type": "task",
                       "description": f"task {n}", "priority": "normal",
                       "created_at": "2025-01-01T00:00:00Z", "correlation_id": None})


def fill(node, tenant, fires, messages, fillers):
    pipe = node.pipeline(transaction=False)
    for n in range(fires):
        pipe.execute_command("DREAMS.FIRE", tenant, f"project-{n}", 3)
    for n in range(messages):
        pipe.execute_command("TOWN.SEND", tenant, message(tenant, n))
        if n % 1000 == 999:
            pipe.execute()
    for n in range(fillers):
        pipe.set(f"{{{tenant}}}filler:{n}", "x" * 64)
        if n % 1000 == 999:
            pipe.execute()
    pipe.execute()


def move(cluster, slot, source, target, batch=10):
    """redis-cli --cluster reshard's procedure for one slot (its default pipeline: 10 keys)."""
    src, dst = cluster.node(source), cluster.node(target)
    source_id = src.execute_command("CLUSTER", "MYID").decode()
    target_id = dst.execute_command("CLUSTER", "MYID").decode()
    dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
    src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
    opened = time.monotonic()
    keys = 0
    while True:
        batch_keys = src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, batch)
        if not batch_keys:
            break
        src.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 60000, "KEYS", *batch_keys)
        keys += len(batch_keys)
    for port in [target, source] + [p for p in cluster.ports if p not in (source, target)]:
        cluster.node(port).execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    return opened, time.monotonic(), keys


def scenario(cluster, label, fires, messages, fillers):
    tenant = f"legacy-{label}-{time.monotonic_ns()}"
    slot = cluster.node(cluster.ports[0]).execute_command("CLUSTER", "KEYSLOT", tenant)
    source = cluster.owner(slot)
    target = next(p for p in cluster.ports if p != source)
    fill(cluster.node(source), tenant, fires, messages, fillers)

    stop = threading.Event()
    tryagain = []  # monotonic times of TRYAGAIN replies at the target

    def probe():
        conn = redis.Redis(port=target, socket_timeout=60)
        while not stop.is_set():
            pipe = conn.pipeline(transaction=False)
            pipe.execute_command("ASKING")
            pipe.execute_command("DREAMS.LEN", tenant)
            try:
                pipe.execute(raise_on_error=True)
            except redis.exceptions.ResponseError as error:
                if "TRYAGAIN" in str(error).upper() or "moving between cluster nodes" in str(error):
                    tryagain.append(time.monotonic())
            time.sleep(0.001)

    py = {"calls": 0, "failed": 0, "longest": 0.0}
    patient = {"calls": 0, "failed": 0, "longest": 0.0}

    def redis_py(result, ttl=None):
        rc = RedisCluster(host="127.0.0.1", port=source, socket_timeout=60)
        if ttl:
            rc.RedisClusterRequestTTL = ttl
        while not stop.is_set():
            started = time.monotonic()
            try:
                rc.execute_command("DREAMS.LEN", tenant)
            except redis.exceptions.RedisError:
                result["failed"] += 1
            result["calls"] += 1
            result["longest"] = max(result["longest"], time.monotonic() - started)
            time.sleep(0.005)
        rc.close()

    nodes = []
    if IOREDIS:
        script = pathlib.Path(__file__).resolve().parent / "legacy_move_ioredis.js"
        for _, options in IOREDIS_CLIENTS:
            proc = subprocess.Popen(["node", str(script), str(source), tenant, json.dumps(options)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env={**os.environ, "NODE_PATH": str(IOREDIS_DIR / "node_modules")}, text=True)
            if proc.stderr.readline().strip() != "ready":
                raise RuntimeError("the ioredis client did not start")
            nodes.append(proc)
    threads = [threading.Thread(target=probe), threading.Thread(target=redis_py, args=(py,)),
               threading.Thread(target=redis_py, args=(patient, PATIENT_TTL))]
    for thread in threads:
        thread.start()
    time.sleep(0.3)
    opened, closed, keys = move(cluster, slot, source, target)
    time.sleep(1.0)
    stop.set()
    for thread in threads:
        thread.join()
    ioredis = []
    for proc in nodes:
        out, _ = proc.communicate(timeout=120)
        ioredis.append(json.loads(out.strip().splitlines()[-1]))
    window = (tryagain[-1] - tryagain[0]) if tryagain else 0.0
    return {"scenario": label, "keys": keys, "move_s": closed - opened, "tryagain_s": window,
            "tryagain_replies": len(tryagain), "redis_py_calls": py["calls"], "redis_py_failed": py["failed"],
            "redis_py_longest_s": py["longest"], "patient": patient, "ioredis": ioredis}


SCENARIOS = [
    ("small", 10, 0, 0),
    ("deep", 1000, 20000, 0),
    ("small+fillers", 10, 0, 20000),
    ("deep+fillers", 1000, 20000, 100000),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    version = subprocess.run([SERVER, "--version"], capture_output=True, text=True).stdout.split()[:3]
    print(f"# {' '.join(version)}, module {MODULE}, {args.runs} run(s) per scenario")
    print(f"{'scenario':<15} {'keys':>6} {'move s':>7} {'TRYAGAIN s':>10} {'replies':>8} "
          f"{'redis-py calls':>14} {'failed':>6} {'longest s':>9}")
    cluster = Cluster()
    try:
        for label, fires, messages, fillers in SCENARIOS:
            for _ in range(args.runs):
                r = scenario(cluster, label, fires, messages, fillers)
                print(f"{r['scenario']:<15} {r['keys']:>6} {r['move_s']:>7.3f} {r['tryagain_s']:>10.3f} "
                      f"{r['tryagain_replies']:>8} {r['redis_py_calls']:>14} {r['redis_py_failed']:>6} "
                      f"{r['redis_py_longest_s']:>9.3f}"
                      + f"  redis-py TTL {PATIENT_TTL}: {r['patient']['failed']}/{r['patient']['calls']} failed, "
                        f"longest {r['patient']['longest'] * 1000:.0f} ms"
                      + "".join(f"  {name}: {i['failed']}/{i['calls']} failed, longest {i['longest_ms']} ms"
                                for (name, _), i in zip(IOREDIS_CLIENTS, r["ioredis"])), flush=True)
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
