"""TOWN.* as a Redis user sees them through redis-py: messages by priority,
urgent first, blocking receive woken from another connection, reliable
receive with ack and requeue, reclaim, agent and task records, activity,
backlog, stop flags, reset, and errors that change nothing."""

import json
import socket
import threading

import pytest
import redis

from conftest import as_dict, wait_until


def message(id_, to, priority="normal", **extra):
    body = {"id": id_, "from": "lead", "to": to, "type": "task", "description": f"do {id_}",
            "priority": priority, "created_at": "2025-01-01T00:00:00Z", "correlation_id": None}
    body.update(extra)
    return json.dumps(body, separators=(",", ":"))


def key(town, kind, id_):
    return f"tt:{{{town}}}:{kind}:{id_}"


def blocked(r):
    return r.info("clients")["blocked_clients"]


def test_send_places_by_priority_and_recv_reads_urgent_first(r, tenant):
    sends = [message("n1", "b"), message("l1", "b", "low"), message("h1", "b", "high"),
             message("u1", "b", "urgent"), message("n2", "b", "Normal")]
    for at, sent in enumerate(sends, start=1):
        assert r.execute_command("TOWN.SEND", tenant, sent) == at
    expected = [sends[3], sends[2], sends[0], sends[1], sends[4]]
    assert [m.decode() for m in r.execute_command("TOWN.PEEK", tenant, "b", 10)] == expected
    urgent = message("x", "b")
    assert r.execute_command("TOWN.SEND", tenant, urgent, "URGENT") == 1
    assert r.execute_command("TOWN.LEN", tenant, "b") == [5, 1, 0]
    assert [m.decode() for m in r.execute_command("TOWN.RECV", tenant, "b", "COUNT", 3)] == \
        [urgent, sends[3], sends[2]]
    assert r.execute_command("TOWN.RECV", tenant, "b", "URGENT") == []
    assert len(r.execute_command("TOWN.RECV", tenant, "b", "COUNT", 100)) == 3
    assert r.execute_command("TOWN.RECV", tenant, "b") == []


def test_blocking_recv_is_woken_by_a_send_and_times_out_with_nil(server, r, tenant):
    assert r.execute_command("TOWN.RECV", tenant, "b", "BLOCK", "0.1") is None
    got = {}

    def receive():
        got["reply"] = server.client().execute_command("TOWN.RECV", tenant, "b", "BLOCK", 20, "RELIABLE")

    thread = threading.Thread(target=receive)
    thread.start()
    wait_until("receiver blocked", lambda: blocked(r) == 1)
    sent = message("wake", "b")
    assert r.execute_command("TOWN.SEND", tenant, sent) == 1
    thread.join(30)
    assert not thread.is_alive()
    assert [m.decode() for m in got["reply"]] == [sent]
    assert r.execute_command("TOWN.LEN", tenant, "b") == [0, 0, 1]


def test_recv_never_blocks_in_a_transaction(r, tenant):
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("TOWN.RECV", tenant, "b", "BLOCK", 0)
    # Timed out at once, as BLPOP inside a transaction.
    assert pipe.execute() == [None]


def test_disconnected_receiver_loses_nothing(server, r, tenant):
    raw = socket.create_connection(("127.0.0.1", server.port))
    args = ["TOWN.RECV", tenant, "b", "BLOCK", "0", "RELIABLE"]
    raw.sendall(("*%d\r\n" % len(args) + "".join(f"${len(a)}\r\n{a}\r\n" for a in args)).encode())
    wait_until("raw receiver blocked", lambda: blocked(r) == 1)
    raw.close()
    wait_until("raw receiver gone", lambda: blocked(r) == 0)
    sent = message("kept", "b")
    r.execute_command("TOWN.SEND", tenant, sent)
    assert r.execute_command("TOWN.LEN", tenant, "b") == [1, 0, 0]


def test_ack_and_requeue(r, tenant):
    sent = [message(f"m{n}", "b") for n in range(3)]
    for m in sent:
        r.execute_command("TOWN.SEND", tenant, m)
    got = r.execute_command("TOWN.RECV", tenant, "b", "COUNT", 3, "RELIABLE")
    assert [m.decode() for m in got] == sent
    assert r.execute_command("TOWN.ACK", tenant, "b", "m1") == 1
    assert r.execute_command("TOWN.ACK", tenant, "b", "m1") == 0
    assert r.execute_command("TOWN.REQUEUE", tenant, "b") == 2
    assert [m.decode() for m in r.execute_command("TOWN.PEEK", tenant, "b", 10)] == [sent[0], sent[2]]
    assert r.execute_command("TOWN.LEN", tenant, "b") == [2, 0, 0]


def test_one_ack_of_a_batch(r, tenant):
    sent = [message(f"m{n}", "b") for n in range(4)]
    for m in sent:
        r.execute_command("TOWN.SEND", tenant, m)
    r.execute_command("TOWN.RECV", tenant, "b", "COUNT", 3, "RELIABLE")
    # m3 was never received, m1 is named twice: two removed.
    assert r.execute_command("TOWN.ACK", tenant, "b", "m0", "m1", "m1", "m3") == 2
    assert r.execute_command("TOWN.LEN", tenant, "b") == [1, 0, 1]
    assert r.execute_command("TOWN.ACK", tenant, "b", "m2") == 1


