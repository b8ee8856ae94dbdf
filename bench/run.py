#!/usr/bin/env python3
"""`make bench`: start one redis-server with the module, measure every row
of workloads.py on it (redis-benchmark or bench/loadgen.rs), and print
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

import workloads  # noqa: E402
from resp import Client  # noqa: E402

LUA_DIR = ROOT / "tests" / "fixtures" / "seed-lua"
OUT_DIR = ROOT / "target" / "bench"


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

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One redis-server with the module, for the whole bench."""

    def __init__(self, module, pin):
        self.dir = tempfile.mkdtemp(prefix="dreamtown-bench-")
        self.port = free_port()
        argv = [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", self.dir,
            "--logfile", os.path.join(self.dir, "redis.log"),
            "--loadmodule", str(module),
        ]
        if pin:
            argv = ["taskset", "-c", "0"] + argv
        # taskset execs redis-server: the pid is the server's.
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pid = self.process.pid
        deadline = time.monotonic() + 20
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"redis-server exited ({self.process.returncode}); see {self.dir}/redis.log")
            try:
                self.client = Client(self.port)
                self.client.call("PING")
                break
            except (OSError, ConnectionError):
                if time.monotonic() > deadline:
                    raise SystemExit("redis-server did not answer PING within 20 s")
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
    """Compile bench/loadgen.rs (std only) unless the binary is current."""
    source = HERE / "loadgen.rs"
    binary = OUT_DIR / "loadgen"
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    if binary.exists() and binary.stat().st_mtime >= source.stat().st_mtime:
        return binary
    log(f"== compiling {source.relative_to(ROOT)} (rustc -O)")
    subprocess.run(["rustc", "--edition", "2021", "-O", str(source), "-o", str(binary)], check=True)
    return binary


class Runner:
    """Runs one measurement of a row and returns (ops/s, server µs/op, busy)."""

    def __init__(self, server, pin, loadgen, now, shas):
        self.server = server
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

    def reset(self):
        self.server.client.call("FLUSHALL")

    def prepare(self, row, requests):
        self.reset()
        if isinstance(row, workloads.Bench) and row.setup is not None:
            row.setup(self.server.client, requests)

    def check_path(self, row):
        """One call before the run: is this the path the row claims to measure?"""
        if isinstance(row, workloads.Bench) and row.expect is not None:
            self.prepare(row, 1)
            reply = self.server.client.call(*self.command(row))
            if not row.expect(reply):
                raise SystemExit(f"{row.name}: unexpected reply {reply!r} (not the path measured)")
        self.reset()

    def run(self, row, size):
        self.prepare(row, size)
        if isinstance(row, workloads.Bench):
            result = self._redis_benchmark(row, size)
        else:
            result = self._loadgen(row, size)
        self.reset()
        return result

    def _redis_benchmark(self, row, requests):
        argv = self.prefix + [
            "redis-benchmark", "-h", "127.0.0.1", "-p", str(self.server.port),
            "-c", str(row.clients), "-n", str(requests), "-P", str(row.pipeline), "--csv",
        ] + (["-r", str(row.random_keyspace)] if row.random_keyspace else []) + self.command(row)
        before = thread_cpu_secs(self.server.pid)
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True)
        wall = time.monotonic() - started
        cpu = thread_cpu_secs(self.server.pid) - before
        if done.returncode != 0:
            raise SystemExit(f"{row.name}: redis-benchmark failed:\n{done.stderr}")
        rows = [line for line in done.stdout.splitlines() if line.startswith('"') and not line.startswith('"test"')]
        if not rows:
            raise SystemExit(f"{row.name}: no CSV result from redis-benchmark:\n{done.stdout}\n{done.stderr}")
        # The test name (the command) is not CSV-escaped: read from the end,
        # "rps" then six latency columns.
        ops = float(rows[-1].rsplit(",", 7)[1].strip('"'))
        if row.verify is not None:
            problem = row.verify(self.server.client, requests)
            if problem:
                raise SystemExit(f"{row.name}: {problem}")
        # The server's CPU over the tool's whole life (connections included):
        # per op it is what the server paid; busy = share of the run it worked.
        busy = cpu / (requests / ops) if ops else float("nan")
        return ops, cpu / requests * 1e6, min(busy, 1.0), wall

    def _loadgen(self, row, items):
        argv = self.prefix + [
            str(self.loadgen), "--port", str(self.server.port), "--mode", row.mode,
            "--consumers", str(row.consumers), "--items", str(items), "--org", workloads.ORG,
            "--lua-dir", str(LUA_DIR), "--server-pid", str(self.server.pid),
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


# ------------------------------------------------------------------ report

def spread(values):
    median = statistics.median(values)
    if not median:
        return 0.0
    return (max(values) - min(values)) / median * 100


def report(results, targets, info):
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
    noisy = [name for name, r in results.items() if r["pipeline"] > 1 and (r["spread"] > 15 or r["busy"] < 0.9)]
    if noisy:
        lines.append(f"WARNING: noisy run (spread > 15% or server busy < 90% on {', '.join(noisy)}): "
                     f"something else used the CPUs; trust the cpu ratio, or run again")
    return "\n".join(lines)


def markdown(results, targets, info):
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
    parser.add_argument("--strict", action="store_true", default=os.environ.get("BENCH_STRICT", "0") == "1",
                        help="exit 1 if a target is missed")
    args = parser.parse_args()

    for tool in ("redis-server", "redis-benchmark", "rustc"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found (make deps installs redis; rustc comes with cargo)")
    if not Path(args.module).exists():
        raise SystemExit(f"{args.module} missing: run make build")
    cores = os.cpu_count() or 1
    pin = not args.no_pin and cores >= 2 and shutil.which("taskset") is not None
    rows = [row for row in workloads.WORKLOADS if re.search(args.only, row.name)]
    loadgen = build_loadgen() if any(isinstance(row, workloads.Loop) for row in rows) else None

    info = {"cpu": cpu_model(), "cores": cores, "load_before": loadavg()}
    server = Server(args.module, pin)
    try:
        client = server.client
        info["redis"] = re.search(r"redis_version:(\S+)", client.call("INFO", "server").decode()).group(1)
        for name, value in workloads.SERVER_CONFIG:
            client.call("CONFIG", "SET", name, value)
        shas = {path.name: client.call("SCRIPT", "LOAD", path.read_bytes()).decode()
                for path in sorted(LUA_DIR.glob("*.lua"))}
        runner = Runner(server, pin, loadgen, int(time.time()), shas)
        pinning = "server on CPU 0, load generator on CPU 1 (taskset)" if pin else "no CPU pinning"
        info["method"] = (
            f"{pinning}; one server for every row; per row a warm-up run sizes the measured runs to "
            f"~{args.seconds:g} s; {args.reps} interleaved repetitions, median reported; FLUSHALL before "
            f"each run; redis-benchmark rows: P={workloads.PIPELINE} pipelined (or P=1), "
            f"{workloads.CLIENTS} connections; loop rows: bench/loadgen.rs, one connection per consumer, "
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
        info["load_after"] = loadavg()
    finally:
        server.stop()

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

    text = report(results, targets, info)
    log(text)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "results.md").write_text(markdown(results, targets, info))
    (OUT_DIR / "results.json").write_text(json.dumps({"info": info, "rows": results, "targets": targets}, indent=2))
    log(f"== results also in {(OUT_DIR / 'results.md').relative_to(ROOT)} and results.json")
    if args.strict and missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
