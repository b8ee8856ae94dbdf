//! Helpers the `tests/dreams_*.rs` files share: typed wrappers around the
//! DREAMS.* commands as a Redis user sees them, the key names of an
//! organization, server-side facts (clock, INFO, digest), and a mirror of
//! the seed's `FireMessage` serde types, used to hold payloads byte for
//! byte to the seed's format.
//!
//! Integration tests must not link the module crate, so everything here
//! talks to the server.

#![allow(dead_code)]

use std::collections::HashMap;

use redis::{Connection, Value};
use serde::{Deserialize, Serialize};

/// A trigger so large in time that no region ever reaches it in a test run.
pub const NEVER_SECS: u64 = 3_153_600_000;

/// The error a command replied, as `CODE detail` (e.g. `ERR ...`, `NOPERM ...`).
pub fn error_text(error: &redis::RedisError) -> String {
    match (error.code(), error.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_owned(),
        _ => error.to_string(),
    }
}

/// A command from byte arguments.
pub fn command(args: &[&[u8]]) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
}

/// Run `args`; the raw reply or the error as `CODE detail`.
pub fn call(con: &mut Connection, args: &[&str]) -> Result<Value, String> {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    call_bytes(con, &bytes)
}

/// Run byte arguments; the raw reply or the error as `CODE detail`.
pub fn call_bytes(con: &mut Connection, args: &[&[u8]]) -> Result<Value, String> {
    command(args).query::<Value>(con).map_err(|e| error_text(&e))
}

/// Run `args`, which must fail; the error as `CODE detail`.
pub fn error_of(con: &mut Connection, args: &[&str]) -> String {
    match call(con, args) {
        Ok(value) => panic!("{args:?} should have failed, replied {value:?}"),
        Err(error) => error,
    }
}

/// Run `args`, which must succeed.
pub fn ok(con: &mut Connection, args: &[&str]) -> Value {
    call(con, args).unwrap_or_else(|e| panic!("{args:?} failed: {e}"))
}

/// A reply as text (status or bulk).
pub fn text(value: &Value) -> String {
    match value {
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        other => panic!("not text: {other:?}"),
    }
}

/// A reply as an integer.
pub fn int(value: &Value) -> i64 {
    match value {
        Value::Int(n) => *n,
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).parse().expect("integer text"),
        other => panic!("not an integer: {other:?}"),
    }
}

/// `[word, memories, edges]` replies of RECORD and ACK.
pub fn counted(value: &Value) -> (String, i64, i64) {
    match value {
        Value::Array(items) if items.len() == 3 => (text(&items[0]), int(&items[1]), int(&items[2])),
        other => panic!("not [outcome, memories, edges]: {other:?}"),
    }
}

/// The keys of one organization.
#[derive(Clone, Debug)]
pub struct Keys {
    pub org: String,
    pub ready: String,
    pub deferred: String,
    pub processing: String,
    pub dead: String,
}

impl Keys {
    pub fn new(org: &str) -> Self {
        let base = format!("exocortex:dreams:{{{org}}}");
        Self {
            org: org.to_owned(),
            ready: format!("{base}:queue"),
            deferred: format!("{base}:deferred"),
            processing: format!("{base}:processing"),
            dead: format!("{base}:dead"),
        }
    }

    /// A region's counters hash.
    pub fn counters(&self, project: &str, memory_type: u32) -> String {
        format!("exocortex:dreams:{{{}}}:counters:{memory_type}:{project}", self.org)
    }

    /// A region's counted-event set.
    pub fn events(&self, project: &str, memory_type: u32) -> String {
        format!("exocortex:dreams:{{{}}}:events:{memory_type}:{project}", self.org)
    }
}

/// One organization's queue, driven over one connection.
pub struct Dreams<'c> {
    pub con: &'c mut Connection,
    pub org: String,
    pub keys: Keys,
}

impl<'c> Dreams<'c> {
    pub fn new(con: &'c mut Connection, org: &str) -> Self {
        Self { con, org: org.to_owned(), keys: Keys::new(org) }
    }

    /// `DREAMS.FIRE org project type extra...` → `queued`/`dropped`.
    pub fn fire(&mut self, project: &str, memory_type: u32, extra: &[&str]) -> String {
        let mt = memory_type.to_string();
        let mut args = vec!["DREAMS.FIRE", &self.org, project, &mt];
        args.extend_from_slice(extra);
        text(&ok(self.con, &args))
    }

