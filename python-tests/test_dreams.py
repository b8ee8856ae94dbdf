"""DREAMS.* as a Redis user sees them through redis-py: plain
execute_command calls against a real server with the module, no client
library of ours.

Quiet hours default to 02-06 UTC, so drains that must not reorder pass
NOQUIET; quiet-hours tests compute their window from the server's clock.
"""

import json
import threading
import time

import pytest
import redis

from conftest import Server, as_dict, wait_until

NEVER = 3153600000  # 100 years: an age floor / min interval never reached


def trigger(memories, edges, min_interval=0, age_floor=NEVER):
    return ["TRIGGER", memories, edges, min_interval, age_floor]


def keys(org):
    base = f"exocortex:dreams:{{{org}}}"
    return {
        "ready": f"{base}:queue",
        "deferred": f"{base}:deferred",
        "processing": f"{base}:processing",
        "dead": f"{base}:dead",
    }


def counters(r, org, project, memory_type):
    return as_dict(r.execute_command("DREAMS.COUNTERS", org, project, memory_type))


def drain(r, org, timeout=0.01, *options):
    return r.execute_command("DREAMS.DRAIN", org, timeout, *(options or ("NOQUIET",)))


def info(r):
    return {k.removeprefix("dreamtown_"): v for k, v in r.info("dreamtown").items()}


def blocked_clients(r):
    return r.info("clients")["blocked_clients"]


def covering_window(r):
    """A quiet window (two hours from the current UTC hour) that covers the test."""
    hour = (r.time()[0] % 86400) // 3600
    return f"{hour:02d}-{(hour + 2) % 24:02d}"


class TestFire:
    def test_fire_queues_the_seed_payload(self, r, tenant):
        assert r.execute_command("DREAMS.FIRE", tenant, "web", 3, "NODE", "node-a") == b"queued"
        [payload] = r.lrange(keys(tenant)["ready"], 0, -1)
        message = json.loads(payload)
        assert list(message) == ["region", "fired_by", "fire_id"]
        assert message["region"] == {"org": tenant, "project": "web", "memory_type": 3}
        assert message["fired_by"] == "node-a"
        expected = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
        assert payload == expected, "compact JSON in struct order, as serde writes it"

    def test_the_ceiling_drops_the_newest_fire(self, r, tenant):
        r.config_set("dreamtown.queue-max", 2)
        assert r.execute_command("DREAMS.FIRE", tenant, "a", 1) == b"queued"
        assert r.execute_command("DREAMS.FIRE", tenant, "b", 1) == b"queued"
        assert r.execute_command("DREAMS.FIRE", tenant, "c", 1) == b"dropped"
        assert r.execute_command("DREAMS.LEN", tenant) == [2, 0, 0]
        projects = [json.loads(p)["region"]["project"] for p in r.lrange(keys(tenant)["ready"], 0, -1)]
        assert projects == ["a", "b"]


