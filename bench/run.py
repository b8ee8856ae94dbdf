#!/usr/bin/env python3
"""`make bench`: start one redis-server with the module, measure every row
of workloads.py on it (redis-benchmark or loadgen, bench/src/), and print
ops/s medians and the ratios of workloads.TARGETS with PASS/MISS.

Method (see bench/README.md): server pinned to CPU 0 and load generator to
CPU 1 when the machine has 2+ CPUs; every row gets a warm-up run that also
sizes its measured runs to about --seconds each; the rows are interleaved
repetition by repetition (so drift or a neighbour's build hits all rows
alike) and the median of --reps runs is reported; the keyspace is flushed
before every run; connections are opened before each tool's clock starts.
Besides ops/s, each run records the CPU time the server's main thread spent
(/proc/<pid>/task/<pid>/schedstat), i.e. server microseconds per operation.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import chart  # noqa: E402
import instructions  # noqa: E402
import workloads  # noqa: E402
from resp import Client  # noqa: E402
from servers import benchmark_bin, server_bin  # noqa: E402

LUA_DIR = ROOT / "tests" / "fixtures" / "seed-lua"
OUT_DIR = ROOT / "target" / "bench"
CARGO = os.environ.get("CARGO", "cargo")


def log(message):
    print(message, flush=True)


# ------------------------------------------------------------------ machine

def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def loadavg():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def thread_cpu_secs(pid):
    """CPU time of the server's main thread (every command runs there)."""
    try:
        return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return float("nan")


# ------------------------------------------------------------------ server

def free_port(cluster=False):
    """A free loopback port; for a cluster node also its bus port (+10000),
    so below 55535 (Redis refuses a higher cluster port)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not cluster:
            return port
        if port < 55535 and port_is_free(port + 10000):
            return port


def port_is_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class Server:
    """One redis-server with the module, for the whole bench; `cluster`: a
    second one, a single-node Redis Cluster owning every slot, for the rows
    that measure the module's cluster-mode cost (the migration guard)."""

    def __init__(self, module, pin, cluster=False, extra=()):
        """`module` None: the same server without the module (a native
        baseline); `extra`: more server arguments."""
        self.dir = tempfile.mkdtemp(prefix="dreamtown-bench-")
        self.port = free_port(cluster)
        argv = [
            server_bin(), "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", self.dir,
            "--logfile", os.path.join(self.dir, "redis.log"),
        ] + (["--loadmodule", str(module)] if module else []) + list(extra)
        if cluster:
            argv += ["--cluster-enabled", "yes", "--cluster-config-file", os.path.join(self.dir, "nodes.conf")]
        if pin:
            argv = ["taskset", "-c", "0"] + argv
        # taskset execs redis-server: the pid is the server's.
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pid = self.process.pid
        deadline = time.monotonic() + 20
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"{server_bin()} exited ({self.process.returncode}); see {self.dir}/redis.log")
            try:
                self.client = Client(self.port)
                self.client.call("PING")
                break
            except (OSError, ConnectionError):
                if time.monotonic() > deadline:
                    raise SystemExit("redis-server did not answer PING within 20 s")
                time.sleep(0.05)
        if cluster:
            self.client.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
            while b"cluster_state:ok" not in self.client.call("CLUSTER", "INFO"):
                if time.monotonic() > deadline:
                    raise SystemExit("the single-node cluster did not reach cluster_state:ok within 20 s")
                time.sleep(0.05)

    def stop(self):
        try:
            self.client.close()
        except OSError:
            pass
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------ tools

def build_loadgen():
    """Build the load generator, the workspace's `loadgen` binary (crate
    dreamtown-bench, bench/src/); cargo rebuilds it only when its sources changed."""
    log("== building loadgen (cargo build --release -p dreamtown-bench --bin loadgen)")
    subprocess.run([CARGO, "build", "--release", "-p", "dreamtown-bench", "--bin", "loadgen"], cwd=ROOT, check=True)
    return ROOT / os.environ.get("CARGO_TARGET_DIR", "target") / "release" / "loadgen"


