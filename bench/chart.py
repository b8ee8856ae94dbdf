"""The bench's charts: `svg`, one panel per workload (workloads.CHART), its rows
side by side (module / seed / native), bar length = server µs per
operation (median), each panel on its own scale (run.py writes it to
target/bench/bench.svg and docs/bench.svg); `peers_svg`, BullMQ / Streams
/ Dreams / Town per scenario (peers.py: target/bench/peers.svg,
docs/bench-peers.svg). Hand-written SVG, stdlib only."""

from html import escape

COLOURS = {"module": "#2b6cb0", "seed": "#dd6b20", "native": "#718096"}
WIDTH = 960
LABEL_W = 390
BAR_W = 420
ROW_H = 20
GAP = 14


def _us(value):
    if value >= 1000:
        return f"{value / 1000:,.1f} ms"
    return f"{value:,.2f} µs"


def svg(results, groups, info, instructions=None):
    """The chart as SVG text; rows missing from `results` are left out."""
    body = []
    y = 78
    for title, rows in groups:
        present = [(name, role) for name, role in rows if name in results]
        if not present:
            continue
        top = max(results[name]["us_per_op"] for name, _ in present) or 1.0
        body.append(f'<text x="12" y="{y}" class="title">{escape(title)}</text>')
        y += 8
        for name, role in present:
            value = results[name]["us_per_op"]
            length = max(1.0, value / top * BAR_W)
            body.append(f'<text x="{LABEL_W - 8}" y="{y + 14}" class="label" text-anchor="end">'
                        f'{escape(name)}</text>')
            body.append(f'<rect x="{LABEL_W}" y="{y + 2}" width="{length:.1f}" height="{ROW_H - 5}" '
                        f'fill="{COLOURS[role]}"/>')
            body.append(f'<text x="{LABEL_W + length + 6:.1f}" y="{y + 14}" class="value">{_us(value)}</text>')
            y += ROW_H
        y += GAP
    legend_x = 12
    legend = []
    for role, colour in COLOURS.items():
        legend.append(f'<rect x="{legend_x}" y="48" width="12" height="12" fill="{colour}"/>'
                      f'<text x="{legend_x + 18}" y="59" class="label">{role}</text>')
        legend_x += 90
    machine = (f"{info.get('cpu', '?')}, {info.get('cores', '?')} vCPUs; Redis {info.get('redis', '?')}; "
               f"load average {info.get('load_before', '?')} before, {info.get('load_after', '?')} after; "
               f"medians of the runs; server CPU time of the main thread per operation (schedstat)")
    height = y + 10
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Arial, sans-serif">',
        "<style>.title{font-size:14px;font-weight:bold}.label{font-size:12px}.value{font-size:12px}"
        ".small{font-size:11px;fill:#444}</style>",
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        '<text x="12" y="20" class="title">dreamtown make bench: server µs per operation '
        '(shorter is better; each panel on its own scale)</text>',
        f'<text x="12" y="38" class="small">{escape(machine)}</text>',
        *legend,
        *body,
        "</svg>",
        "",
    ])


PEER_COLOURS = {"bullmq": "#dd6b20", "streams": "#718096", "dreams": "#2b6cb0", "town": "#2c7a7b"}
PEER_LABEL_W = 150
PEER_BAR_W = 300


def peers_svg(results, scenarios, systems, info):
    """The peers chart (bench/peers.py): one panel per scenario, a bar per
    system, jobs/s end to end on the left (longer is better) and server µs
    per job on the right (shorter is better), each column of each panel on
    its own scale. `results`: (scenario, system) -> {"rate", "us"}."""
    body = []
    y = 78
    right = PEER_LABEL_W + PEER_BAR_W + 110
    body.append(f'<text x="{PEER_LABEL_W}" y="{y}" class="label">jobs/s end to end (longer is better)</text>')
    body.append(f'<text x="{right}" y="{y}" class="label">server µs per job (shorter is better)</text>')
    y += 14
    for scenario in scenarios:
        present = [system for system in systems if (scenario, system) in results]
        if not present:
            continue
        top_rate = max(results[(scenario, s)]["rate"] for s in present) or 1.0
        top_us = max(results[(scenario, s)]["us"] for s in present) or 1.0
        body.append(f'<text x="12" y="{y + 12}" class="title">{escape(scenario)}</text>')
        y += 18
        for system in present:
            r = results[(scenario, system)]
            colour = PEER_COLOURS[system]
            rate_w = max(1.0, r["rate"] / top_rate * PEER_BAR_W)
            us_w = max(1.0, r["us"] / top_us * PEER_BAR_W)
            body.append(f'<text x="{PEER_LABEL_W - 8}" y="{y + 14}" class="label" text-anchor="end">'
                        f'{escape(system)}</text>')
            body.append(f'<rect x="{PEER_LABEL_W}" y="{y + 2}" width="{rate_w:.1f}" height="{ROW_H - 5}" '
                        f'fill="{colour}"/>')
            body.append(f'<text x="{PEER_LABEL_W + rate_w + 6:.1f}" y="{y + 14}" class="value">'
                        f'{r["rate"]:,.0f}</text>')
            body.append(f'<rect x="{right}" y="{y + 2}" width="{us_w:.1f}" height="{ROW_H - 5}" fill="{colour}"/>')
            body.append(f'<text x="{right + us_w + 6:.1f}" y="{y + 14}" class="value">{_us(r["us"])}</text>')
            y += ROW_H
        y += GAP
    width = right + PEER_BAR_W + 90
    machine = (f"{info.get('cpu', '?')}, {info.get('cores', '?')} vCPUs; {info.get('server', '?')}; "
               f"{info.get('clients', '?')}; load average {info.get('load_before', '?')} before, "
               f"{info.get('load_after', '?')} after; medians")
    height = y + 10
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif">',
        "<style>.title{font-size:14px;font-weight:bold}.label{font-size:12px}.value{font-size:12px}"
        ".small{font-size:11px;fill:#444}</style>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
        '<text x="12" y="20" class="title">dreamtown make bench-peers: the same job loop in BullMQ, '
        'Redis Streams, Dreams and Town, one server</text>',
        f'<text x="12" y="38" class="small">{escape(machine)}</text>',
        *body,
        "</svg>",
        "",
    ])
