"""The server binary the benches run and the tools that go with it.

`make bench SERVER=/path/to/redis-server` (or valkey-server) exports
DREAMTOWN_SERVER; DREAMTOWN_BENCHMARK / DREAMTOWN_CLI override the tools.
Without them: `redis-server` on PATH, and the tools beside the server binary
under its family's names (valkey-benchmark for valkey-server), else on PATH.
"""

import os
from pathlib import Path


def server_bin():
    return os.environ.get("DREAMTOWN_SERVER") or "redis-server"


def _beside_server(tool, variable):
    configured = os.environ.get(variable)
    if configured:
        return configured
    server = Path(server_bin())
    family = "valkey" if server.name.startswith("valkey") else "redis"
    name = f"{family}-{tool}"
    if server.parent != Path(".") and (server.parent / name).exists():
        return str(server.parent / name)
    return name


def benchmark_bin():
    return _beside_server("benchmark", "DREAMTOWN_BENCHMARK")


def cli_bin():
    return _beside_server("cli", "DREAMTOWN_CLI")
