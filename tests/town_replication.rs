//! A replica reproduces the master exactly under a mixed TOWN workload
//! (sends of every priority, a blocked receive woken by a send, reliable
//! receive, ack, requeue, reclaim, agent and task records, counters,
//! heartbeat, stop flags and activity logs with TTLs, backlog, reset): the
//! commands replicate their effects, with absolute expiry times, so
//! `DEBUG DIGEST` of master and replica end equal.

use crate::common;
use crate::town_support;

use common::{tenant, wait_until, Server};
use town_support::*;

fn workload(server: &Server, town: &str, other: &str) {
    let mut con = server.connect();
    for (n, priority) in ["low", "normal", "high", "urgent", "NORMAL"].iter().enumerate() {
        ok::<i64>(&mut con, &["TOWN.SEND", town, &message(&format!("m{n}"), "a", priority)]);
    }
    ok::<i64>(&mut con, &["TOWN.SEND", town, &message("u", "a", "normal"), "URGENT"]);
    ok::<Vec<String>>(&mut con, &["TOWN.RECV", town, "a", "COUNT", "3", "RELIABLE"]);
    // The urgent message, then the inbox's head (m3, m2: high and urgent
    // priorities are pushed at the head); one ACK of several ids.
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", town, "a", "u", "m3", "nope"]), 2);
    ok::<i64>(&mut con, &["TOWN.REQUEUE", town, "a"]);
    ok::<Vec<String>>(&mut con, &["TOWN.RECV", town, "a", "RELIABLE"]);

    // A receive blocked on an empty inbox, woken by a send from here.
    let mut waiter = server.connect();
    let town_for_waiter = town.to_string();
    let receiver = std::thread::spawn(move || {
        let got: Option<Vec<String>> =
            ok(&mut waiter, &["TOWN.RECV", &town_for_waiter, "w", "BLOCK", "30", "RELIABLE", "COUNT", "2"]);
        got
    });
    wait_blocked(&mut con, 1);
    ok::<i64>(&mut con, &["TOWN.SEND", town, &message("wake", "w", "high")]);
    assert_eq!(receiver.join().expect("receiver").map(|m| m.len()), Some(1));

    ok::<i64>(&mut con, &["RPUSH", &format!("tt:{{{town}}}:inbox:a"), "garbage"]);
    ok::<i64>(&mut con, &["TOWN.RECLAIM", town, "a", "heir"]);

    ok::<()>(&mut con, &["TOWN.AGENT", "SET", town, "a", "name", "alice", "state", "idle", "nickname", "al"]);
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", town, "a", "name", "alice", "state", "working"]);
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", town, "heir", "name", "heir"]);
    ok::<i64>(&mut con, &["TOWN.AGENT", "INCR", town, "a", "ROUNDS"]);
    ok::<i64>(&mut con, &["TOWN.AGENT", "INCR", town, "a", "TASKS"]);
    ok::<()>(&mut con, &["TOWN.AGENT", "HEARTBEAT", town, "a"]);
    ok::<()>(&mut con, &["TOWN.STOP", "REQUEST", town, "a"]);
    ok::<()>(&mut con, &["TOWN.STOP", "REQUEST", town, "heir", "TTL", "120"]);
    ok::<()>(&mut con, &["TOWN.STOP", "REQUEST", town, "gone", "TTL", "60"]);
    ok::<i64>(&mut con, &["TOWN.STOP", "CLEAR", town, "gone"]);
    for n in 0..13 {
        ok::<()>(&mut con, &["TOWN.ACTIVITY", "LOG", town, "a", &format!("step {n}")]);
    }
    ok::<()>(&mut con, &["TOWN.ACTIVITY", "LOG", town, "heir", "started"]);
    ok::<()>(&mut con, &["TOWN.TASK", "SET", town, "t1", "id", "t1", "state", "pending"]);
    ok::<()>(&mut con, &["TOWN.TASK", "SET", town, "t2", "id", "t2"]);
    ok::<()>(&mut con, &["TOWN.TASK", "SET", town, "t1", "id", "t1", "state", "done"]);
    ok::<i64>(&mut con, &["TOWN.TASK", "DEL", town, "t2"]);
    for task in ["t1", "t2", "t3"] {
        ok::<i64>(&mut con, &["TOWN.BACKLOG", "PUSH", town, task]);
    }
    ok::<Option<String>>(&mut con, &["TOWN.BACKLOG", "POP", town]);
    ok::<i64>(&mut con, &["TOWN.BACKLOG", "REMOVE", town, "t3"]);
    ok::<i64>(&mut con, &["TOWN.BROADCAST", town, r#"{"type":"hello"}"#]);

    // A second town, reset twice.
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", other, "x", "name", "x"]);
    ok::<i64>(&mut con, &["TOWN.SEND", other, &message("o", "x", "normal")]);
    ok::<()>(&mut con, &["TOWN.TASK", "SET", other, "t", "id", "t"]);
    ok::<i64>(&mut con, &["TOWN.RESET", other, "AGENTS"]);
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", other, "y", "name", "y"]);
    ok::<i64>(&mut con, &["TOWN.AGENT", "DEL", other, "y"]);
    ok::<i64>(&mut con, &["TOWN.RESET", other]);
}

#[test]
fn replica_digest_matches_after_a_mixed_town_workload() {
    let master = Server::start();
    let replica = master.start_replica();
    let town = tenant("repl");
    let other = tenant("repl-other");
    workload(&master, &town, &other);

    let mut con = master.connect();
    let size: i64 = ok(&mut con, &["DBSIZE"]);
    assert!(size > 10, "the workload left state to compare ({size} keys)");
    wait_until("replica digest equals master digest", || master.digest() == replica.digest());

    // Expiry times are absolute and identical on both.
    let mut replica_con = replica.connect();
    for key in
        [format!("tt:{{{town}}}:activity:a"), format!("tt:{{{town}}}:stop:a"), format!("tt:{{{town}}}:stop:heir")]
    {
        let on_master: i64 = ok(&mut con, &["PEXPIRETIME", &key]);
        let on_replica: i64 = ok(&mut replica_con, &["PEXPIRETIME", &key]);
        assert!(on_master > 0, "{key} has an expiry");
        assert_eq!(on_master, on_replica, "{key}");
    }
    let replica_size: i64 = ok(&mut replica_con, &["DBSIZE"]);
    assert_eq!(replica_size, size);
    let beat_master = fields(ok(&mut con, &["HGETALL", &format!("tt:{{{town}}}:agent:a")]));
    let beat_replica = fields(ok(&mut replica_con, &["HGETALL", &format!("tt:{{{town}}}:agent:a")]));
    assert_eq!(beat_master, beat_replica);
    assert!(beat_master.contains_key("last_heartbeat"));
}
