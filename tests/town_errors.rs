//! Errors change nothing: bad arguments, bad messages, keys of the wrong
//! type, ACL refusals and out-of-memory refusals are Redis-style error
//! replies, and the dataset's `DEBUG DIGEST` is the same afterwards.

use crate::common;
use crate::town_support;

use common::{tenant, Server};
use town_support::*;

/// A town with state in every kind of key the commands touch.
fn populate(con: &mut redis::Connection, town: &str) {
    ok::<()>(con, &["TOWN.AGENT", "SET", town, "a", "name", "alice", "rounds_completed", "1"]);
    ok::<i64>(con, &["TOWN.SEND", town, &message("m1", "a", "normal")]);
    ok::<i64>(con, &["TOWN.SEND", town, &message("m2", "a", "normal")]);
    ok::<i64>(con, &["TOWN.SEND", town, &message("u1", "a", "normal"), "URGENT"]);
    ok::<Vec<String>>(con, &["TOWN.RECV", town, "a", "RELIABLE"]);
    ok::<()>(con, &["TOWN.ACTIVITY", "LOG", town, "a", "busy"]);
    ok::<()>(con, &["TOWN.TASK", "SET", town, "t1", "id", "t1"]);
    ok::<i64>(con, &["TOWN.BACKLOG", "PUSH", town, "t1"]);
}

fn digest(con: &mut redis::Connection) -> String {
    ok(con, &["DEBUG", "DIGEST"])
}

/// `args` fails with an error starting with `code` and changes nothing.
fn refused(con: &mut redis::Connection, code: &str, args: &[&[u8]]) {
    let before = digest(con);
    let error = fails(con, args);
    assert!(
        error.starts_with(&format!("{code} ")),
        "{:?}: expected {code}, got {error}",
        args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>()
    );
    assert_eq!(digest(con), before, "an error changed the dataset: {error}");
}