class TestRecord:
    def test_record_accumulates_then_fires_once(self, r_both, tenant):
        r = r_both
        t = trigger(5, 100)
        assert r.execute_command("DREAMS.RECORD", tenant, "p", 1, 3, 1, *t) == [b"accumulated", 3, 1]
        assert r.execute_command("DREAMS.RECORD", tenant, "p", 1, 2, 1, *t) == [b"queued", 5, 2]
        assert r.execute_command("DREAMS.RECORD", tenant, "p", 1, 9, 9, *t) == [b"accumulated", 14, 11]
        assert r.execute_command("DREAMS.LEN", tenant) == [1, 0, 0]
        fired = json.loads(r.lindex(keys(tenant)["ready"], 0))
        assert fired["fired_at"] == {"memories_since_last_cycle": 5, "edges_since_last_cycle": 2, "seconds_since_last_cycle": 0}
        assert counters(r, tenant, "p", 1)["pending"] == fired["fire_id"]

    def test_the_first_record_never_fires_with_a_min_interval(self, r, tenant):
        reply = r.execute_command("DREAMS.RECORD", tenant, "p", 1, 100, 100, *trigger(1, 1, 60, 0))
        assert reply == [b"accumulated", 100, 100]

    def test_events_count_once_and_settle_fences_generations(self, r, tenant):
        args = ["EVENT", "e-1", "GENERATION", 3, *trigger(100, 100)]
        assert r.execute_command("DREAMS.RECORD", tenant, "p", 1, 2, 0, *args) == [b"accumulated", 2, 0]
        assert r.execute_command("DREAMS.RECORD", tenant, "p", 1, 2, 0, *args) == [b"accumulated", 2, 0]
        assert r.execute_command("DREAMS.SETTLE", tenant, "p", 1, "e-1", 3) == b"OK"
        assert counters(r, tenant, "p", 1)["settled_generation"] == "3"
        assert r.execute_command("DREAMS.RECORD", tenant, "p", 1, 2, 0, *args) == [b"accumulated", 2, 0]
        args[3] = 4
        assert r.execute_command("DREAMS.RECORD", tenant, "p", 1, 2, 0, *args) == [b"accumulated", 4, 0]

    def test_counters_saturate(self, r, tenant):
        t = trigger(4294967295, 4294967295)
        r.execute_command("DREAMS.RECORD", tenant, "p", 1, 4294967295, 0, *t)
        assert r.execute_command("DREAMS.RECORD", tenant, "p", 1, 10, 0, *t)[1] == 4294967295


class TestDrainAndAck:
    def test_drain_moves_the_head_in_flight_and_ack_removes_it(self, r, tenant):
        r.execute_command("DREAMS.FIRE", tenant, "p", 1)
        payload = drain(r, tenant)
        assert json.loads(payload)["region"]["project"] == "p"
        assert r.execute_command("DREAMS.LEN", tenant) == [0, 0, 1]
        assert r.execute_command("DREAMS.ACK", tenant, payload, "SUCCESS") == [b"acknowledged", 0, 0]
        assert r.execute_command("DREAMS.ACK", tenant, payload, "SUCCESS") == [b"stale", 0, 0]
        assert r.execute_command("DREAMS.LEN", tenant) == [0, 0, 0]

    def test_ack_success_subtracts_the_snapshot_and_failure_retries(self, r_both, tenant):
        r = r_both
        t = trigger(3, 100)
        r.execute_command("DREAMS.RECORD", tenant, "p", 1, 3, 0, *t)
        r.execute_command("DREAMS.RECORD", tenant, "p", 1, 2, 0, *t)
        payload = drain(r, tenant)
        retried = r.execute_command("DREAMS.ACK", tenant, payload, "FAILURE", "NODE", "retrier")
        assert retried == [b"requeued", 5, 0]
        again = drain(r, tenant)
        assert json.loads(again)["fire_id"] == json.loads(payload)["fire_id"]
        done = r.execute_command("DREAMS.ACK", tenant, again, "SUCCESS", *trigger(3, 100, 1))
        assert done == [b"acknowledged", 2, 0]
        state = counters(r, tenant, "p", 1)
        assert "pending" not in state and state["memories"] == "2"

    def test_drain_times_out_with_none(self, r_both, tenant):
        r = r_both
        started = time.monotonic()
        assert drain(r, tenant, 0.2) is None
        assert time.monotonic() - started >= 0.19

    def test_a_blocked_drain_is_woken_by_another_connection(self, server, r, tenant):
        result = {}

        def worker():
            result["payload"] = server.client().execute_command("DREAMS.DRAIN", tenant, 0, "NOQUIET")

        thread = threading.Thread(target=worker, daemon=True)
        thread.start()
        wait_until("the drainer blocks", lambda: blocked_clients(r) == 1)
        r.execute_command("DREAMS.RECORD", tenant, "p", 1, 1, 0, *trigger(1, 1))
        thread.join(timeout=20)
        assert not thread.is_alive()
        assert json.loads(result["payload"])["fired_at"]["memories_since_last_cycle"] == 1
        assert r.execute_command("DREAMS.LEN", tenant) == [0, 0, 1]

    def test_drain_in_a_transaction_does_not_block(self, r, tenant):
        pipe = r.pipeline(transaction=True)
        pipe.execute_command("DREAMS.DRAIN", tenant, 0, "NOQUIET")
        assert pipe.execute() == [None]

    def test_quiet_hours_mark_both_items_and_run_the_first(self, r, tenant):
        r.execute_command("DREAMS.FIRE", tenant, "a", 1)
        r.execute_command("DREAMS.FIRE", tenant, "b", 1)
        payload = r.execute_command("DREAMS.DRAIN", tenant, 1, "QUIET", covering_window(r))
        message = json.loads(payload)
        assert (message["region"]["project"], message["quiet_deferred"]) == ("a", True)
        [left] = r.lrange(keys(tenant)["ready"], 0, -1)
        assert json.loads(left)["quiet_deferred"] is True
        assert info(r)["quiet_deferred"] == 2

    def test_foreign_items_are_dead_lettered(self, r, tenant):
        k = keys(tenant)
        r.rpush(k["ready"], "garbage", json.dumps({"region": {"org": "x", "project": "p", "memory_type": 1}, "fired_by": "n"}))
        r.execute_command("DREAMS.FIRE", tenant, "good", 1)
        assert json.loads(drain(r, tenant))["region"]["project"] == "good"
        assert r.llen(k["dead"]) == 2

    def test_recover_hands_in_flight_work_back(self, r, tenant):
        for project in ["a", "b"]:
            r.execute_command("DREAMS.FIRE", tenant, project, 1)
        drain(r, tenant)
        drain(r, tenant)
        assert r.execute_command("DREAMS.RECOVER", tenant) == 2
        assert r.execute_command("DREAMS.LEN", tenant) == [2, 0, 0]
        assert r.execute_command("DREAMS.RECOVER", tenant) == 0


