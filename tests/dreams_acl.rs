//! Tenant isolation through ACL, and the command metadata ACL and cluster
//! routing rely on: a user limited to one organization's keys can do all of
//! that organization's Dreams work and nothing to another's (`NOPERM`, with
//! nothing changed); each command's flags, key spec and ACL categories are
//! exactly what it does.

mod common;

use std::collections::BTreeSet;

use common::{cmd, tenant, Server};
use redis::Value;

/// Every DREAMS command and the flags it must carry (besides `module`).
const FLAGS: [(&str, &[&str]); 8] = [
    ("DREAMS.FIRE", &["write", "denyoom", "fast"]),
    ("DREAMS.RECORD", &["write", "denyoom", "fast"]),
    ("DREAMS.SETTLE", &["write", "denyoom", "fast"]),
    ("DREAMS.DRAIN", &["write", "denyoom", "blocking"]),
    ("DREAMS.ACK", &["write", "denyoom"]),
    ("DREAMS.RECOVER", &["write"]),
    ("DREAMS.LEN", &["readonly", "fast"]),
    ("DREAMS.COUNTERS", &["readonly", "fast"]),
];

/// The commands an organization's worker and writers need.
const DREAMS_COMMANDS: &str = "+dreams.fire +dreams.record +dreams.settle +dreams.drain +dreams.ack +dreams.recover +dreams.len +dreams.counters";

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) | Value::Set(items) => items.iter().map(text).collect(),
        other => panic!("expected an array, got {other:?}"),
    }
}

/// Is `error` the server's `NOPERM` (redis-rs renders the code as `NoPerm`)?
fn is_noperm(error: &str) -> bool {
    error.to_ascii_uppercase().starts_with("NOPERM")
}

/// `COMMAND INFO <name>`: the one entry's fields.
fn command_info(con: &mut redis::Connection, name: &str) -> Vec<Value> {
    let info: Value = cmd(&["COMMAND", "INFO", name]).query(con).unwrap();
    let Value::Array(mut entries) = info else { panic!("{info:?}") };
    match entries.pop() {
        Some(Value::Array(fields)) => fields,
        other => panic!("{name} is not registered: {other:?}"),
    }
}

/// The server's major.minor version.
fn version(con: &mut redis::Connection) -> (u32, u32) {
    let info: String = redis::cmd("INFO").arg("server").query(con).unwrap();
    let line = info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap();
    let mut parts = line.trim().split('.').map(|p| p.parse::<u32>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap())
}

#[test]
fn command_flags_and_key_specs_are_exact() {
    let server = Server::start();
    let mut con = server.connect();
    for (name, expected) in FLAGS {
        let fields = command_info(&mut con, name);
        let flags: BTreeSet<String> = strings(&fields[2]).into_iter().collect();
        let mut wanted: BTreeSet<String> = expected.iter().map(|f| f.to_string()).collect();
        wanted.insert("module".into());
        assert_eq!(flags, wanted, "{name} flags");
        assert_eq!(&fields[3..6], &[Value::Int(1), Value::Int(1), Value::Int(1)], "{name}: first key 1");
        // The key spec: the tenant, not a key, read-only or read-write.
        let specs = format!("{:?}", fields[8]).to_lowercase();
        let access = if expected.contains(&"readonly") { "\"ro\"" } else { "\"rw\"" };
        assert!(specs.contains("not_key") && specs.contains(access), "{name} key spec: {specs}");
    }
}

#[test]
fn acl_categories_follow_the_flags_where_redis_allows_it() {
    let server = Server::start();
    let mut con = server.connect();
    let listed = |con: &mut redis::Connection, category: &str| -> BTreeSet<String> {
        let names: Value = cmd(&["ACL", "CAT", category]).query(con).unwrap();
        strings(&names)
            .into_iter()
            .map(|n| n.to_uppercase())
            .filter(|n| n.starts_with("DREAMS."))
            .collect()
    };
    let with_flag = |flag: &str| -> BTreeSet<String> {
        FLAGS
            .iter()
            .filter(|(_, flags)| flags.contains(&flag))
            .map(|(name, _)| name.to_string())
            .collect()
    };
    let slow: BTreeSet<String> = FLAGS
        .iter()
        .filter(|(_, flags)| !flags.contains(&"fast"))
        .map(|(name, _)| name.to_string())
        .collect();
    if version(&mut con) >= (7, 2) {
        assert_eq!(listed(&mut con, "write"), with_flag("write"));
        assert_eq!(listed(&mut con, "read"), with_flag("readonly"));
        assert_eq!(listed(&mut con, "fast"), with_flag("fast"));
        assert_eq!(listed(&mut con, "blocking"), with_flag("blocking"));
        assert_eq!(listed(&mut con, "slow"), slow);
    } else {
        // Redis 7.0 gives module commands no ACL category and no API to set
        // one: `+@write` does not grant them, so ACL rules name them.
        for category in ["write", "read", "fast", "slow", "blocking"] {
            assert!(listed(&mut con, category).is_empty(), "@{category} on Redis 7.0");
        }
        cmd(&["ACL", "SETUSER", "writer", "on", "nopass", "~*", "+@write"]).query::<()>(&mut con).unwrap();
        let dry: Value = cmd(&["ACL", "DRYRUN", "writer", "DREAMS.FIRE", "o", "p", "1"]).query(&mut con).unwrap();
        assert!(text(&dry).contains("no permissions"), "{dry:?}");
    }
    let fields = command_info(&mut con, "DREAMS.FIRE");
    let categories: BTreeSet<String> = strings(&fields[6]).into_iter().collect();
    if version(&mut con) >= (7, 2) {
        assert_eq!(categories, BTreeSet::from(["@write".to_owned(), "@fast".to_owned()]));
    } else {
        assert!(categories.is_empty(), "{categories:?}");
    }
}

