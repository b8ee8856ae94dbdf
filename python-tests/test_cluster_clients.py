"""Cluster clients that are not ours, against a 3-master cluster with the module.

redis-py's RedisCluster routes every DREAMS.*/TOWN.* command to the node
that owns the tenant's slot: the first argument is the command's key
(COMMAND: first key 1), so redis-py hashes the tenant as it hashes a key.

Proof from the servers, not the client: redis-py follows a MOVED silently,
so the test reads ``INFO errorstats`` of every node after a few hundred
commands over many tenants and requires no MOVED and no ASK anywhere, while
``INFO commandstats`` shows every command ran, spread over all three nodes.
A control call sent to a wrong node on purpose shows a MOVED is counted.

ioredis (Node.js) does not know module commands: the recipe of
docs/operations.md ("Cluster clients") (python-tests/ioredis_recipe.js) picks the
tenant's node itself. It needs node and the pinned ioredis of ``make node-deps``
(in target/node, or DREAMTOWN_IOREDIS_DIR): skipped without them on a
developer's machine, a failure in CI (``CI`` set, as ``.ci/run`` does)."""

import json
import os
import pathlib
import shutil
import subprocess

import pytest
import redis
from redis.cluster import RedisCluster

from conftest import ROOT, as_dict

TENANTS = 60


def message(id_, to):
    return json.dumps({"id": id_, "from": "lead", "to": to, "type": "task", "description": f"do {id_}",
                       "priority": "normal", "created_at": "2025-01-01T00:00:00Z",
                       "correlation_id": None}, separators=(",", ":"))


def errorstats(node):
    return {name: fields["count"] for name, fields in
            ((k, v) for k, v in node.client().info("errorstats").items())}


def module_calls(node):
    """Calls of each DREAMS.*/TOWN.* command on ``node`` (INFO commandstats)."""
    stats = node.client().info("commandstats")
    # Module commands keep the case they were registered with (DREAMS.FIRE).
    return {name.removeprefix("cmdstat_").lower(): fields["calls"] for name, fields in stats.items()
            if name.lower().startswith(("cmdstat_dreams.", "cmdstat_town."))}


def test_redis_py_cluster_sends_every_module_command_to_the_owning_node(cluster):
    rc = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port, socket_timeout=30)
    tenants = [f"tenant-{n}" for n in range(TENANTS)]
    sent = {}

    def call(*args):
        name = args[0].lower()
        # A subcommand counts under its own name (town.agent|set), routed by
        # the town after it (COMMAND's subcommand key spec).
        if name in ("town.agent", "town.task", "town.backlog", "town.activity", "town.stop"):
            name = f"{name}|{args[1].lower()}"
        sent[name] = sent.get(name, 0) + 1
        return rc.execute_command(*args)

    for tenant in tenants:
        assert call("DREAMS.FIRE", tenant, "web", 3) == b"queued"
        assert call("DREAMS.FIRE", tenant, "api", 1) == b"queued"
        assert call("DREAMS.LEN", tenant)[0] == 2
        payload = call("DREAMS.DRAIN", tenant, "0.01", "NOQUIET")
        assert payload is not None
        assert call("DREAMS.ACK", tenant, payload, "SUCCESS")[0] == b"acknowledged"
        call("DREAMS.COUNTERS", tenant, "web", 3)
        assert call("TOWN.SEND", tenant, message(f"{tenant}-m1", "a")) == 1
        assert call("TOWN.LEN", tenant, "a")[0] == 1
        assert len(call("TOWN.RECV", tenant, "a")) == 1
        call("TOWN.AGENT", "SET", tenant, "a", "name", f"agent-{tenant}")
        # A map in RESP3 (redis-py 8.2's RedisCluster speaks it), a flat list in RESP2.
        assert as_dict(call("TOWN.AGENT", "GET", tenant, "a")) == {"name": f"agent-{tenant}"}
    total = sum(sent.values())
    assert total >= 500

    owners = set()
    for node in cluster.nodes:
        errors = errorstats(node)
        assert errors.get("errorstat_MOVED", 0) == 0, f"node {node.port} answered MOVED: {errors}"
        assert errors.get("errorstat_ASK", 0) == 0, f"node {node.port} answered ASK: {errors}"
        calls = module_calls(node)
        if calls:
            owners.add(node.port)
        for name, count in calls.items():
            sent[name] -= count
    # Every command ran exactly once, on the nodes (no retries), and the
    # tenants spread over every master.
    assert all(left == 0 for left in sent.values()), f"calls not accounted for: {sent}"
    assert owners == {node.port for node in cluster.nodes}

    # Control: the same kind of call sent to a node that does not own the
    # tenant's slot is answered MOVED, and errorstats counts it.
    tenant = tenants[0]
    slot = rc.keyslot(tenant)
    owner = rc.nodes_manager.get_node_from_slot(slot).port
    stranger = next(node for node in cluster.nodes if node.port != owner)
    with pytest.raises(redis.exceptions.ResponseError) as refused:
        stranger.client().execute_command("DREAMS.LEN", tenant)
    assert str(slot) in str(refused.value), refused.value
    assert errorstats(stranger).get("errorstat_MOVED", 0) == 1
    rc.close()


IOREDIS_DIR = pathlib.Path(os.environ.get("DREAMTOWN_IOREDIS_DIR") or ROOT / "target" / "node")
HAVE_IOREDIS = shutil.which("node") is not None and (IOREDIS_DIR / "node_modules" / "ioredis").is_dir()
# CI must run the test: a missing ioredis there is a failure, not a skip.
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def moved(cluster):
    return sum(errorstats(node).get("errorstat_MOVED", 0) + errorstats(node).get("errorstat_ASK", 0)
               for node in cluster.nodes)


def run_ioredis(cluster, mode, tenants):
    done = subprocess.run(
        ["node", str(pathlib.Path(__file__).parent / "ioredis_recipe.js"), str(cluster.nodes[0].port), mode,
         str(tenants)],
        env={**os.environ, "NODE_PATH": str(IOREDIS_DIR / "node_modules")},
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["commands"]


def test_the_ioredis_recipe_sends_every_command_to_the_owning_node_where_plain_ioredis_does_not(cluster):
    if not HAVE_IOREDIS:
        missing = f"needs node and ioredis in {IOREDIS_DIR} (make node-deps)"
        if IN_CI:
            pytest.fail(f"CI: {missing}")
        pytest.skip(missing)
    assert run_ioredis(cluster, "recipe", 50) == 200
    assert moved(cluster) == 0
    # Plain ioredis: a random master per command, so about two thirds MOVED.
    assert run_ioredis(cluster, "plain", 50) == 200
    assert moved(cluster) > 50