class Runner:
    """Runs one measurement of a row and returns (ops/s, server µs/op, busy)."""

    def __init__(self, servers, pin, loadgen, now, shas):
        self.servers = servers
        self.prefix = ["taskset", "-c", "1"] if pin else []
        self.loadgen = loadgen
        self.now = now
        self.shas = shas

    def command(self, row):
        def expand(arg):
            match = re.fullmatch(r"\{sha:(.+)\}", arg)
            if match:
                return self.shas[match.group(1)]
            return arg.replace("{now}", str(self.now))

        return [expand(arg) for arg in row.command]

    def server(self, row):
        return self.servers[getattr(row, "server", "single")]

    def reset(self, row):
        self.server(row).client.call("FLUSHALL")

    def prepare(self, row, requests):
        self.reset(row)
        if isinstance(row, workloads.Bench) and row.setup is not None:
            row.setup(self.server(row).client, requests)

    def check_path(self, row):
        """One call before the run: is this the path the row claims to measure?"""
        if isinstance(row, workloads.Bench) and row.expect is not None:
            self.prepare(row, 1)
            reply = self.server(row).client.call(*self.command(row))
            if not row.expect(reply):
                raise SystemExit(f"{row.name}: unexpected reply {reply!r} (not the path measured)")
        self.reset(row)

    def run(self, row, size):
        self.prepare(row, size)
        if isinstance(row, workloads.Bench):
            result = self._redis_benchmark(row, size)
        else:
            result = self._loadgen(row, size)
        self.reset(row)
        return result

    def _redis_benchmark(self, row, requests):
        server = self.server(row)
        argv = self.prefix + [
            benchmark_bin(), "-h", "127.0.0.1", "-p", str(server.port),
            "-c", str(row.clients), "-n", str(requests), "-P", str(row.pipeline), "--csv",
        ] + (["-r", str(row.random_keyspace)] if row.random_keyspace else []) + self.command(row)
        before = thread_cpu_secs(server.pid)
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True)
        wall = time.monotonic() - started
        cpu = thread_cpu_secs(server.pid) - before
        if done.returncode != 0:
            raise SystemExit(f"{row.name}: redis-benchmark failed:\n{done.stderr}")
        rows = [line for line in done.stdout.splitlines() if line.startswith('"') and not line.startswith('"test"')]
        if not rows:
            raise SystemExit(f"{row.name}: no CSV result from redis-benchmark:\n{done.stdout}\n{done.stderr}")
        # The test name (the command) is not CSV-escaped: read from the end,
        # "rps" then six latency columns.
        ops = float(rows[-1].rsplit(",", 7)[1].strip('"'))
        if row.verify is not None:
            problem = row.verify(server.client, requests)
            if problem:
                raise SystemExit(f"{row.name}: {problem}")
        # The server's CPU over the tool's whole life (connections included):
        # per op it is what the server paid; busy = share of the run it worked.
        busy = cpu / (requests / ops) if ops else float("nan")
        return ops, cpu / requests * 1e6, min(busy, 1.0), wall

    def _loadgen(self, row, items):
        server = self.server(row)
        argv = self.prefix + [
            str(self.loadgen), "--port", str(server.port), "--mode", row.mode,
            "--consumers", str(row.consumers), "--items", str(items), "--org", workloads.ORG,
            "--lua-dir", str(LUA_DIR), "--server-pid", str(server.pid),
        ]
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True)
        wall = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(f"{row.name}: loadgen failed:\n{done.stderr}")
        fields = dict(pair.split("=", 1) for pair in done.stdout.split())
        ops, seconds, cpu = float(fields["ops_per_sec"]), float(fields["seconds"]), float(fields["server_cpu_secs"])
        return ops, cpu / items * 1e6, min(cpu / seconds, 1.0), wall