/// Create `user` with `rules` (password "pw").
fn set_user(server: &Server, user: &str, rules: &str) {
    let mut args = vec!["ACL", "SETUSER", user, "reset", "on", ">pw"];
    args.extend(rules.split_whitespace());
    cmd(&args).query::<()>(&mut server.connect()).unwrap();
}

/// Some state in `org`: a pending counted fire in flight, a ready fire, an
/// event identity, a settled generation. The in-flight payload.
fn populate(con: &mut redis::Connection, org: &str) -> String {
    let trigger = ["TRIGGER", "1", "1", "0", "1000000"];
    let mut record = vec!["DREAMS.RECORD", org, "web", "3", "5", "1", "EVENT", "e1", "GENERATION", "1"];
    record.extend(trigger);
    cmd(&record).query::<Value>(con).unwrap();
    let payload: String = cmd(&["DREAMS.DRAIN", org, "1", "NOQUIET"]).query(con).unwrap();
    cmd(&["DREAMS.FIRE", org, "api", "1"]).query::<String>(con).unwrap();
    cmd(&["DREAMS.SETTLE", org, "web", "3", "e0", "1"]).query::<()>(con).unwrap();
    payload
}

/// One call of every DREAMS command on `org`, given a drained `payload`.
fn every_command<'a>(org: &'a str, payload: &'a str) -> Vec<Vec<&'a str>> {
    vec![
        vec!["DREAMS.FIRE", org, "web", "3", "NODE", "n"],
        vec!["DREAMS.RECORD", org, "web", "3", "1", "1", "EVENT", "e2", "GENERATION", "2"],
        vec!["DREAMS.SETTLE", org, "web", "3", "e2", "2"],
        vec!["DREAMS.LEN", org],
        vec!["DREAMS.COUNTERS", org, "web", "3"],
        vec!["DREAMS.ACK", org, payload, "SUCCESS", "TRIGGER", "100", "100", "0", "1000000"],
        vec!["DREAMS.DRAIN", org, "0.1", "NOQUIET"],
        vec!["DREAMS.RECOVER", org],
    ]
}