#[test]
fn bad_arguments_are_refused_and_change_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("bad-args");
    populate(&mut con, &town);
    let t = town.as_bytes();
    let good = message("x", "a", "normal");
    let g = good.as_bytes();
    let huge = "9".repeat(40);
    let cases: Vec<Vec<&[u8]>> = vec![
        // town names
        vec![b"TOWN.SEND", b"", g],
        vec![b"TOWN.SEND", b"a{b}", g],
        vec![b"TOWN.LEN", b"x}", b"a"],
        vec![b"TOWN.LEN", &[0xff, 0xfe], b"a"],
        // messages
        vec![b"TOWN.SEND", t, b"not json"],
        vec![b"TOWN.SEND", t, b"[1,2]"],
        vec![b"TOWN.SEND", t, b"{}"],
        vec![b"TOWN.SEND", t, br#"{"to":7}"#],
        vec![b"TOWN.SEND", t, br#"{"to":""}"#],
        vec![b"TOWN.SEND", t, br#"{"to":"a","to":"b"}"#],
        vec![b"TOWN.SEND", t, br#"{"to":"a","priority":"asap"}"#],
        vec![b"TOWN.SEND", t, br#"{"to":"a","priority":3}"#],
        vec![b"TOWN.SEND", t, b"{\"to\":\"a\"}\0"],
        vec![b"TOWN.SEND", t, &[b'{', 0xc3, 0x28, b'}']],
        vec![b"TOWN.SEND", t, g, b"LOUD"],
        vec![b"TOWN.SEND", t, g, b"URGENT", b"URGENT"],
        vec![b"TOWN.BROADCAST", t, b"nope"],
        vec![b"TOWN.BROADCAST", t, g, b"extra"],
        // receive options
        vec![b"TOWN.RECV", t, b""],
        vec![b"TOWN.RECV", t, b"a", b"COUNT", b"0"],
        vec![b"TOWN.RECV", t, b"a", b"COUNT", b"-1"],
        vec![b"TOWN.RECV", t, b"a", b"COUNT", huge.as_bytes()],
        vec![b"TOWN.RECV", t, b"a", b"COUNT"],
        vec![b"TOWN.RECV", t, b"a", b"COUNT", b"1", b"COUNT", b"2"],
        vec![b"TOWN.RECV", t, b"a", b"BLOCK", b"-1"],
        vec![b"TOWN.RECV", t, b"a", b"BLOCK", b"soon"],
        vec![b"TOWN.RECV", t, b"a", b"BLOCK", b"nan"],
        vec![b"TOWN.RECV", t, b"a", b"RELIABLE", b"RELIABLE"],
        vec![b"TOWN.RECV", t, b"a", b"FAST"],
        vec![b"TOWN.RECV", t, &[0xff]],
        // ack, requeue, len, peek, reclaim
        vec![b"TOWN.ACK", t, b"a"],
        vec![b"TOWN.ACK", t, b"", b"m1"],
        vec![b"TOWN.REQUEUE", t, b"a", b"more"],
        vec![b"TOWN.LEN", t, b"a", b"b"],
        vec![b"TOWN.PEEK", t, b"a", b"-1"],
        vec![b"TOWN.PEEK", t, b"a", b"ten"],
        vec![b"TOWN.PEEK", t, b"a", huge.as_bytes()],
        vec![b"TOWN.RECLAIM", t, b"a", b"a"],
        vec![b"TOWN.RECLAIM", t, b"a", b""],
        // stop
        vec![b"TOWN.STOP", t, b"HALT", b"a"],
        vec![b"TOWN.STOP", b"REQUEST", t, b"a", b"TTL", b"0"],
        vec![b"TOWN.STOP", b"REQUEST", t, b"a", b"TTL", b"-5"],
        vec![b"TOWN.STOP", b"REQUEST", t, b"a", b"TTL", b"x"],
        vec![b"TOWN.STOP", b"REQUEST", t, b"a", b"TTL", huge.as_bytes()],
        vec![b"TOWN.STOP", b"REQUEST", t, b"a", b"TTL", b"5", b"TTL", b"6"],
        vec![b"TOWN.STOP", b"CHECK", t, b"a", b"b"],
        // agent and task
        vec![b"TOWN.AGENT", t, b"DANCE"],
        vec![b"TOWN.AGENT", b"SET", t, b"a"],
        vec![b"TOWN.AGENT", b"SET", t, b"a", b"name"],
        vec![b"TOWN.AGENT", b"SET", t, b"a", b"name", b"x", b"state"],
        vec![b"TOWN.AGENT", b"SET", t, b"", b"name", b"x"],
        vec![b"TOWN.AGENT", b"GET", t],
        vec![b"TOWN.AGENT", b"LIST", t, b"extra"],
        vec![b"TOWN.AGENT", b"INCR", t, b"a", b"LAPS"],
        vec![b"TOWN.AGENT", b"INCR", t, b"ghost", b"ROUNDS"],
        vec![b"TOWN.AGENT", b"HEARTBEAT", t, b"ghost"],
        vec![b"TOWN.TASK", b"SET", t, b"t2"],
        vec![b"TOWN.TASK", b"SET", t, b"t2", b"a", b"1", b"b"],
        vec![b"TOWN.TASK", t, b"PURGE"],
        // activity, backlog, reset
        vec![b"TOWN.ACTIVITY", b"LOG", t, b"a"],
        vec![b"TOWN.ACTIVITY", t, b"READ", b"a"],
        vec![b"TOWN.ACTIVITY", b"GET", t, b"a", b"5"],
        vec![b"TOWN.BACKLOG", b"PUSH", t],
        vec![b"TOWN.BACKLOG", b"PUSH", t, b""],
        vec![b"TOWN.BACKLOG", b"POP", t, b"2"],
        vec![b"TOWN.BACKLOG", t, b"SHIFT"],
        vec![b"TOWN.RESET", t, b"EVERYTHING"],
        vec![b"TOWN.RESET", t, b"AGENTS", b"AGENTS"],
    ];
    for case in &cases {
        refused(&mut con, "ERR", case);
    }
    // Arity errors come from Redis itself.
    for case in [
        vec![&b"TOWN.SEND"[..], t],
        vec![b"TOWN.ACK", t],
        vec![b"TOWN.PEEK", t, b"a"],
        vec![b"TOWN.RESET"],
        vec![b"TOWN.STOP", b"CHECK", t],
    ] {
        refused(&mut con, "ERR", &case);
    }
    assert!(server.alive());
}

#[test]
fn keys_of_the_wrong_type_are_refused_before_anything_is_written() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("wrongtype");
    populate(&mut con, &town);
    let t = town.as_bytes();
    let key = |kind: &str, id: &str| format!("tt:{{{town}}}:{kind}:{id}");
    let good = message("x", "b", "normal");
    let to_a = message("y", "a", "normal");

    // b's inbox is a string: sends and receives refuse it.
    ok::<()>(&mut con, &["SET", &key("inbox", "b"), "oops"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.SEND", t, good.as_bytes()]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.SEND", t, good.as_bytes(), b"URGENT"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.RECV", t, b"b"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.PEEK", t, b"b", b"1"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.LEN", t, b"b"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.REQUEUE", t, b"b"]);
    // a -> b: a's mail must stay where it is.
    refused(&mut con, "WRONGTYPE", &[b"TOWN.RECLAIM", t, b"a", b"b"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.RECLAIM", t, b"b", b"a"]);

    // a's pending list is a hash: a reliable receive takes nothing.
    ok::<()>(&mut con, &["RENAME", &key("pending", "a"), &key("saved", "a")]);
    ok::<()>(&mut con, &["HSET", &key("pending", "a"), "f", "v"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.RECV", t, b"a", b"RELIABLE"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.ACK", t, b"a", b"u1"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.RECLAIM", t, b"a", b"c"]);
    assert_eq!(ok::<i64>(&mut con, &["LLEN", &key("inbox", "a")]), 2);
    ok::<()>(&mut con, &["DEL", &key("pending", "a")]);

    // The mailbox index is a string: a send stores nothing.
    let index = key("index", "mailboxes");
    ok::<()>(&mut con, &["RENAME", &index, &key("saved", "mailboxes")]);
    ok::<()>(&mut con, &["SET", &index, "oops"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.SEND", t, to_a.as_bytes()]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.RECV", t, b"a", b"RELIABLE"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.STOP", b"REQUEST", t, b"a"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.ACTIVITY", b"LOG", t, b"a", b"x"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.AGENT", b"SET", t, b"z", b"name", b"zed"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.AGENT", b"DEL", t, b"a"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.RESET", t]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.RESET", t, b"AGENTS"]);
    ok::<()>(&mut con, &["DEL", &index]);
    ok::<()>(&mut con, &["RENAME", &key("saved", "mailboxes"), &index]);

    // The agent and task indexes.
    let agents = key("index", "agents");
    ok::<()>(&mut con, &["RENAME", &agents, &key("saved", "agents")]);
    ok::<i64>(&mut con, &["RPUSH", &agents, "x"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.AGENT", b"SET", t, b"z", b"name", b"zed"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.AGENT", b"LIST", t]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.AGENT", b"BYNAME", t, b"alice"]);
    ok::<()>(&mut con, &["DEL", &agents]);
    ok::<()>(&mut con, &["RENAME", &key("saved", "agents"), &agents]);
    let tasks = key("index", "tasks");
    ok::<()>(&mut con, &["SET", &tasks, "oops"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.TASK", b"SET", t, b"t9", b"id", b"t9"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.TASK", b"LIST", t]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.TASK", b"DEL", t, b"t1"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.RESET", t]);
    ok::<()>(&mut con, &["DEL", &tasks]);

    // Records, logs, flags and the backlog.
    ok::<i64>(&mut con, &["RPUSH", &key("agent", "r"), "x"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.AGENT", b"SET", t, b"r", b"name", b"r"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.AGENT", b"GET", t, b"r"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.AGENT", b"INCR", t, b"r", b"ROUNDS"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.AGENT", b"HEARTBEAT", t, b"r"]);
    ok::<()>(&mut con, &["SET", &key("task", "s"), "x"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.TASK", b"SET", t, b"s", b"id", b"s"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.TASK", b"GET", t, b"s"]);
    ok::<()>(&mut con, &["SET", &key("activity", "a"), "x"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.ACTIVITY", b"LOG", t, b"a", b"x"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.ACTIVITY", b"GET", t, b"a"]);
    ok::<i64>(&mut con, &["RPUSH", &key("stop", "a"), "x"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.STOP", b"REQUEST", t, b"a"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.STOP", b"CHECK", t, b"a"]);
    refused(&mut con, "WRONGTYPE", &[b"TOWN.STOP", b"CLEAR", t, b"a"]);
    let backlog = format!("tt:{{{town}}}:backlog");
    ok::<()>(&mut con, &["DEL", &backlog]);
    ok::<()>(&mut con, &["HSET", &backlog, "f", "v"]);
    for sub in [&[&b"PUSH"[..], b"t1"][..], &[b"POP"], &[b"LIST"], &[b"LEN"], &[b"REMOVE", b"t1"]] {
        let (word, rest) = sub.split_first().expect("a subcommand");
        let mut args: Vec<&[u8]> = vec![b"TOWN.BACKLOG", word, t];
        args.extend_from_slice(rest);
        refused(&mut con, "WRONGTYPE", &args);
    }
    assert!(server.alive());
}

#[test]
fn acl_limits_a_user_to_its_own_town() {
    let server = Server::start();
    let mut admin = server.connect();
    let town = tenant("acl");
    let other = tenant("acl-other");
    populate(&mut admin, &other);
    ok::<()>(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "worker",
            "on",
            ">secret",
            "resetkeys",
            &format!("~tt:{{{town}}}:*"),
            "resetchannels",
            &format!("&tt:{{{town}}}:*"),
            "+@all",
        ],
    );
    let mut con = server.connect_as("worker", "secret");
    // All of its own town's work is allowed...
    populate(&mut con, &town);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.BROADCAST", &town, r#"{"hi":1}"#]), 0);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.RECLAIM", &town, "a", "b"]), 3);
    assert_eq!(ok::<Vec<Vec<String>>>(&mut con, &["TOWN.AGENT", "LIST", &town]).len(), 1);
    assert!(ok::<i64>(&mut con, &["TOWN.RESET", &town]) > 0);
    // ...and nothing of another town's.
    let o = other.as_bytes();
    let to_a = message("m", "a", "normal");
    for case in [
        vec![&b"TOWN.SEND"[..], o, to_a.as_bytes()],
        vec![b"TOWN.RECV", o, b"a"],
        vec![b"TOWN.LEN", o, b"a"],
        vec![b"TOWN.PEEK", o, b"a", b"5"],
        vec![b"TOWN.ACK", o, b"a", b"m1"],
        vec![b"TOWN.REQUEUE", o, b"a"],
        vec![b"TOWN.RECLAIM", o, b"a", b"b"],
        vec![b"TOWN.BROADCAST", o, b"{}"],
        vec![b"TOWN.STOP", b"REQUEST", o, b"a"],
        vec![b"TOWN.AGENT", b"SET", o, b"a", b"name", b"x"],
        vec![b"TOWN.AGENT", b"LIST", o],
        vec![b"TOWN.AGENT", b"DEL", o, b"a"],
        vec![b"TOWN.TASK", b"LIST", o],
        vec![b"TOWN.ACTIVITY", b"LOG", o, b"a", b"x"],
        vec![b"TOWN.BACKLOG", b"POP", o],
        vec![b"TOWN.RESET", o],
    ] {
        refused(&mut con, "NOPERM", &case);
    }
    // A user who may read the town but not write it gets NOPERM on writes.
    ok::<()>(
        &mut admin,
        &["ACL", "SETUSER", "reader", "on", ">secret", "resetkeys", &format!("%R~tt:{{{other}}}:*"), "+@all"],
    );
    let mut reader = server.connect_as("reader", "secret");
    assert_eq!(lengths(&mut reader, &other, "a"), vec![2, 0, 1]);
    refused(&mut reader, "NOPERM", &[b"TOWN.RECV", o, b"a"]);
    refused(&mut reader, "NOPERM", &[b"TOWN.AGENT", b"SET", o, b"a", b"name", b"x"]);
}

#[test]
fn out_of_memory_refuses_additions_but_not_reads_or_deletes() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("oom");
    populate(&mut con, &town);
    ok::<()>(&mut con, &["CONFIG", "SET", "maxmemory", "1"]);
    let t = town.as_bytes();
    let to_a = message("m", "a", "normal");
    for case in [
        vec![&b"TOWN.SEND"[..], t, to_a.as_bytes()],
        vec![b"TOWN.AGENT", b"SET", t, b"a", b"name", b"x"],
        vec![b"TOWN.AGENT", b"INCR", t, b"a", b"ROUNDS"],
        vec![b"TOWN.AGENT", b"HEARTBEAT", t, b"a"],
        vec![b"TOWN.TASK", b"SET", t, b"t2", b"id", b"t2"],
        vec![b"TOWN.ACTIVITY", b"LOG", t, b"a", b"x"],
        vec![b"TOWN.STOP", b"REQUEST", t, b"a"],
        vec![b"TOWN.BACKLOG", b"PUSH", t, b"t2"],
    ] {
        refused(&mut con, "OOM", &case);
    }
    assert_eq!(fields(ok(&mut con, &["TOWN.AGENT", "GET", &town, "a"]))["name"], "alice");
    assert_eq!(ok::<Option<String>>(&mut con, &["TOWN.BACKLOG", "POP", &town]), Some("t1".into()));
    assert_eq!(ok::<Vec<String>>(&mut con, &["TOWN.RECV", &town, "a"]).len(), 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.AGENT", "DEL", &town, "a"]), 4);
    ok::<()>(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, "a", "name", "x"]);
}
