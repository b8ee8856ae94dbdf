//! Every TOWN command is registered as documented: flags, arity, the town
//! as first key (so a cluster routes by town), and COMMAND DOCS with a
//! summary and argument tree; INFO has a town section.

use crate::common;
use crate::town_support;

use common::Server;
use redis::Value;

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(text) => text.clone(),
        Value::Okay => "OK".into(),
        other => format!("{other:?}"),
    }
}

#[test]
fn commands_have_their_flags_arity_and_first_key() {
    let server = Server::start();
    let mut con = server.connect();
    // (name, arity, flags, first key): a subcommand's tenant follows its
    // name; its flags are its native analogue's (docs/town.md, "OOM and
    // replicas").
    let expected: &[(&str, i64, &[&str], i64)] = &[
        ("TOWN.SEND", -3, &["write", "denyoom", "fast"], 1),
        ("TOWN.RECV", -3, &["write", "blocking"], 1),
        ("TOWN.ACK", -4, &["write"], 1),
        ("TOWN.REQUEUE", 3, &["write"], 1),
        ("TOWN.LEN", 3, &["readonly", "fast"], 1),
        ("TOWN.PEEK", 4, &["readonly"], 1),
        ("TOWN.RECLAIM", 4, &["write"], 1),
        ("TOWN.BROADCAST", 3, &["pubsub", "fast"], 1), // may-replicate is not shown by 7.0
        ("TOWN.STOP|REQUEST", -4, &["write", "denyoom", "fast"], 2),
        ("TOWN.STOP|CHECK", 4, &["readonly", "fast"], 2),
        ("TOWN.STOP|CLEAR", 4, &["write", "fast"], 2),
        ("TOWN.AGENT|SET", -6, &["write", "denyoom", "fast"], 2),
        ("TOWN.AGENT|GET", 4, &["readonly"], 2),
        ("TOWN.AGENT|DEL", 4, &["write"], 2),
        ("TOWN.AGENT|LIST", 3, &["readonly"], 2),
        ("TOWN.AGENT|BYNAME", 4, &["readonly"], 2),
        ("TOWN.AGENT|INCR", 5, &["write", "denyoom", "fast"], 2),
        ("TOWN.AGENT|HEARTBEAT", 4, &["write", "denyoom", "fast"], 2),
        ("TOWN.TASK|SET", -6, &["write", "denyoom", "fast"], 2),
        ("TOWN.TASK|GET", 4, &["readonly"], 2),
        ("TOWN.TASK|DEL", 4, &["write"], 2),
        ("TOWN.TASK|LIST", 3, &["readonly"], 2),
        ("TOWN.ACTIVITY|LOG", 5, &["write", "denyoom", "fast"], 2),
        ("TOWN.ACTIVITY|GET", 4, &["readonly", "fast"], 2),
        ("TOWN.BACKLOG|PUSH", 4, &["write", "denyoom", "fast"], 2),
        ("TOWN.BACKLOG|POP", 3, &["write", "fast"], 2),
        ("TOWN.BACKLOG|LIST", 3, &["readonly"], 2),
        ("TOWN.BACKLOG|LEN", 3, &["readonly", "fast"], 2),
        ("TOWN.BACKLOG|REMOVE", 4, &["write"], 2),
        ("TOWN.RESET", -2, &["write"], 1),
        ("TOWN.EXTEND", 5, &["write", "fast"], 1),
    ];
    for (name, arity, flags, first) in expected {
        let info: Value = redis::cmd("COMMAND").arg("INFO").arg(*name).query(&mut con).unwrap();
        let Value::Array(entries) = info else { panic!("{info:?}") };
        let Some(Value::Array(fields)) = entries.first() else { panic!("{name} not registered: {entries:?}") };
        assert_eq!(fields[1], Value::Int(*arity), "{name} arity");
        let Value::Array(actual) = &fields[2] else { panic!("{fields:?}") };
        let actual: Vec<String> = actual.iter().map(text).collect();
        let mut wanted: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        wanted.push("module".into());
        let mut sorted = actual.clone();
        sorted.sort();
        wanted.sort();
        assert_eq!(sorted, wanted, "{name} flags");
        assert_eq!(&fields[3..6], &[Value::Int(*first), Value::Int(*first), Value::Int(1)], "{name} first key");
    }
}

#[test]
fn commands_are_documented() {
    let server = Server::start();
    let mut con = server.connect();
    for name in [
        "TOWN.SEND",
        "TOWN.RECV",
        "TOWN.ACK",
        "TOWN.REQUEUE",
        "TOWN.LEN",
        "TOWN.PEEK",
        "TOWN.RECLAIM",
        "TOWN.BROADCAST",
        "TOWN.RESET",
        "TOWN.EXTEND",
        "TOWN.STOP|REQUEST",
        "TOWN.AGENT|SET",
        "TOWN.TASK|GET",
        "TOWN.ACTIVITY|LOG",
        "TOWN.BACKLOG|PUSH",
    ] {
        let docs: Value = redis::cmd("COMMAND").arg("DOCS").arg(name).query(&mut con).unwrap();
        let rendered = format!("{docs:?}");
        for part in ["summary", "complexity", "arguments", "town", "dreamtown"] {
            assert!(rendered.contains(part), "{name} docs lack {part}: {rendered}");
        }
    }
}

#[test]
fn info_has_a_town_section() {
    let server = Server::start();
    let mut con = server.connect();
    let info: String = redis::cmd("INFO").arg("dreamtown").query(&mut con).unwrap();
    assert!(info.contains("# dreamtown_town"), "{info}");
    for field in ["messages_sent", "messages_received", "messages_reclaimed", "broadcasts", "resets"] {
        assert_eq!(town_support::info_field(&mut con, field), 0, "{field}");
    }
}