def test_reclaim_moves_everything_and_rewrites_to(r, tenant):
    r.execute_command("TOWN.SEND", tenant, message("u", "dead"), "URGENT")
    r.execute_command("TOWN.SEND", tenant, message("p", "dead"))
    assert len(r.execute_command("TOWN.RECV", tenant, "dead", "URGENT", "RELIABLE")) == 1
    r.execute_command("TOWN.SEND", tenant, message("u2", "dead"), "URGENT")
    r.execute_command("TOWN.SEND", tenant, message("h", "dead", "high"))
    r.rpush(key(tenant, "inbox", "dead"), b"\xff not json")
    assert r.execute_command("TOWN.LEN", tenant, "dead") == [3, 1, 1]
    assert r.execute_command("TOWN.RECLAIM", tenant, "dead", "heir") == 5
    assert r.execute_command("TOWN.LEN", tenant, "dead") == [0, 0, 0]
    urgent = r.lrange(key(tenant, "urgent", "heir"), 0, -1)
    assert [json.loads(m)["id"] for m in urgent] == ["u2"]
    inbox = r.execute_command("TOWN.PEEK", tenant, "heir", 10)
    assert inbox[-1] == b"\xff not json"
    parsed = [json.loads(m) for m in inbox[:-1]]
    assert [m["id"] for m in parsed] == ["h", "u", "p"]
    assert all(m["to"] == "heir" for m in parsed)
    assert inbox[0].decode() == message("h", "heir", "high")


def test_agent_records_are_replaced_listed_and_counted(r_both, tenant):
    r = r_both
    assert r.execute_command("TOWN.AGENT", "SET", tenant, "a1", "name", "alice", "nickname", "al") == b"OK"
    r.execute_command("TOWN.AGENT", "SET", tenant, "a1", "name", "alice", "state", "idle")
    assert as_dict(r.execute_command("TOWN.AGENT", "GET", tenant, "a1")) == {"name": "alice", "state": "idle"}
    r.execute_command("TOWN.AGENT", "SET", tenant, "a0", "name", "bob")
    r.hset(key(tenant, "agent", "fake"), "name", "alice")
    listed = [as_dict(a)["name"] for a in r.execute_command("TOWN.AGENT", "LIST", tenant)]
    assert listed == ["bob", "alice"]
    assert as_dict(r.execute_command("TOWN.AGENT", "BYNAME", tenant, "alice"))["state"] == "idle"
    assert as_dict(r.execute_command("TOWN.AGENT", "BYNAME", tenant, "carol")) == {}
    assert r.execute_command("TOWN.AGENT", "INCR", tenant, "a1", "ROUNDS") == 1
    assert r.execute_command("TOWN.AGENT", "INCR", tenant, "a1", "TASKS") == 1
    r.execute_command("TOWN.AGENT", "HEARTBEAT", tenant, "a1")
    assert as_dict(r.execute_command("TOWN.AGENT", "GET", tenant, "a1"))["last_heartbeat"].endswith("+00:00")
    with pytest.raises(redis.ResponseError, match="no such agent"):
        r.execute_command("TOWN.AGENT", "HEARTBEAT", tenant, "ghost")
    assert r.execute_command("TOWN.AGENT", "DEL", tenant, "a1") == 1
    assert as_dict(r.execute_command("TOWN.AGENT", "GET", tenant, "a1")) == {}


def test_tasks(r_both, tenant):
    r = r_both
    r.execute_command("TOWN.TASK", "SET", tenant, "t2", "id", "t2", "result", "x")
    r.execute_command("TOWN.TASK", "SET", tenant, "t1", "id", "t1")
    r.execute_command("TOWN.TASK", "SET", tenant, "t2", "id", "t2", "state", "done")
    assert as_dict(r.execute_command("TOWN.TASK", "GET", tenant, "t2")) == {"id": "t2", "state": "done"}
    assert [as_dict(t)["id"] for t in r.execute_command("TOWN.TASK", "LIST", tenant)] == ["t1", "t2"]
    assert r.execute_command("TOWN.TASK", "DEL", tenant, "t1") == 1
    assert r.execute_command("TOWN.TASK", "DEL", tenant, "t1") == 0


def test_activity_is_bounded_and_expires(r, tenant):
    assert r.execute_command("TOWN.ACTIVITY", "GET", tenant, "a") is None
    for n in range(12):
        r.execute_command("TOWN.ACTIVITY", "LOG", tenant, "a", f"step {n}")
    assert r.llen(key(tenant, "activity", "a")) == 10
    assert r.execute_command("TOWN.ACTIVITY", "GET", tenant, "a") == b"step 11\nstep 10\nstep 9\nstep 8\nstep 7"
    assert 3_590_000 <= r.pttl(key(tenant, "activity", "a")) <= 3_600_000