#[test]
fn a_tenant_user_does_all_of_its_dreams_work_and_nothing_to_another_tenant() {
    let server = Server::start();
    let (a, b) = (tenant("acl-a"), tenant("acl-b"));
    let mut admin = server.connect();
    let payload_a = populate(&mut admin, &a);
    let payload_b = populate(&mut admin, &b);
    let rules = format!("~exocortex:dreams:{{{a}}}:* ~tt:{{{a}}}:* -@all {DREAMS_COMMANDS}");
    set_user(&server, "tenant-a", &rules);
    let mut user = server.connect();
    cmd(&["AUTH", "tenant-a", "pw"]).query::<()>(&mut user).unwrap();

    for call in every_command(&b, &payload_b) {
        let before = server.digest();
        let refused = common::run(&mut user, &call.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
        let error = refused.expect_err(&format!("{} on another tenant must be refused", call[0]));
        assert!(is_noperm(&error) && error.contains(&format!("{{{b}}}")), "{}: {error}", call[0]);
        assert_eq!(server.digest(), before, "{} changed nothing", call[0]);
    }
    let log: Value = cmd(&["ACL", "LOG"]).query(&mut admin).unwrap();
    let log = format!("{log:?}");
    assert!(log.contains("tenant-a") && log.contains(&format!("{{{b}}}")), "refusals are in the ACL log: {log}");

    let before = server.digest();
    for call in every_command(&a, &payload_a) {
        let done = common::run(&mut user, &call.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
        assert!(done.is_ok(), "{} on its own tenant: {done:?}", call[0]);
    }
    assert_ne!(server.digest(), before, "its own work went through");
    let lengths: Vec<i64> = cmd(&["DREAMS.LEN", &a]).query(&mut admin).unwrap();
    assert_eq!(lengths, vec![2, 0, 0], "acked one, drained one, recovered it: two ready");
}

#[test]
fn a_user_without_the_in_flight_list_cannot_drain_and_nothing_moves() {
    let server = Server::start();
    let org = tenant("acl-drain");
    let mut admin = server.connect();
    for project in ["a", "b"] {
        cmd(&["DREAMS.FIRE", &org, project, "1"]).query::<String>(&mut admin).unwrap();
    }
    let queue = format!("exocortex:dreams:{{{org}}}:queue");
    let deferred = format!("exocortex:dreams:{{{org}}}:deferred");
    set_user(&server, "queue-only", &format!("~{queue} ~{deferred} -@all +dreams.drain +dreams.len"));
    let mut user = server.connect();
    cmd(&["AUTH", "queue-only", "pw"]).query::<()>(&mut user).unwrap();

    let before = server.digest();
    let started = std::time::Instant::now();
    let error = common::run(&mut user, &[b"DREAMS.DRAIN", org.as_bytes(), b"5", b"NOQUIET"]).unwrap_err();
    assert!(is_noperm(&error) && error.contains(":processing"), "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "refused at once, not after blocking");
    assert_eq!(server.digest(), before, "nothing moved");
    let ready: i64 = cmd(&["LLEN", &queue]).query(&mut admin).unwrap();
    assert_eq!(ready, 2);

    // Without the deferred set either, the refusal names that key first.
    set_user(&server, "ready-only", &format!("~{queue} -@all +dreams.drain"));
    let mut user = server.connect();
    cmd(&["AUTH", "ready-only", "pw"]).query::<()>(&mut user).unwrap();
    let error = common::run(&mut user, &[b"DREAMS.DRAIN", org.as_bytes(), b"0.1"]).unwrap_err();
    assert!(is_noperm(&error) && error.contains(":deferred"), "{error}");
    assert_eq!(server.digest(), before, "nothing moved");
}

#[test]
fn a_read_only_user_can_inspect_but_not_write() {
    let server = Server::start();
    let org = tenant("acl-ro");
    let mut admin = server.connect();
    cmd(&["DREAMS.FIRE", &org, "web", "1"]).query::<String>(&mut admin).unwrap();
    set_user(&server, "viewer", &format!("%R~exocortex:dreams:{{{org}}}:* -@all {DREAMS_COMMANDS}"));
    let mut user = server.connect();
    cmd(&["AUTH", "viewer", "pw"]).query::<()>(&mut user).unwrap();

    let lengths: Vec<i64> = cmd(&["DREAMS.LEN", &org]).query(&mut user).unwrap();
    assert_eq!(lengths, vec![1, 0, 0]);
    let counters: Value = cmd(&["DREAMS.COUNTERS", &org, "web", "1"]).query(&mut user).unwrap();
    assert_eq!(counters, Value::Array(vec![]));
    let before = server.digest();
    for call in [
        vec!["DREAMS.FIRE", org.as_str(), "web", "1"],
        vec!["DREAMS.DRAIN", org.as_str(), "0.1"],
        vec!["DREAMS.RECOVER", org.as_str()],
    ] {
        let error = common::run(&mut user, &call.iter().map(|s| s.as_bytes()).collect::<Vec<_>>()).unwrap_err();
        assert!(is_noperm(&error), "{}: {error}", call[0]);
    }
    assert_eq!(server.digest(), before);
}

/// The module looks the `default` user up once and keeps its handle (Redis
/// never replaces that user object); its rules must still be the current
/// ones at every call: narrowing them refuses the next call, widening them
/// lets the next one through.
#[test]
fn changes_to_the_default_users_rules_apply_to_the_next_call() {
    let server = Server::start();
    let (own, other) = (tenant("acl-default"), tenant("acl-default-other"));
    let mut default = server.connect();
    let fire = |con: &mut redis::Connection, org: &str| {
        common::run(con, &[b"DREAMS.FIRE", org.as_bytes(), b"web", b"1"])
    };
    assert!(fire(&mut default, &other).is_ok(), "all keys at first");

    let narrow = format!("~exocortex:dreams:{{{own}}}:*");
    cmd(&["ACL", "SETUSER", "default", "resetkeys", &narrow]).query::<()>(&mut default).unwrap();
    let before = server.digest();
    let error = fire(&mut default, &other).unwrap_err();
    assert!(is_noperm(&error), "narrowed rules apply: {error}");
    assert_eq!(server.digest(), before, "nothing changed");
    assert!(fire(&mut default, &own).is_ok(), "its own keys still allowed");

    cmd(&["ACL", "SETUSER", "default", "allkeys"]).query::<()>(&mut default).unwrap();
    assert!(fire(&mut default, &other).is_ok(), "widened rules apply");
    let lengths: Vec<i64> = cmd(&["DREAMS.LEN", &other]).query(&mut default).unwrap();
    assert_eq!(lengths, vec![2, 0, 0]);
}
