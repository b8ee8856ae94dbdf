//! Upgrade and downgrade: data written by the previous release's module is
//! served by this one, and data written by this one by the previous, on the
//! same RDB file and across a replica-first rolling upgrade.
//!
//! The previous release is built from this repository's history by
//! `scripts/build-previous.sh` (packaging/previous-release names it; the
//! build is cached in target/previous/), or given as
//! `DREAMTOWN_PREVIOUS_MODULE`. What each side writes covers the layout:
//! ready, in-flight, leased, deferred and dead-lettered fires, counters;
//! pending (leased), urgent and plain messages, agents, tasks, a backlog,
//! and the per-tenant statistics derived from keys. (Per-tenant totals are
//! kept in memory by every version and start over at any restart.)
//!
//! Commands whose syntax changed between releases are written once per
//! syntax, chosen by what the server's `COMMAND INFO` says (native
//! subcommands put the subcommand before the town).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{cmd, tenant, wait_until, Server};
use redis::{Connection, Value};

/// The previous release's module, built once per test run (the tests of
/// this file run in parallel threads).
fn previous_module() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_previous).clone()
}

fn build_previous() -> PathBuf {
    if let Ok(path) = std::env::var("DREAMTOWN_PREVIOUS_MODULE") {
        return PathBuf::from(path);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(root.join("scripts/build-previous.sh")).output().expect("run scripts/build-previous.sh");
    assert!(output.status.success(), "scripts/build-previous.sh failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let path = String::from_utf8_lossy(&output.stdout).lines().last().unwrap_or_default().trim().to_owned();
    PathBuf::from(path)
}

fn current_module() -> PathBuf {
    common::module_path()
}

/// A server with `module` loaded, in `dir` when given (to serve another
/// server's saved data).
fn start(module: &Path, dir: Option<&PathBuf>, extra: &[&str]) -> Server {
    let module = module.display().to_string();
    let dir = dir.map(|dir| dir.display().to_string());
    let mut args: Vec<&str> = Vec::new();
    if let Some(dir) = dir.as_deref() {
        args.extend(["--dir", dir]);
    }
    args.extend(["--loadmodule", module.as_str()]);
    args.extend(extra);
    Server::start_without_module(&args)
}

/// Save, and stop the server (its directory is kept for the next one).
fn save_and_stop(server: Server) -> PathBuf {
    let mut con = server.connect();
    let _: () = redis::cmd("SAVE").query(&mut con).expect("SAVE");
    let dir = std::env::temp_dir().join(format!("dreamtown-upgrade-{}-{}", std::process::id(), server.port));
    std::fs::create_dir_all(&dir).expect("a directory for the saved data");
    std::fs::copy(server.dir.join("dump.rdb"), dir.join("dump.rdb")).expect("copy dump.rdb");
    drop(server);
    dir
}

fn ok(con: &mut Connection, args: &[&str]) -> Value {
    cmd(args).query(con).unwrap_or_else(|error| panic!("{args:?}: {error}"))
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(text) => text.clone(),
        Value::Int(n) => n.to_string(),
        // A one-message reply of TOWN.RECV ... URGENT.
        Value::Array(items) if items.len() == 1 => items.first().map(text).unwrap_or_default(),
        other => format!("{other:?}"),
    }
}

fn ints(value: &Value) -> Vec<i64> {
    match value {
        Value::Array(items) => items.iter().map(|item| if let Value::Int(n) = item { *n } else { -1 }).collect(),
        other => panic!("expected an array of integers, got {other:?}"),
    }
}

/// A flat field/value array (or a map) as field -> value.
fn fields(value: &Value) -> std::collections::HashMap<String, String> {
    match value {
        Value::Array(items) => {
            items.chunks(2).filter_map(|pair| Some((text(pair.first()?), text(pair.get(1)?)))).collect()
        }
        Value::Map(pairs) => pairs.iter().map(|(field, value)| (text(field), text(value))).collect(),
        other => panic!("expected fields, got {other:?}"),
    }
}

/// Does this server register TOWN.AGENT's subcommands natively (the
/// subcommand before the town)?
fn native_subcommands(con: &mut Connection) -> bool {
    let info: Value = cmd(&["COMMAND", "INFO", "TOWN.AGENT"]).query(con).expect("COMMAND INFO");
    let Value::Array(commands) = info else { return false };
    let Some(Value::Array(fields)) = commands.first() else { return false };
    matches!(fields.get(9), Some(Value::Array(subcommands)) if !subcommands.is_empty())
}

/// A town subcommand in the syntax this server speaks.
fn town_sub(con: &mut Connection, command: &str, town: &str, sub: &str, rest: &[&str]) -> Value {
    let mut args = vec![command];
    if native_subcommands(con) {
        args.extend([sub, town]);
    } else {
        args.extend([town, sub]);
    }
    args.extend(rest);
    ok(con, &args)
}

fn message(id: &str, to: &str, description: &str, priority: &str) -> String {
    format!(
        r#"{{"id":"{id}","from":"lead","to":"{to}","type":"task","description":"{description}","priority":"{priority}","created_at":"2026-12-06T00:00:00Z","correlation_id":null}}"#
    )
}

fn uuid(n: u32) -> String {
    format!("00000000-0000-4000-8000-{n:012}")
}

/// What one side writes: names of the tenants and what to expect of them.
struct Written {
    org: String,
    town: String,
}

/// Write every kind of state the key layout holds.
fn write_everything(con: &mut Connection, label: &str) -> Written {
    let org = tenant(&format!("org-{label}"));
    let town = tenant(&format!("town-{label}"));
    // Dreams: four fires; one drained under a 2 s lease (it must come back
    // by itself), one drained and left in flight without a lease, two ready.
    for memory_type in 1..=4 {
        assert_eq!(text(&ok(con, &["DREAMS.FIRE", &org, "notes", &memory_type.to_string()])), "queued");
    }
    ok(con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "LEASE", "2"]);
    ok(con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]);
    // Counters that have not fired yet.
    ok(con, &["DREAMS.RECORD", &org, "notes", "9", "3", "1"]);
    // Garbage in ready that a drain dead-letters (the drain then hands out
    // the next fire), and, last (a drain promotes due deferrals), a
    // quiet-hours deferral as the seed writes it, scored by the second it
    // was deferred.
    let ready_key = format!("exocortex:dreams:{{{org}}}:queue");
    ok(con, &["LPUSH", &ready_key, "not a fire message"]);
    ok(con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]);
    let deferred_key = format!("exocortex:dreams:{{{org}}}:deferred");
    let deferred = format!(
        r#"{{"region":{{"org":"{org}","project":"notes","memory_type":5}},"fired_by":"seed","fire_id":"{}"}}"#,
        uuid(5)
    );
    ok(con, &["ZADD", &deferred_key, "1", &deferred]);
    // Town: a pending message under a 2 s lease, an urgent and a plain one
    // waiting, an agent, a task, a backlog.
    ok(con, &["TOWN.SEND", &town, &message(&uuid(1), "w1", "leased", "normal")]);
    ok(con, &["TOWN.RECV", &town, "w1", "RELIABLE", "LEASE", "2"]);
    ok(con, &["TOWN.SEND", &town, &message(&uuid(2), "w1", "plain", "normal")]);
    ok(con, &["TOWN.SEND", &town, &message(&uuid(3), "w1", "urgent", "urgent"), "URGENT"]);
    town_sub(con, "TOWN.AGENT", &town, "SET", &["w1", "id", "w1", "name", "builder", "state", "working"]);
    town_sub(con, "TOWN.TASK", &town, "SET", &["t1", "id", "t1", "description", "build it", "state", "pending"]);
    town_sub(con, "TOWN.BACKLOG", &town, "PUSH", &["t1"]);
    Written { org, town }
}

