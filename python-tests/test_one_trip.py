"""The one-trip worker loops through redis-py: DREAMS.DRAIN ... ACK and
COUNT, TOWN.RECV ... RELIABLE ACK, as a Python worker would write them
with execute_command.
"""

import json
import threading

from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import wait_until


def test_a_python_dreams_worker_takes_each_item_with_one_call(r, tenant):
    for project in ("a", "b", "c"):
        assert r.execute_command("DREAMS.FIRE", tenant, project, 1) == b"queued"
    done = []
    payload = r.execute_command("DREAMS.DRAIN", tenant, 0.1, "NOQUIET")
    while payload is not None:
        done.append(json.loads(payload)["region"]["project"])
        acked, payload = r.execute_command("DREAMS.DRAIN", tenant, 0.1, "NOQUIET", "ACK", payload, "SUCCESS")
        assert acked[0] == b"acknowledged"
    assert done == ["a", "b", "c"]
    assert r.execute_command("DREAMS.LEN", tenant) == [0, 0, 0]


def test_count_returns_a_batch_and_nil_when_nothing_comes(r, tenant):
    for project in ("a", "b", "c"):
        r.execute_command("DREAMS.FIRE", tenant, project, 1)
    batch = r.execute_command("DREAMS.DRAIN", tenant, 0.1, "NOQUIET", "LEASE", 30, "COUNT", 10)
    assert [json.loads(p)["region"]["project"] for p in batch] == ["a", "b", "c"]
    assert r.zcard(f"exocortex:dreams:{{{tenant}}}:leases") == 3
    acked, rest = r.execute_command("DREAMS.DRAIN", tenant, 0.05, "NOQUIET", "COUNT", 10,
                                    "ACK", batch[0], "FAILURE")
    assert acked[0] == b"acknowledged" and rest is None
    assert r.execute_command("DREAMS.LEN", tenant) == [0, 0, 2]


def test_an_ack_made_before_blocking_stands_when_the_client_goes_away(server, r, tenant):
    r.execute_command("DREAMS.FIRE", tenant, "a", 1)
    payload = r.execute_command("DREAMS.DRAIN", tenant, 0.1, "NOQUIET")
    # No automatic resend: redis-py would reconnect and send the call again.
    worker = server.client(retry=Retry(NoBackoff(), 0), retry_on_error=[])
    worker_id = worker.client_id()
    outcome = []

    def blocked():
        try:
            outcome.append(worker.execute_command("DREAMS.DRAIN", tenant, 0, "NOQUIET", "ACK", payload, "SUCCESS"))
        except Exception as error:  # the kill below closes the connection
            outcome.append(error)

    thread = threading.Thread(target=blocked)
    thread.start()
    wait_until("the worker blocks", lambda: r.info("clients")["blocked_clients"] == 1)
    assert r.execute_command("DREAMS.LEN", tenant) == [0, 0, 0], "acknowledged before it blocked"
    r.client_kill_filter(_id=worker_id)
    thread.join(20)
    assert outcome and isinstance(outcome[0], Exception)
    assert r.execute_command("DREAMS.LEN", tenant) == [0, 0, 0]


def test_errors_in_the_ack_clause_change_nothing(r, tenant):
    r.execute_command("DREAMS.FIRE", tenant, "a", 1)
    payload = r.execute_command("DREAMS.DRAIN", tenant, 0.1, "NOQUIET")
    before = r.execute_command("DEBUG", "DIGEST")
    for bad in (["ACK", "not a fire", "SUCCESS"], ["ACK", payload, "PERHAPS"], ["ACK", payload]):
        try:
            r.execute_command("DREAMS.DRAIN", tenant, 0.1, "NOQUIET", *bad)
            raise AssertionError(f"{bad} should fail")
        except Exception as error:
            assert str(error), bad
        assert r.execute_command("DEBUG", "DIGEST") == before


def test_a_python_town_agent_acknowledges_and_receives_in_one_call(r, tenant):
    for i in range(3):
        r.execute_command("TOWN.SEND", tenant, json.dumps({"id": f"m{i}", "from": "lead", "to": "w"}))
    seen = []
    received = r.execute_command("TOWN.RECV", tenant, "w", "RELIABLE")
    while received:
        message = json.loads(received[0])
        seen.append(message["id"])
        acked, received = r.execute_command("TOWN.RECV", tenant, "w", "BLOCK", 0.05, "RELIABLE", "ACK", message["id"])
        assert acked == 1
    assert seen == ["m0", "m1", "m2"]
    assert r.execute_command("TOWN.LEN", tenant, "w") == [0, 0, 0]
