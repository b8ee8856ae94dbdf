//! `DREAMS.STATS` and `TOWN.STATS`: every field counts what the queue,
//! inboxes and lease sets hold (checked against the plain key commands),
//! ages come from deferral scores and `created_at`, expired leases show up
//! as waiting markers, and the commands are read-only, documented,
//! ACL-checked on every key they read and refuse a wrong key type.

mod common;

use std::collections::BTreeMap;

use common::{tenant, wait_until, Server};
use redis::{Connection, Value};

fn run(con: &mut Connection, args: &[&str]) -> Result<Value, String> {
    let mut cmd = redis::Cmd::new();
    for arg in args {
        cmd.arg(*arg);
    }
    cmd.query::<Value>(con).map_err(|error| format!("{error}"))
}

/// A STATS reply as field → value (nil as None).
fn stats(con: &mut Connection, args: &[&str]) -> BTreeMap<String, Option<i64>> {
    let reply = run(con, args).unwrap_or_else(|error| panic!("{args:?}: {error}"));
    let Value::Array(items) = reply else { panic!("{reply:?}") };
    items
        .chunks(2)
        .map(|pair| match pair {
            [Value::BulkString(name), Value::Int(value)] => (String::from_utf8_lossy(name).into_owned(), Some(*value)),
            [Value::BulkString(name), Value::Nil] => (String::from_utf8_lossy(name).into_owned(), None),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn get(map: &BTreeMap<String, Option<i64>>, field: &str) -> Option<i64> {
    *map.get(field).unwrap_or_else(|| panic!("no field {field} in {map:?}"))
}

fn message(id: &str, to: &str, created_at: &str) -> String {
    format!(r#"{{"id":"{id}","from":"lead","to":"{to}","type":"task","description":"d","priority":"normal","created_at":"{created_at}","correlation_id":null}}"#)
}

#[test]
fn dreams_stats_count_what_the_queue_holds() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("stats");
    let empty = stats(&mut con, &["DREAMS.STATS", &org]);
    let names: Vec<&str> = empty.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["dead_letters", "deferred", "expired_leases_waiting", "in_flight", "leased", "next_lease_deadline_ms", "now_ms", "oldest_deferred_age_ms", "ready"]
    );
    for field in ["ready", "deferred", "in_flight", "dead_letters", "leased", "expired_leases_waiting"] {
        assert_eq!(get(&empty, field), Some(0), "{field}");
    }
    assert_eq!(get(&empty, "next_lease_deadline_ms"), None);
    assert_eq!(get(&empty, "oldest_deferred_age_ms"), None);

    for _ in 0..5 {
        run(&mut con, &["DREAMS.FIRE", &org, "web", "3"]).unwrap();
    }
    // A foreign item in ready is dead-lettered by the drain that meets it.
    let queue = format!("exocortex:dreams:{{{org}}}:queue");
    run(&mut con, &["LPUSH", &queue, "not a fire"]).unwrap();
    run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "LEASE", "600"]).unwrap();
    run(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "LEASE", "0.05"]).unwrap();
    let expected_deadline_after = {
        let now: i64 = stats(&mut con, &["DREAMS.STATS", &org]).get("now_ms").copied().flatten().unwrap();
        now
    };
    // The short lease runs out: its item goes back to ready with a marker.
    wait_until("the 50 ms lease to expire", || get(&stats(&mut con, &["DREAMS.STATS", &org]), "expired_leases_waiting") == Some(1));
    // A deferral 100 s old, written as quiet hours write it (score: seconds).
    let deferred = format!("exocortex:dreams:{{{org}}}:deferred");
    let now_secs = expected_deadline_after / 1000;
    run(&mut con, &["ZADD", &deferred, &(now_secs - 100).to_string(), "{\"old\":1}"]).unwrap();

    let s = stats(&mut con, &["DREAMS.STATS", &org]);
    assert_eq!(get(&s, "ready"), Some(4), "{s:?}");
    assert_eq!(get(&s, "in_flight"), Some(1), "{s:?}");
    assert_eq!(get(&s, "dead_letters"), Some(1), "{s:?}");
    assert_eq!(get(&s, "deferred"), Some(1), "{s:?}");
    assert_eq!(get(&s, "leased"), Some(1), "{s:?}");
    let now = get(&s, "now_ms").unwrap();
    let deadline = get(&s, "next_lease_deadline_ms").unwrap();
    assert!(deadline > now + 590_000 && deadline <= now + 600_000, "{s:?}");
    let age = get(&s, "oldest_deferred_age_ms").unwrap();
    assert!((100_000..=102_000).contains(&age), "{s:?}");
    // The same numbers the key commands give.
    let llen: i64 = redis::cmd("LLEN").arg(&queue).query(&mut con).unwrap();
    assert_eq!(get(&s, "ready"), Some(llen));
    let len: Vec<i64> = redis::cmd("DREAMS.LEN").arg(&org).query(&mut con).unwrap();
    assert_eq!(len, vec![4, 1, 1]);
}