class TestConfigAndInfo:
    def test_every_setting_is_visible_and_validated(self, r):
        settings = r.config_get("dreamtown.*")
        assert settings == {
            "dreamtown.queue-max": "1000",
            "dreamtown.quiet-hours": "02-06",
            "dreamtown.quiet-utc-offset": "0",
            "dreamtown.quiet-backlog-min": "32",
            "dreamtown.memory-threshold": "50",
            "dreamtown.edge-threshold": "200",
            "dreamtown.min-interval": "3600",
            "dreamtown.age-floor": "604800",
            "dreamtown.lease": "0",
            "dreamtown.town-lease": "0",
            "dreamtown.catch-up-keys-per-turn": "10000",
        }
        r.config_set("dreamtown.quiet-hours", "23-07")
        assert r.config_get("dreamtown.quiet-hours") == {"dreamtown.quiet-hours": "23-07"}
        for name, bad in [("queue-max", 0), ("quiet-hours", "2-06"), ("quiet-utc-offset", 1440), ("min-interval", -1)]:
            with pytest.raises(redis.ResponseError):
                r.config_set(f"dreamtown.{name}", bad)
        assert r.config_get("dreamtown.quiet-hours") == {"dreamtown.quiet-hours": "23-07"}

    def test_loadmodule_arguments_configure_the_module(self):
        server = Server(module_args=("queue-max", "1", "min-interval", "0"))
        try:
            r = server.client()
            assert r.config_get("dreamtown.queue-max") == {"dreamtown.queue-max": "1"}
            assert r.execute_command("DREAMS.FIRE", "o", "p", 1) == b"queued"
            assert r.execute_command("DREAMS.FIRE", "o", "p", 1) == b"dropped"
        finally:
            server.cleanup()

    def test_stats_are_field_value_pairs_in_both_protocols(self, r_both, tenant):
        r_both.execute_command("DREAMS.FIRE", tenant, "p", 1)
        reply = r_both.execute_command("DREAMS.STATS", tenant)
        # A dict in RESP3 (a map, as CONFIG GET), a flat list in RESP2.
        assert isinstance(reply, dict) == (r_both.get_connection_kwargs().get("protocol") == 3)
        stats = as_dict(reply)
        assert (stats["ready"], stats["in_flight"], stats["fired_fire"]) == (1, 0, 1)
        assert stats["next_lease_deadline_ms"] is None

    def test_info_reports_totals(self, r, tenant):
        r.config_set("dreamtown.queue-max", 1)
        r.execute_command("DREAMS.FIRE", tenant, "p", 1)
        r.execute_command("DREAMS.FIRE", tenant, "p", 1)
        r.execute_command("DREAMS.RECORD", tenant, "p", 1, 1, 0, *trigger(1, 1))
        stats = info(r)
        assert stats["fired_fire"] == 1
        assert stats["dropped_capacity_fire"] == 1
        assert stats["dropped_capacity_record"] == 1
        assert stats["fired"] == 1 and stats["dropped"] == 2