/// Everything written is served, the leases expire, and the tenants keep
/// working.
fn serves_everything(con: &mut Connection, written: &Written) {
    let (org, town) = (written.org.as_str(), written.town.as_str());
    // [ready, deferred, in flight]: one of the four fires left ready after
    // three drains, the seed's deferral, three in flight, of which the
    // leased one may already be back in ready: the data on disk was saved
    // before its lease ran out, so only the server now serving it can have
    // expired it.
    let lengths = ints(&ok(con, &["DREAMS.LEN", org]));
    assert!(lengths == vec![1, 1, 3] || lengths == vec![2, 1, 2], "DREAMS.LEN {org}: {lengths:?}");
    let counters = fields(&ok(con, &["DREAMS.COUNTERS", org, "notes", "9"]));
    assert_eq!(counters.get("memories").map(String::as_str), Some("3"), "DREAMS.COUNTERS {org}: {counters:?}");
    assert_eq!(counters.get("edges").map(String::as_str), Some("1"), "DREAMS.COUNTERS {org}: {counters:?}");
    let dead: Value = ok(con, &["LRANGE", &format!("exocortex:dreams:{{{org}}}:dead"), "0", "-1"]);
    assert_eq!(dead, Value::Array(vec![Value::BulkString(b"not a fire message".to_vec())]));
    // The 2 s lease runs out: the fire is back in ready, by itself.
    wait_until("the Dreams lease expires after the switch", || {
        ints(&cmd(&["DREAMS.LEN", org]).query(con).unwrap_or(Value::Nil)).first() == Some(&2)
    });
    // Work goes on: drain what is ready and deferred (the deferral is
    // promoted), acknowledge it.
    for _ in 0..3 {
        let payload = text(&ok(con, &["DREAMS.DRAIN", org, "0", "NOQUIET"]));
        assert!(payload.contains("fire_id"), "{payload}");
        let outcome = ok(con, &["DREAMS.ACK", org, &payload, "SUCCESS"]);
        let Value::Array(fields) = outcome else { panic!("ACK reply") };
        let outcome = text(fields.first().unwrap_or(&Value::Nil));
        assert!(["acknowledged", "stale"].contains(&outcome.as_str()), "{outcome}");
    }
    assert_eq!(ints(&ok(con, &["DREAMS.LEN", org])).get(..2), Some(&[0, 0][..]));
    let stats = ok(con, &["DREAMS.STATS", org]);
    assert!(matches!(stats, Value::Array(_) | Value::Map(_)), "DREAMS.STATS answers: {stats:?}");

    // Town: urgent first, then plain; the leased message comes back when
    // its lease runs out.
    // [inbox, urgent, pending], the leased message pending or (expired by
    // this server, as above) back in the inbox.
    let lengths = ints(&ok(con, &["TOWN.LEN", town, "w1"]));
    assert!(lengths == vec![1, 1, 1] || lengths == vec![2, 1, 0], "TOWN.LEN {town}: {lengths:?}");
    let urgent = text(&ok(con, &["TOWN.RECV", town, "w1", "URGENT"]));
    assert!(urgent.contains(r#""description":"urgent""#), "{urgent}");
    wait_until("the Town lease expires after the switch", || {
        ints(&cmd(&["TOWN.LEN", town, "w1"]).query(con).unwrap_or(Value::Nil)) == vec![2, 0, 0]
    });
    // The expired message went back to the head of the inbox.
    let first = text(&ok(con, &["TOWN.RECV", town, "w1", "RELIABLE"]));
    assert!(first.contains(r#""description":"leased""#), "{first}");
    assert_eq!(text(&ok(con, &["TOWN.ACK", town, "w1", &uuid(1)])), "1");
    let agent = town_sub(con, "TOWN.AGENT", town, "GET", &["w1"]);
    assert!(format!("{agent:?}").contains("builder"), "{agent:?}");
    let task = town_sub(con, "TOWN.TASK", town, "GET", &["t1"]);
    assert!(format!("{task:?}").contains("build it"), "{task:?}");
    assert_eq!(text(&town_sub(con, "TOWN.BACKLOG", town, "POP", &[])), "t1");
    let stats = ok(con, &["TOWN.STATS", town]);
    assert!(matches!(stats, Value::Array(_) | Value::Map(_)), "TOWN.STATS answers: {stats:?}");
}

/// The previous release's data, saved and loaded by this release.
#[test]
fn this_release_serves_the_previous_releases_data() {
    let previous = previous_module();
    let old = start(&previous, None, &[]);
    let written = write_everything(&mut old.connect(), "up");
    let dir = save_and_stop(old);
    let new = start(&current_module(), Some(&dir), &[]);
    serves_everything(&mut new.connect(), &written);
    let _ = std::fs::remove_dir_all(dir);
}

/// And back: this release's data, loaded by the previous one.
#[test]
fn the_previous_release_serves_this_releases_data() {
    let previous = previous_module();
    let new = start(&current_module(), None, &[]);
    let written = write_everything(&mut new.connect(), "down");
    let dir = save_and_stop(new);
    let old = start(&previous, Some(&dir), &[]);
    serves_everything(&mut old.connect(), &written);
    let _ = std::fs::remove_dir_all(dir);
}

/// A rolling upgrade as docs/operations.md describes it: a replica running
/// this release follows a master running the previous one, then takes over
/// (promoted with `REPLICAOF NO ONE`: 0.1.0 could abort in a coordinated
/// `FAILOVER` when a lease fell due during its pause); what the old master
/// wrote, leases included, is served and expired by the new one.
#[test]
fn a_replica_first_rolling_upgrade_loses_nothing() {
    let previous = previous_module();
    let old = start(&previous, None, &[]);
    let mut old_con = old.connect();
    let written = write_everything(&mut old_con, "rolling");
    let port = old.port.to_string();
    let new = start(&current_module(), None, &["--replicaof", "127.0.0.1", &port]);
    let mut new_con = new.connect();
    wait_until("the new replica has synced", || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut new_con).unwrap_or_default();
        info.contains("master_link_status:up")
    });
    // Writes after the sync reach it through the replication stream.
    let extra = tenant("org-after-sync");
    ok(&mut old_con, &["DREAMS.FIRE", &extra, "notes", "1"]);
    wait_until("the replica has the write made after the sync", || {
        ints(&cmd(&["DREAMS.LEN", &extra]).query(&mut new_con).unwrap_or(Value::Nil)).first() == Some(&1)
    });
    assert_eq!(old.digest(), new.digest(), "the replica holds exactly the master's data");
    // The new-release replica becomes master; the old master follows it.
    ok(&mut new_con, &["REPLICAOF", "NO", "ONE"]);
    let new_port = new.port.to_string();
    ok(&mut old_con, &["REPLICAOF", "127.0.0.1", &new_port]);
    wait_until("the new release is master", || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut new_con).unwrap_or_default();
        info.contains("role:master")
    });
    serves_everything(&mut new_con, &written);
}