#[test]
fn town_stats_per_agent_and_for_the_town() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("stats");
    let empty = stats(&mut con, &["TOWN.STATS", &town, "w1"]);
    for field in ["inbox", "urgent", "pending", "leased", "expired_leases_waiting"] {
        assert_eq!(get(&empty, field), Some(0), "{field}");
    }
    for field in ["next_lease_deadline_ms", "next_message_age_ms", "oldest_pending_age_ms"] {
        assert_eq!(get(&empty, field), None, "{field}");
    }
    let now = chrono_now_ms();
    let minute_ago = rfc3339(now - 60_000);
    let hour_ago = rfc3339(now - 3_600_000);
    run(&mut con, &["TOWN.SEND", &town, &message("m1", "w1", &hour_ago)]).unwrap();
    run(&mut con, &["TOWN.SEND", &town, &message("m2", "w1", &minute_ago)]).unwrap();
    run(&mut con, &["TOWN.SEND", &town, &message("m3", "w1", &minute_ago)]).unwrap();
    let s = stats(&mut con, &["TOWN.STATS", &town, "w1"]);
    assert_eq!((get(&s, "inbox"), get(&s, "pending")), (Some(3), Some(0)));
    let age = get(&s, "next_message_age_ms").unwrap();
    assert!((3_600_000..3_700_000).contains(&age), "{s:?}");

    run(&mut con, &["TOWN.RECV", &town, "w1", "RELIABLE", "LEASE", "600"]).unwrap();
    run(&mut con, &["TOWN.SEND", &town, &message("u1", "w1", &minute_ago), "URGENT"]).unwrap();
    let s = stats(&mut con, &["TOWN.STATS", &town, "w1"]);
    assert_eq!((get(&s, "inbox"), get(&s, "urgent"), get(&s, "pending"), get(&s, "leased")), (Some(2), Some(1), Some(1), Some(1)), "{s:?}");
    // The next RECV reads the urgent one (a minute old); the pending one is an hour old.
    let next = get(&s, "next_message_age_ms").unwrap();
    assert!((60_000..160_000).contains(&next), "{s:?}");
    assert!(get(&s, "oldest_pending_age_ms").unwrap() >= 3_600_000, "{s:?}");
    assert!(get(&s, "next_lease_deadline_ms").unwrap() > get(&s, "now_ms").unwrap() + 590_000, "{s:?}");

    // A message without created_at has no age (nil), not a made-up one.
    let bare = stats(&mut con, &["TOWN.STATS", &town, "w2"]);
    assert_eq!(get(&bare, "next_message_age_ms"), None);
    run(&mut con, &["TOWN.SEND", &town, r#"{"id":"x","to":"w2"}"#]).unwrap();
    let bare = stats(&mut con, &["TOWN.STATS", &town, "w2"]);
    assert_eq!((get(&bare, "inbox"), get(&bare, "next_message_age_ms")), (Some(1), None));

    run(&mut con, &["TOWN.AGENT", &town, "SET", "w1", "name", "one"]).unwrap();
    let t = stats(&mut con, &["TOWN.STATS", &town]);
    assert_eq!(get(&t, "agents"), Some(1), "{t:?}");
    assert_eq!(get(&t, "mailboxes"), Some(2), "{t:?}");
    assert_eq!(get(&t, "backlog"), Some(0), "{t:?}");
    assert_eq!(get(&t, "tasks"), Some(0), "{t:?}");
}

#[test]
fn stats_are_read_only_documented_acl_checked_and_type_checked() {
    let server = Server::start();
    let mut con = server.connect();
    for name in ["DREAMS.STATS", "TOWN.STATS"] {
        let info: Value = redis::cmd("COMMAND").arg("INFO").arg(name).query(&mut con).unwrap();
        let text = format!("{info:?}");
        assert!(text.contains("readonly") && !text.contains("\"write\""), "{name}: {text}");
        let docs: Value = redis::cmd("COMMAND").arg("DOCS").arg(name).query(&mut con).unwrap();
        let text = format!("{docs:?}");
        assert!(text.contains("summary") && text.contains("arguments"), "{name}: {text}");
    }
    let org = tenant("acl");
    run(&mut con, &["DREAMS.FIRE", &org, "web", "1"]).unwrap();
    let digest_before: String = redis::cmd("DEBUG").arg("DIGEST").query(&mut con).unwrap();
    // May read the queue lists but not the lease set: refused, nothing read.
    run(&mut con, &["ACL", "SETUSER", "partial", "on", ">pw", "+@all", &format!("%R~exocortex:dreams:{{{org}}}:queue"), &format!("%R~exocortex:dreams:{{{org}}}:deferred"), &format!("%R~exocortex:dreams:{{{org}}}:processing"), &format!("%R~exocortex:dreams:{{{org}}}:dead")]).unwrap();
    let mut partial = server.connect_as("partial", "pw");
    let error = run(&mut partial, &["DREAMS.STATS", &org]).unwrap_err();
    assert!(error.to_uppercase().contains("NOPERM"), "{error}");
    run(&mut con, &["ACL", "SETUSER", "partial", &format!("%R~exocortex:dreams:{{{org}}}:leases")]).unwrap();
    assert_eq!(get(&stats(&mut partial, &["DREAMS.STATS", &org]), "ready"), Some(1));
    // Read permission is enough; a town user without the leases key is refused.
    let town = tenant("acl");
    run(&mut con, &["ACL", "SETUSER", "towner", "on", ">pw", "+@all", &format!("%R~tt:{{{town}}}:inbox:*"), &format!("%R~tt:{{{town}}}:urgent:*"), &format!("%R~tt:{{{town}}}:pending:*")]).unwrap();
    let mut towner = server.connect_as("towner", "pw");
    assert!(run(&mut towner, &["TOWN.STATS", &town, "w1"]).unwrap_err().to_uppercase().contains("NOPERM"));
    assert!(run(&mut towner, &["TOWN.STATS", &town]).unwrap_err().to_uppercase().contains("NOPERM"));

    // Wrong types are refused by name.
    let other = tenant("type");
    run(&mut con, &["SET", &format!("exocortex:dreams:{{{other}}}:leases"), "x"]).unwrap();
    assert!(run(&mut con, &["DREAMS.STATS", &other]).unwrap_err().contains("WRONGTYPE"));
    run(&mut con, &["SET", &format!("tt:{{{other}}}:pending:w1"), "x"]).unwrap();
    assert!(run(&mut con, &["TOWN.STATS", &other, "w1"]).unwrap_err().contains("WRONGTYPE"));
    // Arguments.
    let error = run(&mut con, &["DREAMS.STATS", "a{b"]).unwrap_err();
    assert!(error.contains("organization"), "{error}");
    let error = run(&mut con, &["DREAMS.STATS", &org, "extra"]).unwrap_err();
    assert!(error.to_lowercase().contains("arguments"), "{error}");
    assert!(run(&mut con, &["TOWN.STATS", &town, ""]).unwrap_err().contains("must not be empty"));
    let error = run(&mut con, &["TOWN.STATS", &town, "w1", "extra"]).unwrap_err();
    assert!(error.contains("syntax error"), "{error}");
    // Reading changed nothing (DEBUG DIGEST before the type-clash keys were set).
    run(&mut con, &["DEL", &format!("exocortex:dreams:{{{other}}}:leases"), &format!("tt:{{{other}}}:pending:w1")]).unwrap();
    let digest_after: String = redis::cmd("DEBUG").arg("DIGEST").query(&mut con).unwrap();
    assert_eq!(digest_before, digest_after);
}

fn chrono_now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