def size_of(row, ops, seconds):
    """Requests (or items) for a measured run of about `seconds`."""
    if isinstance(row, workloads.Bench):
        unit = row.clients * row.pipeline
        return max(unit * 4, int(ops * seconds) // unit * unit)
    items = max(row.min_items, int(ops * seconds))
    return min(items, row.max_items) if row.max_items else items


def warmup_size(row):
    if isinstance(row, workloads.Bench):
        return max(20_000, row.clients * row.pipeline * 200)
    if row.warmup_items is not None:
        return row.warmup_items
    return 2_000 if row.consumers == 1 else 4_000


# ------------------------------------------------------------------ memory

MEMORY_COUNT = 100_000


def used_memory(client):
    return int(re.search(r"used_memory:(\d+)", client.call("INFO", "memory").decode()).group(1))


def memory_figures(client, count=MEMORY_COUNT):
    """Bytes per idle region, per queued fire (and per one-field hash, for
    scale): used_memory before and after creating `count` of them, on an
    empty keyspace, divided by `count` (keyspace table growth included)."""
    w = workloads
    figures = {}

    def measured(what, commands, ok):
        client.call("FLUSHALL")
        before = used_memory(client)
        for reply in client.pipeline(commands):
            if not ok(reply):
                raise SystemExit(f"memory ({what}): unexpected reply {reply!r}")
        figures[what] = (used_memory(client) - before) / count
        client.call("FLUSHALL")

    project = "m:{:08d}"
    region_key = f"exocortex:dreams:{{{w.ORG}}}:counters:{w.MEMORY_TYPE}:{project.format(0)}"
    measured("idle region", [["DREAMS.RECORD", w.ORG, project.format(i), w.MEMORY_TYPE, "1", "0"]
                             for i in range(count)], w._counted("accumulated"))
    client.call("DREAMS.FIRE", *w.FIRE[1:])
    payload = client.call("LINDEX", f"exocortex:dreams:{{{w.ORG}}}:queue", "0")
    measured("queued fire", [w.FIRE] * count, w._queued)
    measured("one-field hash (HINCRBY)", [["HINCRBY", f"bench:m:{i:08d}", "memories", "1"] for i in range(count)],
             lambda r: r == 1)
    figures["notes"] = (f"{count:,} of each on an empty keyspace; region key {len(region_key)} bytes "
                        f"({region_key}), fields memories/edges/last_success; fire payload {len(payload)} bytes; "
                        f"hash key {len('bench:m:00000000')} bytes")
    return figures


# ------------------------------------------------------------------ report

def spread(values):
    median = statistics.median(values)
    if not median:
        return 0.0
    return (max(values) - min(values)) / median * 100


def extra_sections(extra):
    """Growth, memory and instruction sections as text lines."""
    lines = []
    if extra.get("growth"):
        lines.append("")
        header = f"{'keyspace growth (ops/s small / large)':<60} {'slowdown':>9} {'by cpu':>7}  result"
        lines.append(header)
        lines.append("-" * len(header))
        for g in extra["growth"]:
            for side in ("subject", "baseline"):
                lines.append(f"{g[side + '_label']:<60} {g[side + '_slowdown']:>8.2f}x "
                             f"{g[side + '_cpu_slowdown']:>6.2f}x  {g['verdict'] if side == 'subject' else ''}")
    if extra.get("memory"):
        m = extra["memory"]
        lines.append("")
        lines.append("memory (used_memory delta / count):")
        for what, value in m.items():
            if what != "notes":
                lines.append(f"  {what:<28} {value:>8,.0f} bytes")
        lines.append(f"  ({m['notes']})")
    if extra.get("instructions"):
        lines.append("")
        lines.append("instructions per call (callgrind, under processCommand) beside the floor:")
        lines.append(instructions.table(extra["instructions"]))
    return lines


def report(results, targets, info, extra=None):
    lines = []
    lines.append("")
    lines.append(f"Machine: {info['cpu']}, {info['cores']} CPUs; Redis {info['redis']}; "
                 f"load average {info['load_before']} before, {info['load_after']} after")
    lines.append(f"Method: {info['method']}")
    lines.append("")
    header = (f"{'workload':<46} {'P':>3} {'conns':>5} {'ops/s (median)':>15} {'spread':>7} {'server µs/op':>13} "
              f"{'busy':>5} {'ms/op':>9}")
    lines.append(header)
    lines.append("-" * len(header))
    for name, r in results.items():
        per_op = f"{r['ms_per_op']:>9.2f}" if r.get("ms_per_op") else ""
        ops = f"{r['ops']:>15,.0f}" if r["ops"] >= 100 else f"{r['ops']:>15,.2f}"
        lines.append(
            f"{name:<46} {r['pipeline']:>3} {r['clients']:>5} {ops} {r['spread']:>6.1f}% "
            f"{r['us_per_op']:>13.2f} {r['busy'] * 100:>4.0f}% {per_op}"
        )
    lines.append("")
    header = f"{'ratio (ops/s medians)':<82} {'ratio':>7} {'target':>7} {'cpu ratio':>9}  result"
    lines.append(header)
    lines.append("-" * len(header))
    for t in targets:
        lines.append(
            f"{t['label']:<82} {t['ratio']:>6.2f}x {t['goal']:>7} {t['cpu_ratio']:>8.2f}x  {t['verdict']}"
        )
    lines.append("")
    lines.append("cpu ratio = baseline server µs/op / subject server µs/op (the same comparison by the "
                 "server's own CPU time, less sensitive to a busy machine)")
    lines += extra_sections(extra or {})
    noisy = [name for name, r in results.items() if r["pipeline"] > 1 and (r["spread"] > 15 or r["busy"] < 0.9)]
    if noisy:
        lines.append(f"WARNING: noisy run (spread > 15% or server busy < 90% on {', '.join(noisy)}): "
                     f"something else used the CPUs; trust the cpu ratio, or run again")
    return "\n".join(lines)


def markdown(results, targets, info, extra=None):
    out = [
        f"Machine: {info['cpu']}, {info['cores']} CPUs; Redis {info['redis']}; load average "
        f"{info['load_before']} before, {info['load_after']} after. {info['method']}",
        "",
        "| workload | P | conns | ops/s (median) | spread | server µs/op | ms/op |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for name, r in results.items():
        per_op = f"{r['ms_per_op']:.2f}" if r.get("ms_per_op") else ""
        ops = f"{r['ops']:,.0f}" if r["ops"] >= 100 else f"{r['ops']:,.2f}"
        out.append(f"| {name} | {r['pipeline']} | {r['clients']} | {ops} | {r['spread']:.1f}% | "
                   f"{r['us_per_op']:.2f} | {per_op} |")
    out += ["", "| ratio | measured | target | by server CPU | result |", "|---|--:|--:|--:|---|"]
    for t in targets:
        out.append(f"| {t['label']} | {t['ratio']:.2f}× | {t['goal']} | {t['cpu_ratio']:.2f}× | {t['verdict']} |")
    extra = extra or {}
    if extra.get("growth"):
        out += ["", "| keyspace growth | slowdown (ops/s) | by server CPU | result |", "|---|--:|--:|---|"]
        for g in extra["growth"]:
            for side in ("subject", "baseline"):
                verdict = g["verdict"] if side == "subject" else ""
                out.append(f"| {g[side + '_label']} | {g[side + '_slowdown']:.2f}× | "
                           f"{g[side + '_cpu_slowdown']:.2f}× | {verdict} |")
    if extra.get("memory"):
        m = extra["memory"]
        out += ["", "| memory | bytes each |", "|---|--:|"]
        out += [f"| {what} | {value:,.0f} |" for what, value in m.items() if what != "notes"]
        out += ["", m["notes"]]
    if extra.get("instructions"):
        out += ["", "| command | instructions per call | floor (Redis around + API calls) | distance (module code + allocations) |",
                "|---|--:|--:|--:|"]
        for name, r in extra["instructions"].items():
            out.append(f"| {name} | {r['instructions']:,} | {r['floor']:,} ({r['around']:,} + {r['api']:,}) | "
                       f"{r['instructions'] - r['floor']:,} ({r['own']:,} + {r['alloc']:,}) |")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ main

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", default=str(ROOT / "target" / "release" / "libdreamtown.so"))
    parser.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "5")))
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("BENCH_SECONDS", "1.0")))
    parser.add_argument("--only", default=os.environ.get("BENCH_ONLY", ""),
                        help="regex: measure only the rows whose name matches")
    parser.add_argument("--no-pin", action="store_true", default=os.environ.get("BENCH_PIN", "1") == "0")
    parser.add_argument("--no-instructions", action="store_true",
                        default=os.environ.get("BENCH_INSTRUCTIONS", "1") == "0",
                        help="skip the callgrind instruction counts (BENCH_INSTRUCTIONS=0)")
    parser.add_argument("--no-memory", action="store_true", default=os.environ.get("BENCH_MEMORY", "1") == "0",
                        help="skip the memory figures (BENCH_MEMORY=0)")
    parser.add_argument("--strict", action="store_true", default=os.environ.get("BENCH_STRICT", "0") == "1",
                        help="exit 1 if a target is missed")
    args = parser.parse_args()

    for tool in (server_bin(), benchmark_bin(), CARGO):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found (make deps installs redis; cargo: https://rustup.rs)")
    if not Path(args.module).exists():
        raise SystemExit(f"{args.module} missing: run make build")
    cores = os.cpu_count() or 1
    pin = not args.no_pin and cores >= 2 and shutil.which("taskset") is not None
    rows = [row for row in workloads.WORKLOADS if re.search(args.only, row.name)]
    loadgen = build_loadgen() if any(isinstance(row, workloads.Loop) for row in rows) else None

    info = {"cpu": cpu_model(), "cores": cores, "load_before": loadavg()}
    server = Server(args.module, pin)
    servers = {"single": server}
    try:
        if any(getattr(row, "server", "single") == "cluster" for row in rows):
            servers["cluster"] = Server(args.module, pin, cluster=True)
        client = server.client
        server_info = client.call("INFO", "server").decode()
        valkey = re.search(r"valkey_version:(\S+)", server_info)
        # Valkey also reports redis_version:7.2.4 (the Redis it forked).
        info["redis"] = f"valkey {valkey.group(1)}" if valkey else \
            re.search(r"redis_version:(\S+)", server_info).group(1)
        for each in servers.values():
            for name, value in workloads.SERVER_CONFIG:
                each.client.call("CONFIG", "SET", name, value)
        shas = {path.name: client.call("SCRIPT", "LOAD", path.read_bytes()).decode()
                for path in sorted(LUA_DIR.glob("*.lua"))}
        for each in servers.values():
            for path in sorted(LUA_DIR.glob("*.lua")):
                each.client.call("SCRIPT", "LOAD", path.read_bytes())
        runner = Runner(servers, pin, loadgen, int(time.time()), shas)
        pinning = "server on CPU 0, load generator on CPU 1 (taskset)" if pin else "no CPU pinning"
        info["method"] = (
            f"{pinning}; one server for every row; per row a warm-up run sizes the measured runs to "
            f"~{args.seconds:g} s; {args.reps} interleaved repetitions, median reported; FLUSHALL before "
            f"each run; redis-benchmark rows: P={workloads.PIPELINE} pipelined (or P=1), "
            f"{workloads.CLIENTS} connections; loop rows: loadgen (bench/src/), one connection per consumer, "
            f"sequential dependent round trips"
        )
        log(f"== dreamtown bench on {info['cpu']} ({cores} CPUs), Redis {info['redis']}, port {server.port}")
        log(f"== {pinning}; load average {info['load_before']}")
        log(f"== {len(rows)} rows x ({args.reps} runs + warm-up) of ~{args.seconds:g} s")

        sizes = {}
        for row in rows:
            runner.check_path(row)
            ops, us, busy, _ = runner.run(row, warmup_size(row))
            sizes[row.name] = size_of(row, ops, args.seconds)
            log(f"   warm-up  {row.name:<46} {ops:>12,.1f} ops/s -> {sizes[row.name]:,} per run")

        samples = {row.name: [] for row in rows}
        for rep in range(1, args.reps + 1):
            for row in rows:
                ops, us, busy, wall = runner.run(row, sizes[row.name])
                samples[row.name].append((ops, us, busy))
                log(f"   run {rep}/{args.reps}  {row.name:<46} {ops:>12,.1f} ops/s  {us:9.2f} server µs/op  "
                    f"busy {busy * 100:3.0f}%  ({wall:.1f} s)")
        extra = {}
        if not args.no_memory:
            log("== memory per idle region and per queued fire")
            extra["memory"] = memory_figures(client)
        info["load_after"] = loadavg()
    finally:
        for each in servers.values():
            each.stop()
    if not args.no_instructions:
        if shutil.which("valgrind") and shutil.which("callgrind_control"):
            log("== instructions per call (valgrind callgrind)")
            extra["instructions"] = instructions.measure_all(Path(args.module).resolve(), log=log)
        else:
            log("== valgrind not found: no instruction counts")

    results = {}
    for row in rows:
        runs = samples[row.name]
        ops = [r[0] for r in runs]
        results[row.name] = {
            "pipeline": row.pipeline if isinstance(row, workloads.Bench) else 1,
            "clients": row.clients if isinstance(row, workloads.Bench) else row.consumers,
            "ops": statistics.median(ops),
            "spread": spread(ops),
            "us_per_op": statistics.median(r[1] for r in runs),
            "busy": statistics.median(r[2] for r in runs),
            "runs": ops,
        }
        if isinstance(row, workloads.Loop) and row.per_op:
            results[row.name]["ms_per_op"] = 1000 / results[row.name]["ops"]
    targets = []
    missed = 0
    for t in workloads.TARGETS:
        if t.subject not in results or t.baseline not in results:
            continue
        s, b = results[t.subject], results[t.baseline]
        ratio = s["ops"] / b["ops"]
        cpu_ratio = b["us_per_op"] / s["us_per_op"] if s["us_per_op"] else float("nan")
        if t.at_least is None:
            verdict, goal = "(info)", "-"
        else:
            judged = cpu_ratio if t.extra.get("by_cpu") else ratio
            verdict = "PASS" if judged >= t.at_least else "MISS"
            goal = f">={t.at_least:g}x" + (" cpu" if t.extra.get("by_cpu") else "")
            missed += verdict == "MISS"
        targets.append({
            "label": t.label or f"{t.subject} / {t.baseline}",
            "ratio": ratio, "cpu_ratio": cpu_ratio, "goal": goal, "verdict": verdict,
        })

    growth = []
    for g in workloads.GROWTH:
        names = {side: (getattr(g, side).format(f"{g.small:,}"), getattr(g, side).format(f"{g.large:,}"))
                 for side in ("subject", "baseline")}
        if not all(n in results for pair in names.values() for n in pair):
            continue
        entry = {}
        for side, (small, large) in names.items():
            entry[side + "_label"] = f"{large} vs {small}"
            entry[side + "_slowdown"] = results[small]["ops"] / results[large]["ops"]
            entry[side + "_cpu_slowdown"] = results[large]["us_per_op"] / results[small]["us_per_op"]
        entry["verdict"] = "PASS" if entry["subject_slowdown"] <= entry["baseline_slowdown"] else "MISS"
        missed += entry["verdict"] == "MISS"
        growth.append(entry)
    extra["growth"] = growth

    text = report(results, targets, info, extra)
    log(text)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "results.md").write_text(markdown(results, targets, info, extra))
    (OUT_DIR / "results.json").write_text(json.dumps(
        {"info": info, "rows": results, "targets": targets, **extra}, indent=2))
    picture = chart.svg(results, workloads.CHART, info)
    (OUT_DIR / "bench.svg").write_text(picture)
    log(f"== results also in {(OUT_DIR / 'results.md').relative_to(ROOT)}, results.json and bench.svg")
    if not args.only:
        # Only a full run replaces the committed chart.
        (ROOT / "docs" / "bench.svg").write_text(picture)
        log("== chart written to docs/bench.svg")
    if args.strict and missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
