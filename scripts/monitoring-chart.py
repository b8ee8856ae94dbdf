#!/usr/bin/env python3
"""The picture of docs/monitoring.md, made from real data: starts a
redis-server with the module and `dreamtown-exporter` on free loopback
ports, runs a small workload for --seconds (three organizations: one whose
workers fall behind then catch up, one whose workers let leases expire,
one that receives foreign items that end as dead letters), scrapes
/metrics every second as Prometheus would, and draws what the exporter
reported as an SVG of six panels (stdlib only, hand-written SVG, as
bench/chart.py). Both processes are stopped by their own pid.

Usage: scripts/monitoring-chart.py [--server PATH] [--module PATH]
       [--exporter PATH] [--seconds N] [--out docs/monitoring.svg]
Needs redis-py (the project's .venv: .venv/bin/python scripts/monitoring-chart.py).
"""

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from html import escape

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORGS = ["acme", "globex", "initech"]
COLOURS = {"acme": "#2b6cb0", "globex": "#dd6b20", "initech": "#38a169", "node": "#553c9a"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, deadline=30):
    end = time.time() + deadline
    while time.time() < end:
        try:
            if check():
                return
        # redis-py's ConnectionError is not an OSError: the server may
        # not listen yet on a loaded machine.
        except (OSError, redis.exceptions.ConnectionError):
            pass
        time.sleep(0.05)
    sys.exit(f"timed out waiting for {what}")


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(url):
    """/metrics as {(name, frozenset(labels)): value}."""
    text = urllib.request.urlopen(url, timeout=30).read().decode()
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            labels = frozenset(LABEL.findall(m.group(2) or ""))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(sample, name, **labels):
    for (n, ls), v in sample.items():
        if n == name and set(labels.items()) <= set(ls):
            return v
    return None


def workload_step(con, t):
    """One second of work at second `t`."""
    # acme: 5 fires/s; workers ack 3/s for 20 s, then 8/s.
    for _ in range(5):
        con.execute_command("DREAMS.FIRE", "acme", "web", 3)
    for _ in range(3 if t < 20 else 8):
        payload = con.execute_command("DREAMS.DRAIN", "acme", 0.01, "NOQUIET")
        if payload is None:
            break
        con.execute_command("DREAMS.ACK", "acme", payload, "SUCCESS")
    # globex: a burst at 0; one drain a second under a 3 s lease, every
    # other one never acknowledged (its lease expires, the item returns).
    if t == 0:
        for _ in range(20):
            con.execute_command("DREAMS.FIRE", "globex", "api", 1)
    payload = con.execute_command("DREAMS.DRAIN", "globex", 0.01, "NOQUIET", "LEASE", 3)
    if payload is not None and t % 2 == 0:
        con.execute_command("DREAMS.ACK", "globex", payload, "SUCCESS")
    # initech: foreign items at 10 s and 25 s, drained into dead letters.
    if t in (10, 25):
        con.rpush("exocortex:dreams:{initech}:queue", b"not a fire", b"also not a fire")
    if t >= 10:
        con.execute_command("DREAMS.FIRE", "initech", "ml", 2)
        payload = con.execute_command("DREAMS.DRAIN", "initech", 0.01, "NOQUIET")
        if payload is not None:
            con.execute_command("DREAMS.ACK", "initech", payload, "SUCCESS")


def nice_top(peak):
    """The smallest 4 x (1, 2, 2.5 or 5 x 10^k) above the peak, for round ticks."""
    magnitude = 1.0
    while magnitude * 10 < peak:
        magnitude *= 10
    while magnitude > peak and magnitude > 0.01:
        magnitude /= 10
    for factor in (0.25, 0.5, 1, 1.5, 2, 2.5, 5, 7.5, 10, 15, 20, 25, 50):
        if 4 * factor * magnitude >= peak * 1.05:
            return 4 * factor * magnitude
    return peak * 1.1


