//! TOWN.AGENT / TASK / ACTIVITY / STOP / BACKLOG / BROADCAST / RESET
//! against a real server: atomic record replacement, listing through the
//! module's indexes (not the keyspace), counters and heartbeat, the bounded
//! expiring activity log, stop-flag lifetimes, the FIFO backlog, pub/sub
//! broadcast and reset counts.

use crate::common;
use crate::town_support;

use std::time::Duration;

use common::{tenant, Server};
use town_support::*;

#[test]
fn agent_set_replaces_the_whole_record() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("agent-set");
    let key = format!("tt:{{{town}}}:agent:a1");
    ok::<()>(
        &mut con,
        &[
            "TOWN.AGENT",
            "SET",
            &town,
            "a1",
            "id",
            "a1",
            "name",
            "alice",
            "state",
            "idle",
            "nickname",
            "al",
            "current_task",
            "t9",
        ],
    );
    let before = fields(ok(&mut con, &["TOWN.AGENT", "GET", &town, "a1"]));
    assert_eq!(before.len(), 5);
    assert_eq!(before["nickname"], "al");
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, "a1", "id", "a1", "name", "alice", "state", "working"]);
    let after = fields(ok(&mut con, &["TOWN.AGENT", "GET", &town, "a1"]));
    let expected: std::collections::BTreeMap<String, String> = [("id", "a1"), ("name", "alice"), ("state", "working")]
        .into_iter()
        .map(|(f, v)| (f.to_string(), v.to_string()))
        .collect();
    assert_eq!(after, expected);
    assert_eq!(fields(ok(&mut con, &["HGETALL", &key])), expected);
    // A repeated field keeps its last value.
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, "a1", "name", "x", "name", "y"]);
    assert_eq!(
        fields(ok(&mut con, &["TOWN.AGENT", "GET", &town, "a1"])).into_iter().collect::<Vec<_>>(),
        vec![("name".to_string(), "y".to_string())]
    );
    let missing: Vec<String> = ok(&mut con, &["TOWN.AGENT", "GET", &town, "nobody"]);
    assert!(missing.is_empty());
}

#[test]
fn listing_uses_the_index_not_the_keyspace() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("list");
    // 10,000 unrelated keys, and agent-looking hashes that the module did
    // not create (same key pattern the seed's KEYS would have matched).
    let mut pipe = redis::pipe();
    for n in 0..10_000 {
        pipe.cmd("SET").arg(format!("noise:{n}")).arg(n).ignore();
    }
    for n in 0..50 {
        pipe.cmd("HSET").arg(format!("tt:{{{town}}}:agent:fake{n}")).arg("name").arg("impostor").ignore();
    }
    pipe.query::<()>(&mut con).expect("fill keyspace");
    for (id, name) in [("a3", "carol"), ("a1", "alice"), ("a2", "bob")] {
        ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, id, "id", id, "name", name]);
    }
    ok::<()>(&mut con, &["CONFIG", "RESETSTAT"]);
    let listed: Vec<Vec<String>> = ok(&mut con, &["TOWN.AGENT", "LIST", &town]);
    let names: Vec<String> = listed.into_iter().map(|agent| fields(agent)["name"].clone()).collect();
    assert_eq!(names, vec!["alice", "bob", "carol"], "listed by agent id, impostors absent");
    let impostor: Vec<String> = ok(&mut con, &["TOWN.AGENT", "BYNAME", &town, "impostor"]);
    assert!(impostor.is_empty());
    let stats: String = ok(&mut con, &["INFO", "commandstats"]);
    assert!(!stats.contains("cmdstat_scan") && !stats.contains("cmdstat_keys"), "{stats}");
    // Reset finds only what the module indexed: the impostors stay.
    let deleted: i64 = ok(&mut con, &["TOWN.RESET", &town]);
    assert_eq!(deleted, 3 + 2, "three agent records and the two agent indexes");
    let left: i64 = ok(&mut con, &["EXISTS", &format!("tt:{{{town}}}:agent:fake7")]);
    assert_eq!(left, 1);
    let size: i64 = ok(&mut con, &["DBSIZE"]);
    assert_eq!(size, 10_000 + 50);
}

#[test]
fn byname_finds_the_first_agent_with_that_name() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("byname");
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, "b", "name", "worker", "cli", "two"]);
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, "a", "name", "worker", "cli", "one"]);
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, "c", "name", "lead"]);
    let found = fields(ok(&mut con, &["TOWN.AGENT", "BYNAME", &town, "worker"]));
    assert_eq!(found["cli"], "one");
    // A rename moves the agent in the index.
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, "a", "name", "retired"]);
    let found = fields(ok(&mut con, &["TOWN.AGENT", "BYNAME", &town, "worker"]));
    assert_eq!(found["cli"], "two");
    let none: Vec<String> = ok(&mut con, &["TOWN.AGENT", "BYNAME", &town, "ghost"]);
    assert!(none.is_empty());
}

