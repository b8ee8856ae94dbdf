//! Helpers shared by the `town_*` integration tests: tinytown-shaped
//! messages, typed wrappers of the replies the tests read, and waiting for
//! a client to be blocked.

#![allow(dead_code)]

use redis::Connection;

use crate::common::wait_until;

/// A message in tinytown's serde shape (`type` flattened, fields in struct order).
pub fn message(id: &str, to: &str, priority: &str) -> String {
    format!(
        r#"{{"id":"{id}","from":"lead","to":"{to}","type":"task","description":"do {id}","priority":"{priority}","created_at":"2025-01-01T00:00:00Z","correlation_id":null}}"#
    )
}

/// `message` addressed to `to` instead, other bytes unchanged.
pub fn readdressed(message: &str, from: &str, to: &str) -> String {
    message.replace(&format!(r#""to":"{from}""#), &format!(r#""to":"{to}""#))
}

/// Run a command, panicking with the error text if it fails.
pub fn ok<T: redis::FromRedisValue>(con: &mut Connection, args: &[&str]) -> T {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    match cmd.query::<T>(con) {
        Ok(value) => value,
        Err(error) => panic!("{args:?} failed: {error}"),
    }
}

/// Run a command that must fail; its error as the server sent it
/// (`CODE detail`, e.g. `WRONGTYPE Operation against ...`).
pub fn fails(con: &mut Connection, args: &[&[u8]]) -> String {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    match cmd.query::<redis::Value>(con) {
        Ok(value) => panic!("{:?} should fail, replied {value:?}", lossy(args)),
        Err(error) => match error.code() {
            Some(code) => format!("{code} {}", error.detail().unwrap_or("")),
            None => error.to_string(),
        },
    }
}

fn lossy(args: &[&[u8]]) -> Vec<String> {
    args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}

/// `TOWN.PEEK` of everything in an agent's inbox.
pub fn inbox(con: &mut Connection, town: &str, agent: &str) -> Vec<String> {
    ok(con, &["TOWN.PEEK", town, agent, "1000000"])
}

/// The raw contents of a list key.
pub fn list(con: &mut Connection, key: &str) -> Vec<String> {
    ok(con, &["LRANGE", key, "0", "-1"])
}

/// `TOWN.LEN`: `[inbox, urgent, pending]`.
pub fn lengths(con: &mut Connection, town: &str, agent: &str) -> Vec<i64> {
    ok(con, &["TOWN.LEN", town, agent])
}

pub use crate::common::blocked_clients;

/// Wait until exactly `n` clients are blocked.
pub fn wait_blocked(con: &mut Connection, n: u64) {
    wait_until(&format!("{n} blocked client(s)"), || blocked_clients(con) == n);
}

/// A field of `INFO dreamtown`.
pub fn info_field(con: &mut Connection, field: &str) -> u64 {
    let info: String = ok(con, &["INFO", "dreamtown"]);
    let prefix = format!("dreamtown_{field}:");
    info.lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO dreamtown: {info}"))
}

/// A field/value reply as a map.
pub fn fields(pairs: Vec<String>) -> std::collections::BTreeMap<String, String> {
    let mut map = std::collections::BTreeMap::new();
    for pair in pairs.chunks(2) {
        if let [field, value] = pair {
            map.insert(field.clone(), value.clone());
        }
    }
    map
}