def line_panel(x0, y0, w, h, title, series, seconds, unit=""):
    """One panel: a line per (label, colour, [(t, v)]), its own scale."""
    top = nice_top(max([v for _, _, pts in series for _, v in pts] + [1.0]))
    out = [f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="#fff" stroke="#cbd5e0"/>',
           f'<text x="{x0 + 8}" y="{y0 + 18}" class="title">{escape(title)}</text>']
    px0, py0, pw, ph = x0 + 46, y0 + 30, w - 60, h - 58
    for i in range(5):
        v = top * i / 4
        y = py0 + ph - ph * i / 4
        out.append(f'<line x1="{px0}" y1="{y:.1f}" x2="{px0 + pw}" y2="{y:.1f}" stroke="#edf2f7"/>')
        out.append(f'<text x="{px0 - 6}" y="{y + 4:.1f}" class="axis" text-anchor="end">{v:g}{unit}</text>')
    for s in range(0, seconds + 1, 10):
        x = px0 + pw * s / seconds
        out.append(f'<text x="{x:.1f}" y="{py0 + ph + 16}" class="axis" text-anchor="middle">{s}s</text>')
    legend_x = px0 + 8
    for label, colour, pts in series:
        if not pts:
            continue
        path = " ".join(f"{px0 + pw * t / seconds:.1f},{py0 + ph - ph * v / top:.1f}" for t, v in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<rect x="{legend_x}" y="{py0 + 2}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{legend_x + 14}" y="{py0 + 11}" class="legend">{escape(label)}</text>')
        legend_x += 14 + 6.2 * len(label) + 14
    return out


def draw(samples, seconds, node):
    def per_org(name):
        return [(org, COLOURS[org], [(t, value(s, name, org=org)) for t, s in samples
                                     if value(s, name, org=org) is not None]) for org in ORGS]

    def rate(name):
        """Per-second increase of the node counter `name` between scrapes."""
        out = []
        for (t0, a), (t1, b) in zip(samples, samples[1:]):
            va, vb = value(a, name, node=node), value(b, name, node=node)
            if va is not None and vb is not None and t1 > t0:
                out.append((t1, (vb - va) / (t1 - t0)))
        return out

    def org_rate(name):
        """Per-second increase of the per-organization counter `name`."""
        out = []
        for org in ORGS:
            pts = []
            for (t0, a), (t1, b) in zip(samples, samples[1:]):
                va, vb = value(a, name, org=org), value(b, name, org=org)
                if va is not None and vb is not None and t1 > t0:
                    pts.append((t1, (vb - va) / (t1 - t0)))
            out.append((f"{org} acknowledged", COLOURS[org], pts))
        return out

    # acme's and globex's next ready fire; globex's oldest in-flight one
    # (acme acknowledges at once: nothing of it is in flight at a scrape).
    ages = [(f"{org} ready", COLOURS[org], pts) for org, _, pts in per_org("dreamtown_dreams_oldest_ready_age_seconds")
            if org != "initech"]
    ages += [(f"{org} in flight", "#fbd38d", pts)
             for org, _, pts in per_org("dreamtown_dreams_oldest_inflight_age_seconds") if org == "globex"]
    acks = rate("dreamtown_node_dreams_acks_acknowledged_total")
    fired = rate("dreamtown_node_dreams_fired_total")
    lost = [(f"{org} dead letters", COLOURS[org], pts) for org, _, pts in per_org("dreamtown_dreams_dead_letters")
            if org == "initech"]
    lost += [(f"{org} expired", COLOURS[org], pts)
             for org, _, pts in per_org("dreamtown_dreams_expired_leases_waiting") if org == "globex"]
    lost.append(("leases expired, total", COLOURS["node"],
                 [(t, v) for t, smp in samples
                  if (v := value(smp, "dreamtown_node_dreams_leases_expired_total", node=node)) is not None]))
    W, H = 980, 910
    body = []
    body += line_panel(10, 40, 475, 280, "Ready (dreamtown_dreams_ready)", per_org("dreamtown_dreams_ready"), seconds)
    body += line_panel(495, 40, 475, 280, "In flight (dreamtown_dreams_in_flight)", per_org("dreamtown_dreams_in_flight"), seconds)
    body += line_panel(10, 330, 475, 280, "Throughput per second (rate of the node's _total counters)",
                       [("fired", "#718096", fired), ("acknowledged", COLOURS["node"], acks)], seconds, "/s")
    body += line_panel(495, 330, 475, 280, "Dead letters and lease expiries", lost, seconds)
    body += line_panel(10, 620, 475, 280, "Acknowledged per second, per organization (its _total counter)",
                       org_rate("dreamtown_dreams_acks_acknowledged_total")[:2], seconds, "/s")
    body += line_panel(495, 620, 475, 280, "Age of the next ready and oldest in-flight fire (s)", ages, seconds, "s")
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            'font-family="Helvetica, Arial, sans-serif">'
            '<style>.title{font-size:13px;font-weight:bold;fill:#1a202c}.axis{font-size:10px;fill:#4a5568}'
            '.legend{font-size:11px;fill:#2d3748}.head{font-size:15px;font-weight:bold}.sub{font-size:11px;fill:#4a5568}</style>'
            f'<rect width="{W}" height="{H}" fill="#f7fafc"/>'
            '<text x="12" y="20" class="head">dreamtown-exporter, scraped every second</text>'
            f'<text x="12" y="34" class="sub">{len(samples)} scrapes of /metrics during scripts/monitoring-chart.py '
            '(a real redis-server with the module; values as the exporter reported them)</text>')
    return head + "".join(body) + "</svg>\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", default=os.environ.get("DREAMTOWN_SERVER", "/usr/bin/redis-server"))
    p.add_argument("--module", default=os.environ.get("DREAMTOWN_MODULE", os.path.join(ROOT, "target/release/libdreamtown.so")))
    p.add_argument("--exporter", default=os.path.join(ROOT, "target/debug/dreamtown-exporter"))
    p.add_argument("--seconds", type=int, default=40)
    p.add_argument("--out", default=os.path.join(ROOT, "docs/monitoring.svg"))
    args = p.parse_args()
    port, http = free_port(), free_port()
    with tempfile.TemporaryDirectory() as scratch:
        server = subprocess.Popen([args.server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                   "--dir", scratch, "--loadmodule", args.module],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        exporter = None
        try:
            con = redis.Redis(host="127.0.0.1", port=port)
            wait_for("redis-server", lambda: con.ping())
            exporter = subprocess.Popen([args.exporter, "--redis", f"redis://127.0.0.1:{port}/",
                                         "--listen", f"127.0.0.1:{http}"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            url = f"http://127.0.0.1:{http}/metrics"
            wait_for("the exporter", lambda: scrape(url) is not None)
            samples = []
            start = time.time()
            for t in range(args.seconds + 1):
                workload_step(con, t)
                samples.append((t, scrape(url)))
                time.sleep(max(0.0, start + t + 1 - time.time()))
            svg = draw(samples, args.seconds, f"127.0.0.1:{port}")
        finally:
            for process in (exporter, server):
                if process is not None:
                    process.kill()
                    process.wait()
    with open(args.out, "w") as f:
        f.write(svg)
    print(f"wrote {args.out} from {len(samples)} scrapes")


if __name__ == "__main__":
    main()