#[test]
fn counters_and_heartbeat() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("incr");
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, "a", "name", "alice", "tasks_completed", "41"]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.AGENT", "INCR", &town, "a", "ROUNDS"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.AGENT", "INCR", &town, "a", "rounds"]), 2);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.AGENT", "INCR", &town, "a", "TASKS"]), 42);
    let error = fails(&mut con, &[b"TOWN.AGENT", b"INCR", town.as_bytes(), b"ghost", b"ROUNDS"]);
    assert!(error.contains("no such agent"), "{error}");
    let exists: i64 = ok(&mut con, &["EXISTS", &format!("tt:{{{town}}}:agent:ghost")]);
    assert_eq!(exists, 0);
    ok::<()>(&mut con, &["HSET", &format!("tt:{{{town}}}:agent:a"), "rounds_completed", "many"]);
    let error = fails(&mut con, &[b"TOWN.AGENT", b"INCR", town.as_bytes(), b"a", b"ROUNDS"]);
    assert!(error.contains("not an integer"), "{error}");
    assert_eq!(fields(ok(&mut con, &["TOWN.AGENT", "GET", &town, "a"]))["rounds_completed"], "many");

    let (server_secs, _): (String, String) = ok(&mut con, &["TIME"]);
    ok::<()>(&mut con, &["TOWN.AGENT", "HEARTBEAT", &town, "a"]);
    let beat = fields(ok(&mut con, &["TOWN.AGENT", "GET", &town, "a"]))["last_heartbeat"].clone();
    assert!(beat.ends_with("+00:00"), "{beat}");
    let parsed = chrono::DateTime::parse_from_rfc3339(&beat).expect("RFC 3339");
    let server_secs: i64 = server_secs.parse().unwrap();
    assert!((parsed.timestamp() - server_secs).abs() <= 5, "{beat} vs {server_secs}");
    let error = fails(&mut con, &[b"TOWN.AGENT", b"HEARTBEAT", town.as_bytes(), b"ghost"]);
    assert!(error.contains("no such agent"), "{error}");
}

#[test]
fn agent_del_removes_every_key_of_the_agent() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("agent-del");
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, "a", "name", "alice"]);
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("m", "a", "normal")]);
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("u", "a", "normal"), "URGENT"]);
    ok::<()>(&mut con, &["TOWN.ACTIVITY", "LOG", &town, "a", "working"]);
    ok::<()>(&mut con, &["TOWN.STOP", "REQUEST", &town, "a"]);
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, "b", "name", "bob"]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.AGENT", "DEL", &town, "a"]), 5);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.AGENT", "DEL", &town, "a"]), 0);
    let listed: Vec<Vec<String>> = ok(&mut con, &["TOWN.AGENT", "LIST", &town]);
    assert_eq!(listed.len(), 1);
    assert_eq!(fields(listed[0].clone())["name"], "bob");
    assert_eq!(lengths(&mut con, &town, "a"), vec![0, 0, 0]);
    // Only bob's keys and the indexes remain.
    assert_eq!(ok::<i64>(&mut con, &["TOWN.RESET", &town, "AGENTS"]), 3);
}

#[test]
fn tasks_are_replaced_listed_and_deleted() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("task");
    ok::<()>(&mut con, &["HSET", &format!("tt:{{{town}}}:task:stray"), "id", "stray"]);
    ok::<()>(&mut con, &["TOWN.TASK", "SET", &town, "t2", "id", "t2", "state", "pending", "result", "x"]);
    ok::<()>(&mut con, &["TOWN.TASK", "SET", &town, "t1", "id", "t1", "state", "pending"]);
    ok::<()>(&mut con, &["TOWN.TASK", "SET", &town, "t2", "id", "t2", "state", "done"]);
    let t2 = fields(ok(&mut con, &["TOWN.TASK", "GET", &town, "t2"]));
    assert_eq!(t2.len(), 2);
    assert_eq!(t2["state"], "done");
    let listed: Vec<Vec<String>> = ok(&mut con, &["TOWN.TASK", "LIST", &town]);
    let ids: Vec<String> = listed.into_iter().map(|t| fields(t)["id"].clone()).collect();
    assert_eq!(ids, vec!["t1", "t2"]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.TASK", "DEL", &town, "t1"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.TASK", "DEL", &town, "t1"]), 0);
    let listed: Vec<Vec<String>> = ok(&mut con, &["TOWN.TASK", "LIST", &town]);
    assert_eq!(listed.len(), 1);
    let none: Vec<String> = ok(&mut con, &["TOWN.TASK", "GET", &town, "t1"]);
    assert!(none.is_empty());
}