def test_backlog_is_fifo(r, tenant):
    for n, task in enumerate(["t1", "t2", "t3"], start=1):
        assert r.execute_command("TOWN.BACKLOG", "PUSH", tenant, task) == n
    assert r.execute_command("TOWN.BACKLOG", "LIST", tenant) == [b"t1", b"t2", b"t3"]
    assert r.execute_command("TOWN.BACKLOG", "POP", tenant) == b"t1"
    assert r.execute_command("TOWN.BACKLOG", "REMOVE", tenant, "t3") == 1
    assert r.execute_command("TOWN.BACKLOG", "REMOVE", tenant, "t3") == 0
    assert r.execute_command("TOWN.BACKLOG", "LEN", tenant) == 1
    assert r.execute_command("TOWN.BACKLOG", "POP", tenant) == b"t2"
    assert r.execute_command("TOWN.BACKLOG", "POP", tenant) is None


def test_stop_flags(r, tenant):
    assert r.execute_command("TOWN.STOP", "CHECK", tenant, "a") == 0
    assert r.execute_command("TOWN.STOP", "REQUEST", tenant, "a") == b"OK"
    assert 3590 <= r.ttl(key(tenant, "stop", "a")) <= 3600
    assert r.execute_command("TOWN.STOP", "CHECK", tenant, "a") == 1
    r.execute_command("TOWN.STOP", "REQUEST", tenant, "a", "TTL", 30)
    assert 20 <= r.ttl(key(tenant, "stop", "a")) <= 30
    assert r.execute_command("TOWN.STOP", "CLEAR", tenant, "a") == 1
    assert r.execute_command("TOWN.STOP", "CLEAR", tenant, "a") == 0


def test_broadcast(server, r, tenant):
    pubsub = server.client().pubsub()
    pubsub.subscribe(f"tt:{{{tenant}}}:broadcast")
    wait_until("subscribed", lambda: pubsub.get_message(timeout=1))
    assert r.execute_command("TOWN.BROADCAST", tenant, '{"type":"hello"}') == 1
    received = wait_until("broadcast", lambda: pubsub.get_message(timeout=1))
    assert received["data"] == b'{"type":"hello"}'
    pubsub.close()


def test_reset_counts(r, tenant):
    def populate():
        r.execute_command("TOWN.AGENT", "SET", tenant, "a", "name", "alice")
        r.execute_command("TOWN.SEND", tenant, message("m", "a"))
        r.execute_command("TOWN.STOP", "REQUEST", tenant, "b")
        r.execute_command("TOWN.TASK", "SET", tenant, "t", "id", "t")
        r.execute_command("TOWN.BACKLOG", "PUSH", tenant, "t")
    populate()
    # a: record + inbox, b: stop, agent and mailbox indexes
    assert r.execute_command("TOWN.RESET", tenant, "AGENTS") == 5
    assert r.execute_command("TOWN.BACKLOG", "LEN", tenant) == 1
    populate()
    # the same 5, plus task, task index and backlog
    assert r.execute_command("TOWN.RESET", tenant) == 8
    assert r.keys(f"tt:{{{tenant}}}:*") == []


@pytest.mark.parametrize("args", [
    ("TOWN.SEND", "{t}", '{"to":"a"}'),
    ("TOWN.SEND", "T", "not json"),
    ("TOWN.SEND", "T", '{"to":1}'),
    ("TOWN.SEND", "T", '{"to":"a","priority":"soon"}'),
    ("TOWN.RECV", "T", "a", "COUNT", "0"),
    ("TOWN.RECV", "T", "a", "BLOCK", "-1"),
    ("TOWN.PEEK", "T", "a", "-1"),
    ("TOWN.RECLAIM", "T", "a", "a"),
    ("TOWN.STOP", "REQUEST", "T", "a", "TTL", "0"),
    ("TOWN.AGENT", "SET", "T", "a", "name"),
    ("TOWN.AGENT", "INCR", "T", "a", "LAPS"),
    ("TOWN.BACKLOG", "SHIFT", "T"),
    ("TOWN.RESET", "T", "ALL"),
])
def test_bad_input_is_an_error_and_changes_nothing(r, tenant, args):
    r.execute_command("TOWN.SEND", tenant, message("m", "a"))
    r.execute_command("TOWN.AGENT", "SET", tenant, "a", "name", "alice")
    before = r.execute_command("DEBUG", "DIGEST")
    args = [tenant if a == "T" else a for a in args]
    with pytest.raises(redis.ResponseError):
        r.execute_command(*args)
    assert r.execute_command("DEBUG", "DIGEST") == before


def test_wrong_type_is_refused_and_changes_nothing(r, tenant):
    r.execute_command("TOWN.SEND", tenant, message("m", "a"))
    r.set(key(tenant, "pending", "a"), "oops")
    before = r.execute_command("DEBUG", "DIGEST")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.execute_command("TOWN.RECV", tenant, "a", "RELIABLE")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.execute_command("TOWN.RECLAIM", tenant, "a", "b")
    assert r.execute_command("DEBUG", "DIGEST") == before
    assert r.llen(key(tenant, "inbox", "a")) == 1