    /// `DREAMS.RECORD org project type memories edges extra...`.
    pub fn record(
        &mut self,
        project: &str,
        memory_type: u32,
        memories: u64,
        edges: u64,
        extra: &[&str],
    ) -> (String, i64, i64) {
        let (mt, m, e) = (memory_type.to_string(), memories.to_string(), edges.to_string());
        let mut args = vec!["DREAMS.RECORD", &self.org, project, &mt, &m, &e];
        args.extend_from_slice(extra);
        counted(&ok(self.con, &args))
    }

    /// `DREAMS.SETTLE org project type event generation extra...`.
    pub fn settle(&mut self, project: &str, memory_type: u32, event: &str, generation: u64, extra: &[&str]) {
        let (mt, g) = (memory_type.to_string(), generation.to_string());
        let mut args = vec!["DREAMS.SETTLE", &self.org, project, &mt, event, &g];
        args.extend_from_slice(extra);
        assert_eq!(text(&ok(self.con, &args)), "OK");
    }

    /// `DREAMS.DRAIN org timeout extra...` → the payload or nil.
    pub fn drain(&mut self, timeout: &str, extra: &[&str]) -> Option<Vec<u8>> {
        let mut args = vec!["DREAMS.DRAIN", &self.org, timeout];
        args.extend_from_slice(extra);
        match ok(self.con, &args) {
            Value::Nil => None,
            Value::BulkString(bytes) => Some(bytes),
            other => panic!("DRAIN replied {other:?}"),
        }
    }

    /// Drain without quiet hours, and without blocking for long.
    pub fn take(&mut self) -> Option<Vec<u8>> {
        self.drain("0.01", &["NOQUIET"])
    }

    /// Drain, which must give a payload.
    pub fn take_one(&mut self) -> Vec<u8> {
        self.take().expect("a payload to drain")
    }

    /// `DREAMS.ACK org payload SUCCESS|FAILURE extra...`.
    pub fn ack(&mut self, payload: &[u8], result: &str, extra: &[&str]) -> (String, i64, i64) {
        let mut args: Vec<&[u8]> = vec![b"DREAMS.ACK", self.org.as_bytes(), payload, result.as_bytes()];
        args.extend(extra.iter().map(|a| a.as_bytes()));
        counted(&call_bytes(self.con, &args).unwrap_or_else(|e| panic!("ACK failed: {e}")))
    }

    /// `DREAMS.RECOVER org`.
    pub fn recover(&mut self) -> i64 {
        int(&ok(self.con, &["DREAMS.RECOVER", &self.org]))
    }

    /// `DREAMS.LEN org` → (ready, deferred, processing).
    pub fn len(&mut self) -> (i64, i64, i64) {
        match ok(self.con, &["DREAMS.LEN", &self.org]) {
            Value::Array(items) if items.len() == 3 => (int(&items[0]), int(&items[1]), int(&items[2])),
            other => panic!("LEN replied {other:?}"),
        }
    }

    /// `DREAMS.COUNTERS org project type` as a map.
    pub fn counters(&mut self, project: &str, memory_type: u32) -> HashMap<String, String> {
        let mt = memory_type.to_string();
        pairs(&ok(self.con, &["DREAMS.COUNTERS", &self.org, project, &mt]))
    }

    /// One counter field as an integer, if present.
    pub fn counter(&mut self, project: &str, memory_type: u32, field: &str) -> Option<i64> {
        self.counters(project, memory_type).get(field).map(|v| v.parse().expect("numeric counter"))
    }

    /// The ready list, head first.
    pub fn ready(&mut self) -> Vec<Vec<u8>> {
        lrange(self.con, &self.keys.ready.clone())
    }

    /// The in-flight list, head first.
    pub fn processing(&mut self) -> Vec<Vec<u8>> {
        lrange(self.con, &self.keys.processing.clone())
    }

    /// The dead-letter list, head first.
    pub fn dead(&mut self) -> Vec<Vec<u8>> {
        lrange(self.con, &self.keys.dead.clone())
    }
}