#[test]
fn activity_keeps_ten_entries_for_an_hour_and_shows_five() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("activity");
    let key = format!("tt:{{{town}}}:activity:a");
    let none: Option<String> = ok(&mut con, &["TOWN.ACTIVITY", "GET", &town, "a"]);
    assert_eq!(none, None);
    for n in 1..=12 {
        ok::<()>(&mut con, &["TOWN.ACTIVITY", "LOG", &town, "a", &format!("step {n}")]);
    }
    assert_eq!(ok::<i64>(&mut con, &["LLEN", &key]), 10);
    assert_eq!(list(&mut con, &key).last().map(String::as_str), Some("step 3"));
    let shown: String = ok(&mut con, &["TOWN.ACTIVITY", "GET", &town, "a"]);
    assert_eq!(shown, "step 12\nstep 11\nstep 10\nstep 9\nstep 8");
    let ttl: i64 = ok(&mut con, &["PTTL", &key]);
    assert!((3_590_000..=3_600_000).contains(&ttl), "{ttl}");
    // The TTL is refreshed by each entry.
    ok::<()>(&mut con, &["PEXPIRE", &key, "5000"]);
    ok::<()>(&mut con, &["TOWN.ACTIVITY", "LOG", &town, "a", "again"]);
    let ttl: i64 = ok(&mut con, &["PTTL", &key]);
    assert!((3_590_000..=3_600_000).contains(&ttl), "{ttl}");
}

#[test]
fn stop_flags_expire_after_an_hour_or_their_ttl() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("stop");
    let key = format!("tt:{{{town}}}:stop:a");
    assert_eq!(ok::<i64>(&mut con, &["TOWN.STOP", "CHECK", &town, "a"]), 0);
    ok::<()>(&mut con, &["TOWN.STOP", "REQUEST", &town, "a"]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.STOP", "CHECK", &town, "a"]), 1);
    assert_eq!(ok::<String>(&mut con, &["GET", &key]), "1");
    let ttl: i64 = ok(&mut con, &["TTL", &key]);
    assert!((3_590..=3_600).contains(&ttl), "{ttl}");
    assert_eq!(ok::<i64>(&mut con, &["TOWN.STOP", "CLEAR", &town, "a"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.STOP", "CLEAR", &town, "a"]), 0);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.STOP", "CHECK", &town, "a"]), 0);
    ok::<()>(&mut con, &["TOWN.STOP", "request", &town, "a", "ttl", "60"]);
    let ttl: i64 = ok(&mut con, &["PTTL", &key]);
    assert!((50_000..=60_000).contains(&ttl), "{ttl}");
    ok::<()>(&mut con, &["TOWN.STOP", "REQUEST", &town, "a", "TTL", "1"]);
    common::wait_until("stop flag expired", || ok::<i64>(&mut con, &["TOWN.STOP", "CHECK", &town, "a"]) == 0);
}

#[test]
fn backlog_is_fifo() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("backlog");
    for (n, task) in ["t1", "t2", "t3", "t2"].iter().enumerate() {
        assert_eq!(ok::<i64>(&mut con, &["TOWN.BACKLOG", "PUSH", &town, task]), n as i64 + 1);
    }
    let all: Vec<String> = ok(&mut con, &["TOWN.BACKLOG", "LIST", &town]);
    assert_eq!(all, vec!["t1", "t2", "t3", "t2"]);
    assert_eq!(ok::<Option<String>>(&mut con, &["TOWN.BACKLOG", "POP", &town]), Some("t1".into()));
    assert_eq!(ok::<i64>(&mut con, &["TOWN.BACKLOG", "REMOVE", &town, "t2"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.BACKLOG", "REMOVE", &town, "t9"]), 0);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.BACKLOG", "LEN", &town]), 2);
    assert_eq!(ok::<Vec<String>>(&mut con, &["TOWN.BACKLOG", "LIST", &town]), vec!["t3", "t2"]);
    assert_eq!(ok::<Option<String>>(&mut con, &["TOWN.BACKLOG", "POP", &town]), Some("t3".into()));
    assert_eq!(ok::<Option<String>>(&mut con, &["TOWN.BACKLOG", "POP", &town]), Some("t2".into()));
    assert_eq!(ok::<Option<String>>(&mut con, &["TOWN.BACKLOG", "POP", &town]), None);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.BACKLOG", "LEN", &town]), 0);
    // Ids that are not tinytown task ids are listed all the same.
    ok::<i64>(&mut con, &["RPUSH", &format!("tt:{{{town}}}:backlog"), "not-a-uuid"]);
    assert_eq!(ok::<Vec<String>>(&mut con, &["TOWN.BACKLOG", "LIST", &town]), vec!["not-a-uuid"]);
}

