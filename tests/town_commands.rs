//! Every TOWN command is registered as documented: flags, arity, the town
//! as first key (so a cluster routes by town), and COMMAND DOCS with a
//! summary and argument tree; INFO has a town section.

mod common;
mod town_support;

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
    let expected: &[(&str, i64, &[&str])] = &[
        ("TOWN.SEND", -3, &["write", "denyoom", "fast"]),
        ("TOWN.RECV", -3, &["write", "blocking"]),
        ("TOWN.ACK", -4, &["write"]),
        ("TOWN.REQUEUE", 3, &["write"]),
        ("TOWN.LEN", 3, &["readonly", "fast"]),
        ("TOWN.PEEK", 4, &["readonly"]),
        ("TOWN.RECLAIM", 4, &["write"]),
        ("TOWN.BROADCAST", 3, &["pubsub", "fast"]), // may-replicate is not shown by 7.0
        ("TOWN.STOP", -4, &["write", "fast"]),
        ("TOWN.AGENT", -3, &["write"]),
        ("TOWN.TASK", -3, &["write"]),
        ("TOWN.ACTIVITY", -4, &["write", "fast"]),
        ("TOWN.BACKLOG", -3, &["write"]),
        ("TOWN.RESET", -2, &["write"]),
        ("TOWN.EXTEND", 5, &["write", "fast"]),
    ];
    for (name, arity, flags) in expected {
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
        assert_eq!(&fields[3..6], &[Value::Int(1), Value::Int(1), Value::Int(1)], "{name} first key");
    }
}

#[test]
fn commands_are_documented() {
    let server = Server::start();
    let mut con = server.connect();
    for name in [
        "TOWN.SEND", "TOWN.RECV", "TOWN.ACK", "TOWN.REQUEUE", "TOWN.LEN", "TOWN.PEEK", "TOWN.RECLAIM",
        "TOWN.BROADCAST", "TOWN.STOP", "TOWN.AGENT", "TOWN.TASK", "TOWN.ACTIVITY", "TOWN.BACKLOG", "TOWN.RESET",
        "TOWN.EXTEND",
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
