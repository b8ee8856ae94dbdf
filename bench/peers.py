#!/usr/bin/env python3
"""`make bench-peers` (and the last section of `make bench`): the same job
loop in each system a user would pick for a work queue on Redis, on one
redis-server with the module, through the client each user would use:
BullMQ (bench/peers/bullmq.js, Node, pinned in bench/peers/package-lock.json),
Redis Streams (the redis crate), dreamtown's Dreams and Town (the client
crate); the last three in the `peers` binary (bench/src/peers/).

Scenarios (bullmq-bench's four, with a no-op processor): `add` one job at
a time, `bulk50` 50 jobs per round trip, `worker1` and `worker100` a
worker taking prefilled jobs with 1 or 100 in flight. Each case of
scenario x system gets a warm-up run that sizes its runs to about
--seconds, then --reps rounds with the cases interleaved; FLUSHALL before
each run (the tools do it); medians. Server pinned to CPU 0, clients to
CPU 1 (taskset). Server CPU is its main thread's, from INFO cpu, read by the
tool just before and after its timed section. Prints exactly one line per
case:

    peer <scenario> <system> jobs_per_s=<x> server_us_per_job=<y>

then `info batch50 <system> ...` lines (each system's batch form with 100
in flight, for information), the targets (ratios), and writes
target/bench/peers.{md,json,svg}
(a full run also docs/bench-peers.svg). --smoke: every case once, briefly,
unpinned, no warm-up (make test-peers): the lines must parse.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import budget  # noqa: E402
import chart  # noqa: E402
from resp import Client  # noqa: E402
from run import CARGO, OUT_DIR, Server, cpu_model, free_port, loadavg, log  # noqa: E402
from servers import server_bin  # noqa: E402

SCENARIOS = ("add", "bulk50", "worker1", "worker100")
# Information beside bullmq-bench's four: each system's batch form with 100
# in flight (printed as `info batch50 <system> ...`).
EXTRA = (("batch50", "streams"), ("batch50", "dreams"), ("batch50", "town"))
SYSTEMS = ("bullmq", "streams", "dreams", "town")
NODE_DIR = Path(os.environ.get("DREAMTOWN_PEERS_NODE_DIR", ROOT / "target" / "node-peers"))
LINE = re.compile(r"^system=(\S+) scenario=(\S+) jobs=(\d+) seconds=([0-9.]+) server_cpu_secs=([0-9.]+) "
                  r"server_sys_secs=([0-9.]+) client_cpu_secs=([0-9.]+)$")
PEER_LINE = re.compile(r"^peer (add|bulk50|worker1|worker100) (bullmq|streams|dreams|town) "
                       r"jobs_per_s=[0-9]+ server_us_per_job=[0-9]+\.[0-9]{2}$")

# What each system runs in each scenario (docs/bench.md "Against BullMQ and Redis Streams").
MAPPING = {
    "add": {"bullmq": "queue.add", "streams": "XADD", "dreams": "DREAMS.FIRE", "town": "TOWN.SEND"},
    "bulk50": {"bullmq": "queue.addBulk of 50", "streams": "50 XADD, one pipeline",
               "dreams": "50 DREAMS.FIRE at once, one connection", "town": "50 TOWN.SEND at once, one connection"},
    "worker1": {"bullmq": "Worker, concurrency 1", "streams": "XREADGROUP COUNT 1 + XACK",
                "dreams": "DREAMS.DRAIN ... LEASE 30 ACK <last>", "town": "TOWN.RECV ... RELIABLE ACK <last>"},
    "worker100": {"bullmq": "Worker, concurrency 100", "streams": "2 x (XREADGROUP COUNT 50 + XACK of 50)",
                  "dreams": "100 x worker1's loop, one connection", "town": "100 x worker1's loop, one connection"},
    "batch50": {"streams": "as worker100", "dreams": "2 x (DREAMS.DRAIN ... LEASE 30 COUNT 50 + 50 DREAMS.ACK)",
                "town": "2 x (TOWN.RECV ... COUNT 50 RELIABLE + one TOWN.ACK of 50)"},
}

# (label, kind, subject, baseline, scenarios, goal): "cpu" = baseline µs/job
# / subject µs/job, "rate" = subject jobs/s / baseline jobs/s, "cpu_within"
# = subject µs/job / baseline µs/job (at most goal).
TARGETS = [
    ("Dreams / BullMQ, jobs per server CPU-second", "cpu", "dreams", "bullmq", ("worker1", "worker100"), 3.0),
    ("Dreams / BullMQ, jobs/s end to end", "rate", "dreams", "bullmq", ("worker1", "worker100"), 2.0),
    ("Dreams / Streams, server CPU per job", "cpu_within", "dreams", "streams", ("worker1", "worker100"), 1.5),
    ("Town / Streams, server CPU per job", "cpu_within", "town", "streams", ("worker1", "worker100"), 1.5),
    ("Dreams / Streams, server CPU per job", "cpu_within", "dreams", "streams", ("batch50",), None),
    ("Town / Streams, server CPU per job", "cpu_within", "town", "streams", ("batch50",), None),
    ("Dreams / BullMQ, jobs per server CPU-second", "cpu", "dreams", "bullmq", ("add", "bulk50"), None),
    ("Dreams / Streams, server CPU per job", "cpu_within", "dreams", "streams", ("add", "bulk50"), None),
    ("Town / Streams, server CPU per job", "cpu_within", "town", "streams", ("add", "bulk50"), None),
]


def build_peers(debug):
    """The `peers` binary (crate dreamtown-bench); release for timing,
    debug for the smoke test (it shares the client crate's test build)."""
    profile = [] if debug else ["--release"]
    log(f"== building peers (cargo build {' '.join(profile)} -p dreamtown-bench --bin peers)")
    subprocess.run([CARGO, "build", *profile, "-p", "dreamtown-bench", "--bin", "peers"], cwd=ROOT, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / ("debug" if debug else "release") / "peers"


def node_version():
    done = subprocess.run(["node", "--version"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else "?"


def bullmq_version():
    try:
        return json.loads((NODE_DIR / "node_modules" / "bullmq" / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "?"


class Tools:
    def __init__(self, peers, port, pin, timeout=600):
        self.peers = peers
        self.port = port
        self.prefix = ["taskset", "-c", "1"] if pin else []
        self.timeout = timeout

    def run(self, scenario, system, jobs, env=None):
        """One timed run: jobs/s; server µs per job, and of it in the
        kernel; the client's µs per job; jobs run."""
        env = dict(os.environ, **(env or {}))
        if system == "bullmq":
            argv = ["node", str(HERE / "peers" / "bullmq.js")]
            env["NODE_PATH"] = str(NODE_DIR / "node_modules")
        else:
            argv = [str(self.peers), "--system", system]
        argv = self.prefix + argv + ["--port", str(self.port), "--scenario", scenario, "--jobs", str(jobs)]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"{scenario} {system}: {' '.join(argv)} did not finish in {self.timeout} s")
        if done.returncode != 0:
            raise SystemExit(f"{scenario} {system}: {' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
        lines = [line for line in done.stdout.splitlines() if line.startswith("system=")]
        match = LINE.match(lines[-1]) if lines else None
        if not match or match.group(1) != system or match.group(2) != scenario:
            raise SystemExit(f"{scenario} {system}: no result line in:\n{done.stdout}{done.stderr}")
        ran, seconds, cpu, sys_cpu, client = (int(match.group(3)), *map(float, match.group(4, 5, 6, 7)))
        return {"rate": ran / seconds, "us": cpu / ran * 1e6, "sys_us": sys_cpu / ran * 1e6,
                "client_us": client / ran * 1e6, "jobs": ran}


def callgrind(module, peers, cases, keep=None):
    """Where the server's user-space instructions go, per job: each case once
    (2,000 jobs) against a redis-server under valgrind callgrind, counted
    over the tool's timed section only (it zeroes and dumps the counts:
    DREAMTOWN_PEERS_CALLGRIND), split into the commands (under
    processCommand, as bench/callgrind.sh counts) and the rest of the event
    loop (reading and parsing requests, writing replies, epoll). The kernel's
    part of a request (the system calls) is not counted: see the runs'
    "in the kernel" column. `keep`: a directory to keep each dump in
    (<scenario>-<system>.callgrind.out, for callgrind_annotate or
    bench/budget.py <file> <jobs>)."""
    for scenario, system in cases:
        workdir = tempfile.mkdtemp(prefix="dreamtown-peers-callgrind-")
        port = free_port()
        out = os.path.join(workdir, "callgrind.out")
        process = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", server_bin(), "--port", str(port),
             "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workdir,
             "--loadmodule", str(module)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    client = Client(port, timeout=300)
                    client.call("PING")
                    break
                except OSError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise SystemExit("redis-server under valgrind did not start")
                    time.sleep(0.2)
            jobs = Tools(peers, port, False).run(scenario, system, 2000,
                                                 env={"DREAMTOWN_PEERS_CALLGRIND": str(process.pid)})["jobs"]
            dump = out + ".1"
            everything = budget.total(dump)
            commands = sum(cost for (_, _, _, callee), cost in budget.parse(dump).items() if callee == "processCommand")
            print(f"callgrind {scenario} {system} jobs={jobs} instructions_per_job={everything // jobs} "
                  f"commands={commands // jobs} event_loop={(everything - commands) // jobs}", flush=True)
            if keep:
                os.makedirs(keep, exist_ok=True)
                shutil.copy(dump, os.path.join(keep, f"{scenario}-{system}.callgrind.out"))
        finally:
            process.terminate()
            process.wait()
            shutil.rmtree(workdir, ignore_errors=True)


def ratios(results):
    rows = []
    for label, kind, subject, baseline, scenarios, goal in TARGETS:
        for scenario in scenarios:
            s, b = results.get((scenario, subject)), results.get((scenario, baseline))
            if not s or not b:
                continue
            if kind == "cpu":
                value, judged = b["us"] / s["us"], lambda v, g: v >= g
            elif kind == "rate":
                value, judged = s["rate"] / b["rate"], lambda v, g: v >= g
            else:
                value, judged = s["us"] / b["us"], lambda v, g: v <= g
            verdict = "(info)" if goal is None else ("PASS" if judged(value, goal) else "MISS")
            sign = "<=" if kind == "cpu_within" else ">="
            rows.append({"label": f"{label}, {scenario}", "ratio": value,
                         "goal": "-" if goal is None else f"{sign}{goal:g}x", "verdict": verdict})
    return rows


def markdown(results, rows, info):
    out = [f"Machine: {info['cpu']}, {info['cores']} CPUs; {info['server']}; {info['clients']}; "
           f"load average {info['load_before']} before, {info['load_after']} after. {info['method']}", "",
           "| scenario | system | what runs | jobs/s (median) | spread | server µs/job | of it in the kernel | "
           "client µs/job |",
           "|---|---|---|--:|--:|--:|--:|--:|"]
    for (scenario, system), r in results.items():
        out.append(f"| {scenario} | {system} | {MAPPING[scenario][system]} | {r['rate']:,.0f} | "
                   f"{r['spread']:.0f}% | {r['us']:.2f} | {r['sys_us']:.2f} | {r['client_us']:.2f} |")
    out += ["", "| ratio | measured | target | result |", "|---|--:|--:|---|"]
    out += [f"| {t['label']} | {t['ratio']:.2f}× | {t['goal']} | {t['verdict']} |" for t in rows]
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", default=str(ROOT / "target" / "release" / "libdreamtown.so"))
    parser.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "5")))
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("BENCH_SECONDS", "1.0")))
    parser.add_argument("--only", default=os.environ.get("BENCH_PEERS_ONLY", ""),
                        help="regex over '<scenario> <system>': measure only the cases that match")
    parser.add_argument("--no-pin", action="store_true", default=os.environ.get("BENCH_PIN", "1") == "0")
    parser.add_argument("--smoke", action="store_true",
                        help="every case once, briefly, unpinned, no warm-up: the harness works (make test-peers)")
    parser.add_argument("--callgrind", action="store_true",
                        help="instead of timing: the server's instructions per job, each case once under callgrind")
    parser.add_argument("--keep", help="with --callgrind: keep the dumps in this directory")
    parser.add_argument("--strict", action="store_true", default=os.environ.get("BENCH_STRICT", "0") == "1",
                        help="exit 1 if a target is missed")
    args = parser.parse_args()

    for tool in ("node", CARGO):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found (node: Debian's nodejs; cargo: https://rustup.rs)")
    if not (NODE_DIR / "node_modules" / "bullmq").exists():
        raise SystemExit(f"no BullMQ in {NODE_DIR}: run make peer-deps")
    if not Path(args.module).exists():
        raise SystemExit(f"{args.module} missing: run make build")
    cores = os.cpu_count() or 1
    pin = not args.smoke and not args.no_pin and cores >= 2 and shutil.which("taskset") is not None
    cases = [(s, system) for s in SCENARIOS for system in SYSTEMS] + list(EXTRA)
    cases = [case for case in cases if re.search(args.only, " ".join(case))]
    peers = build_peers(debug=args.smoke)
    if args.callgrind:
        return callgrind(Path(args.module).resolve(), peers, cases, args.keep)

    info = {"cpu": cpu_model(), "cores": cores, "load_before": loadavg()}
    server = Server(args.module, pin)
    try:
        server_info = server.client.call("INFO", "server").decode()
        # Valkey also reports redis_version:7.2.4 (the Redis it forked).
        version = re.search(r"valkey_version:(\S+)", server_info) or re.search(r"redis_version:(\S+)", server_info)
        info["server"] = f"{'Valkey' if 'valkey_version' in version.group(0) else 'Redis'} {version.group(1)}"
        info["clients"] = (f"BullMQ {bullmq_version()} on Node {node_version()}; the redis crate and "
                           f"dreamtown-client for Streams, Dreams, Town")
        tools = Tools(peers, server.port, pin, timeout=120 if args.smoke else 600)
        pinning = "server on CPU 0, clients on CPU 1 (taskset)" if pin else "no CPU pinning"
        info["method"] = (f"{pinning}; one server; per case a warm-up run sizes the runs to ~{args.seconds:g} s; "
                          f"{args.reps} rounds, cases interleaved, medians; server CPU = main thread's "
                          f"(INFO cpu) over the timed section; jobs/s end to end")
        log(f"== peers bench on {info['cpu']} ({cores} CPUs), {info['server']}, port {server.port}")
        log(f"== {info['clients']}; {pinning}; load average {info['load_before']}")
        samples = {case: [] for case in cases}
        if args.smoke:
            for scenario, system in cases:
                jobs = 300 if scenario == "worker100" else 100
                samples[(scenario, system)].append(tools.run(scenario, system, jobs))
        else:
            sizes = {}
            for scenario, system in cases:
                rate = tools.run(scenario, system, 3000 if scenario == "worker100" else 1000)["rate"]
                sizes[(scenario, system)] = max(1000, int(rate * args.seconds))
                log(f"   warm-up  {scenario:<9} {system:<7} {rate:>10,.0f} jobs/s -> {sizes[(scenario, system)]:,} per run")
            for rep in range(1, args.reps + 1):
                for case in cases:
                    started = time.monotonic()
                    r = tools.run(*case, sizes[case])
                    samples[case].append(r)
                    log(f"   run {rep}/{args.reps}  {case[0]:<9} {case[1]:<7} {r['rate']:>10,.0f} jobs/s "
                        f"{r['us']:>8.2f} server µs/job ({r['sys_us']:.2f} in the kernel) "
                        f"{r['client_us']:>8.2f} client µs/job  ({time.monotonic() - started:.1f} s)")
        info["load_after"] = loadavg()
    finally:
        server.stop()

    results = {}
    for case, runs in samples.items():
        rates = [r["rate"] for r in runs]
        median = statistics.median(rates)
        results[case] = {key: statistics.median(r[key] for r in runs) for key in ("rate", "us", "sys_us", "client_us")}
        results[case].update(spread=(max(rates) - min(rates)) / median * 100 if median else 0.0, runs=runs)
    lines = [f"peer {s} {system} jobs_per_s={r['rate']:.0f} server_us_per_job={r['us']:.2f}"
             for (s, system), r in results.items() if (s, system) not in EXTRA]
    bad = [line for line in lines if not PEER_LINE.match(line)]
    if bad:
        raise SystemExit(f"unparseable result lines: {bad}")
    print("\n".join(lines), flush=True)
    for (s, system), r in results.items():
        if (s, system) in EXTRA:
            print(f"info {s} {system} jobs_per_s={r['rate']:.0f} server_us_per_job={r['us']:.2f}", flush=True)
    if args.smoke:
        log(f"== smoke: {len(lines)} peer lines parse")
        return
    rows = ratios(results)
    log("")
    header = f"{'ratio (medians)':<62} {'measured':>9} {'target':>8}  result"
    log(header)
    log("-" * len(header))
    for t in rows:
        log(f"{t['label']:<62} {t['ratio']:>8.2f}x {t['goal']:>8}  {t['verdict']}")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "peers.md").write_text(markdown(results, rows, info))
    (OUT_DIR / "peers.json").write_text(json.dumps(
        {"info": info, "cases": {f"{s} {system}": r for (s, system), r in results.items()}, "targets": rows},
        indent=2))
    picture = chart.peers_svg(results, SCENARIOS + ("batch50",), SYSTEMS, info)
    (OUT_DIR / "peers.svg").write_text(picture)
    log(f"== results also in {(OUT_DIR / 'peers.md').relative_to(ROOT)}, peers.json and peers.svg")
    if not args.only:
        (ROOT / "docs" / "bench-peers.svg").write_text(picture)
        log("== chart written to docs/bench-peers.svg")
    if args.strict and any(t["verdict"] == "MISS" for t in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