#[test]
fn broadcast_publishes_to_the_town_channel() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("broadcast");
    let hello = r#"{"type":"hello","from":"lead"}"#;
    assert_eq!(ok::<i64>(&mut con, &["TOWN.BROADCAST", &town, hello]), 0);
    let mut listener = server.connect();
    let mut pubsub = listener.as_pubsub();
    pubsub.subscribe(format!("tt:{{{town}}}:broadcast")).expect("subscribe");
    pubsub.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    assert_eq!(ok::<i64>(&mut con, &["TOWN.BROADCAST", &town, hello]), 1);
    let received = pubsub.get_message().expect("a broadcast");
    assert_eq!(received.get_channel_name(), format!("tt:{{{town}}}:broadcast"));
    assert_eq!(received.get_payload::<String>().unwrap(), hello);
    let error = fails(&mut con, &[b"TOWN.BROADCAST", town.as_bytes(), b"[1,2]"]);
    assert!(error.contains("JSON object"), "{error}");
}

/// A town with an agent that has a record, an inbox and activity; an agent
/// known only by its stop flag; a task; the backlog; docket and event streams.
fn populate(con: &mut redis::Connection, town: &str) {
    ok::<()>(con, &["TOWN.AGENT", "SET", town, "a", "name", "alice"]);
    ok::<i64>(con, &["TOWN.SEND", town, &message("m", "a", "normal")]);
    ok::<()>(con, &["TOWN.ACTIVITY", "LOG", town, "a", "busy"]);
    ok::<()>(con, &["TOWN.STOP", "REQUEST", town, "b"]);
    ok::<()>(con, &["TOWN.TASK", "SET", town, "t1", "id", "t1"]);
    ok::<i64>(con, &["TOWN.BACKLOG", "PUSH", town, "t1"]);
    ok::<String>(con, &["XADD", &format!("tt:{{{town}}}:docket:tasks"), "*", "task_id", "t1"]);
    ok::<String>(con, &["XADD", &format!("tt:{{{town}}}:events"), "*", "type", "started"]);
}

#[test]
fn full_reset_deletes_everything_the_town_has() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("reset");
    let neighbour = tenant("neighbour");
    populate(&mut con, &town);
    populate(&mut con, &neighbour);
    let before: i64 = ok(&mut con, &["DBSIZE"]);
    // a: record, inbox, activity; b: stop; agent + mailbox indexes; task +
    // task index; backlog; docket; events.
    assert_eq!(ok::<i64>(&mut con, &["TOWN.RESET", &town]), 3 + 1 + 2 + 2 + 1 + 1 + 1);
    assert_eq!(ok::<i64>(&mut con, &["DBSIZE"]), before - 11);
    let keys: Vec<String> = ok(&mut con, &["KEYS", &format!("tt:{{{town}}}:*")]);
    assert!(keys.is_empty(), "{keys:?}");
    assert_eq!(ok::<i64>(&mut con, &["TOWN.RESET", &town]), 0);
    assert_eq!(ok::<Vec<Vec<String>>>(&mut con, &["TOWN.AGENT", "LIST", &neighbour]).len(), 1);
    assert!(info_field(&mut con, "reset_keys_deleted") >= 11);
}

#[test]
fn agents_reset_keeps_tasks_backlog_and_streams() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("reset-agents");
    populate(&mut con, &town);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.RESET", &town, "agents"]), 3 + 1 + 2);
    assert!(ok::<Vec<Vec<String>>>(&mut con, &["TOWN.AGENT", "LIST", &town]).is_empty());
    assert_eq!(ok::<i64>(&mut con, &["TOWN.STOP", "CHECK", &town, "b"]), 0);
    assert_eq!(ok::<Vec<Vec<String>>>(&mut con, &["TOWN.TASK", "LIST", &town]).len(), 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.BACKLOG", "LEN", &town]), 1);
    assert_eq!(ok::<i64>(&mut con, &["XLEN", &format!("tt:{{{town}}}:docket:tasks")]), 1);
    // The full reset then takes the rest.
    assert_eq!(ok::<i64>(&mut con, &["TOWN.RESET", &town]), 2 + 1 + 1 + 1);
}