/// A flat field/value array (or RESP3 map) as a map.
pub fn pairs(value: &Value) -> HashMap<String, String> {
    match value {
        Value::Array(items) => items.chunks(2).map(|pair| (text(&pair[0]), text(&pair[1]))).collect(),
        Value::Map(items) => items.iter().map(|(k, v)| (text(k), text(v))).collect(),
        other => panic!("not field/value pairs: {other:?}"),
    }
}

/// `LRANGE key 0 -1`.
pub fn lrange(con: &mut Connection, key: &str) -> Vec<Vec<u8>> {
    redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query(con).expect("LRANGE")
}

/// The server clock, unix seconds.
pub fn server_time(con: &mut Connection) -> i64 {
    let (secs, _micros): (i64, i64) = redis::cmd("TIME").query(con).expect("TIME");
    secs
}

/// The server's current UTC hour.
pub fn server_hour(con: &mut Connection) -> i64 {
    server_time(con).rem_euclid(86_400) / 3_600
}

/// A quiet window `HH-HH` starting `from` hours after the current UTC hour
/// and `hours` long (a window that starts now covers the whole test even
/// across an hour boundary when it is 2 hours long).
pub fn window(con: &mut Connection, from: i64, hours: i64) -> String {
    let start = (server_hour(con) + from).rem_euclid(24);
    format!("{:02}-{:02}", start, (start + hours).rem_euclid(24))
}

/// `DEBUG DIGEST` of the whole dataset.
pub fn digest(con: &mut Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(con).expect("DEBUG DIGEST")
}

/// `INFO dreamtown` fields (without the `dreamtown_` prefix).
pub fn info(con: &mut Connection) -> HashMap<String, u64> {
    let text: String = redis::cmd("INFO").arg("dreamtown").query(con).expect("INFO dreamtown");
    text.lines()
        .filter_map(|line| line.trim().split_once(':'))
        .filter_map(|(name, value)| Some((name.strip_prefix("dreamtown_")?.to_owned(), value.parse().ok()?)))
        .collect()
}

/// `CONFIG SET dreamtown.<name> <value>`, which must succeed.
pub fn set_config(con: &mut Connection, name: &str, value: &str) {
    let key = format!("dreamtown.{name}");
    let reply = call(con, &["CONFIG", "SET", &key, value]);
    assert!(reply.is_ok(), "CONFIG SET {key} {value}: {reply:?}");
}

/// `TRIGGER` arguments.
pub fn trigger(memories: u64, edges: u64, min_interval: u64, age_floor: u64) -> Vec<String> {
    vec!["TRIGGER".into(), memories.to_string(), edges.to_string(), min_interval.to_string(), age_floor.to_string()]
}

/// Borrow a `Vec<String>` as `&str`s.
pub fn strs(items: &[String]) -> Vec<&str> {
    items.iter().map(String::as_str).collect()
}

// ---- the seed's wire format ----

/// The seed's `RegionKey` (exocortex-storage), in its serialized field order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRegion {
    pub org: String,
    pub project: String,
    pub memory_type: u32,
}

/// The seed's `RegionWriteCounters`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedCounters {
    pub memories_since_last_cycle: u32,
    pub edges_since_last_cycle: u32,
    pub seconds_since_last_cycle: u64,
}

/// The seed's `FireMessage`, with its serde attributes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedFireMessage {
    pub region: SeedRegion,
    pub fired_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fired_at: Option<SeedCounters>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fire_id: Option<String>,
    #[serde(skip)]
    pub queued_payload: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quiet_deferred: bool,
}

impl SeedFireMessage {
    /// Parse a payload as the seed's drain does.
    pub fn parse(payload: &[u8]) -> Self {
        serde_json::from_slice(payload)
            .unwrap_or_else(|e| panic!("not a seed FireMessage ({e}): {}", String::from_utf8_lossy(payload)))
    }

    /// Serialize as the seed's serde does.
    pub fn to_payload(&self) -> String {
        serde_json::to_string(self).expect("FireMessage serializes")
    }
}

/// Is `id` a UUID v4 in its hyphenated lower-case form?
pub fn is_uuid_v4(id: &str) -> bool {
    let parts: Vec<&str> = id.split('-').collect();
    parts.len() == 5
        && [8, 4, 4, 4, 12].iter().zip(&parts).all(|(len, part)| part.len() == *len)
        && id.chars().all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
        && parts[2].starts_with('4')
        && matches!(parts[3].chars().next(), Some('8' | '9' | 'a' | 'b'))
}