class TestErrors:
    @pytest.mark.parametrize(
        "args, message",
        [
            (["DREAMS.FIRE", "a{b", "p", 1], "organization must not contain"),
            (["DREAMS.FIRE", "", "p", 1], "organization must not be empty"),
            (["DREAMS.FIRE", "o", "p", -1], "memory type must be an integer"),
            (["DREAMS.RECORD", "o", "p", 1, 1, 1, "EVENT", "", "GENERATION", 1], "event id must not be empty"),
            (["DREAMS.RECORD", "o", "p", 1, 1, 1, "EVENT", "e", "GENERATION", 0], "generation must be positive"),
            (["DREAMS.RECORD", "o", "p", 1, 1, 1, "EVENT", "e"], "must be followed by GENERATION"),
            (["DREAMS.SETTLE", "o", "p", 1, "e", 0], "generation must be positive"),
            (["DREAMS.DRAIN", "o", -1], "timeout is negative"),
            (["DREAMS.DRAIN", "o", 0, "QUIET", "2-6"], "invalid quiet window"),
            (["DREAMS.DRAIN", "o", 0, "QUIET", "02-06", "OFFSET", 1440], "UTC offset \\(minutes\\) must be an integer from -1439 to 1439"),
            (["DREAMS.DRAIN", "o", 0, "BOGUS"], "unknown option"),
            (["DREAMS.ACK", "o", "not json", "SUCCESS"], "not a Dreams fire message"),
            (["DREAMS.LEN", "o", "extra"], "wrong number of arguments"),
        ],
    )
    def test_bad_arguments_are_refused_and_change_nothing(self, r, args, message):
        r.execute_command("DREAMS.FIRE", "o", "p", 1)
        before = r.execute_command("DEBUG", "DIGEST")
        with pytest.raises(redis.ResponseError, match=message):
            r.execute_command(*args)
        assert r.execute_command("DEBUG", "DIGEST") == before

    def test_a_foreign_payload_is_rejected_by_ack(self, r, tenant):
        foreign = json.dumps({"region": {"org": "other", "project": "p", "memory_type": 1}, "fired_by": "n"})
        with pytest.raises(redis.ResponseError, match="rejects region organization"):
            r.execute_command("DREAMS.ACK", tenant, foreign, "SUCCESS")

    def test_wrong_type_keys_are_refused(self, r, tenant):
        r.set(keys(tenant)["ready"], "not a list")
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            r.execute_command("DREAMS.FIRE", tenant, "p", 1)
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            drain(r, tenant)
        assert r.get(keys(tenant)["ready"]) == b"not a list"

    def test_acl_confines_a_user_to_its_organization(self, server, r, tenant):
        r.acl_setuser("tenant-a", enabled=True, passwords=["+pw"], keys=[f"exocortex:dreams:{{{tenant}}}:*"], commands=["+@all"])
        user = server.client(username="tenant-a", password="pw")
        assert user.execute_command("DREAMS.FIRE", tenant, "p", 1) == b"queued"
        with pytest.raises(redis.exceptions.NoPermissionError):
            user.execute_command("DREAMS.FIRE", "someone-else", "p", 1)
        assert r.execute_command("DREAMS.LEN", "someone-else") == [0, 0, 0]
