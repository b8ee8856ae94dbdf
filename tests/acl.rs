//! Tenant isolation through ACL, and the command metadata ACL and cluster
//! routing rely on: a user limited to one tenant's keys (and its town's
//! broadcast channel) can do all of that tenant's Dreams and Town work and
//! nothing to another's (`NOPERM`, with nothing changed); each command's
//! flags, key spec and ACL categories are exactly what it does. (The exact
//! flags of the TOWN commands are held in `town_commands.rs`; their key
//! specs and categories here, read from those flags.)

use crate::common;
use crate::town_support;

use std::collections::BTreeSet;

use common::{cmd, tenant, Server, ServerKind};
use redis::Value;
use town_support::message;

/// Every DREAMS command and the flags it must carry (besides `module`).
const FLAGS: [(&str, &[&str]); 8] = [
    ("DREAMS.FIRE", &["write", "denyoom", "fast"]),
    ("DREAMS.RECORD", &["write", "denyoom", "fast"]),
    ("DREAMS.SETTLE", &["write", "fast"]),
    ("DREAMS.DRAIN", &["write", "denyoom", "blocking"]),
    ("DREAMS.ACK", &["write"]),
    ("DREAMS.RECOVER", &["write"]),
    ("DREAMS.LEN", &["readonly", "fast"]),
    ("DREAMS.COUNTERS", &["readonly", "fast"]),
];

/// The commands an organization's worker and writers need.
const DREAMS_COMMANDS: &str =
    "+dreams.fire +dreams.record +dreams.settle +dreams.drain +dreams.ack +dreams.recover +dreams.len +dreams.counters";

/// Every TOWN command (their flags: `town_commands.rs`).
const TOWN: [&str; 14] = [
    "TOWN.SEND",
    "TOWN.RECV",
    "TOWN.ACK",
    "TOWN.REQUEUE",
    "TOWN.LEN",
    "TOWN.PEEK",
    "TOWN.RECLAIM",
    "TOWN.BROADCAST",
    "TOWN.STOP",
    "TOWN.AGENT",
    "TOWN.TASK",
    "TOWN.ACTIVITY",
    "TOWN.BACKLOG",
    "TOWN.RESET",
];

/// The TOWN commands with subcommands (`TOWN.AGENT GET <town> ...`).
const CONTAINERS: [&str; 5] = ["TOWN.STOP", "TOWN.AGENT", "TOWN.TASK", "TOWN.ACTIVITY", "TOWN.BACKLOG"];

/// Their subcommands, each a command of its own for flags and ACL.
const TOWN_SUBCOMMANDS: [&str; 21] = [
    "TOWN.STOP|REQUEST",
    "TOWN.STOP|CHECK",
    "TOWN.STOP|CLEAR",
    "TOWN.AGENT|SET",
    "TOWN.AGENT|GET",
    "TOWN.AGENT|DEL",
    "TOWN.AGENT|LIST",
    "TOWN.AGENT|BYNAME",
    "TOWN.AGENT|INCR",
    "TOWN.AGENT|HEARTBEAT",
    "TOWN.TASK|SET",
    "TOWN.TASK|GET",
    "TOWN.TASK|DEL",
    "TOWN.TASK|LIST",
    "TOWN.ACTIVITY|LOG",
    "TOWN.ACTIVITY|GET",
    "TOWN.BACKLOG|PUSH",
    "TOWN.BACKLOG|POP",
    "TOWN.BACKLOG|LIST",
    "TOWN.BACKLOG|LEN",
    "TOWN.BACKLOG|REMOVE",
];

/// Every TOWN command that runs: the plain ones and the subcommands.
fn town_runnable() -> impl Iterator<Item = &'static str> {
    TOWN.into_iter().filter(|name| !CONTAINERS.contains(name)).chain(TOWN_SUBCOMMANDS)
}

/// The commands a town's agents need.
const TOWN_COMMANDS: &str = "+town.send +town.recv +town.ack +town.requeue +town.len +town.peek +town.reclaim +town.broadcast +town.stop +town.agent +town.task +town.activity +town.backlog +town.reset";

/// Every module command with the flags the server reports (besides `module`).
fn module_flags(con: &mut redis::Connection) -> Vec<(String, BTreeSet<String>)> {
    FLAGS
        .iter()
        .map(|(name, _)| *name)
        .chain(town_runnable())
        .map(|name| {
            let mut flags: BTreeSet<String> = strings(&command_info(con, name)[2]).into_iter().collect();
            flags.remove("module");
            (name.to_owned(), flags)
        })
        .collect()
}

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

/// What a server lets a module do with ACL categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AclSupport {
    /// Redis 7.0: module commands are in no category; rules must name them.
    NoCategories,
    /// Redis 7.2 (and Valkey 7.2): `RedisModule_SetCommandACLCategories`,
    /// so `@write`, `@read`, `@fast`... follow the flags.
    FlagCategories,
    /// Redis 7.4+, Valkey 8+: also `RedisModule_AddACLCategory`, so the
    /// module's own `@dreamtown` exists.
    ModuleCategory,
}

/// The server's ACL support, from its name and version in `INFO server`.
fn acl_support(con: &mut redis::Connection) -> AclSupport {
    // Valkey forked Redis 7.2, so every Valkey has the flag categories.
    let version = common::server_version(con);
    if version.at_least(ServerKind::Valkey, 8, 0) || version.at_least(ServerKind::Redis, 7, 4) {
        AclSupport::ModuleCategory
    } else if version.is_valkey() || version.at_least(ServerKind::Redis, 7, 2) {
        AclSupport::FlagCategories
    } else {
        AclSupport::NoCategories
    }
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
    // TOWN: the same key spec, read-write exactly when the command writes
    // (BROADCAST writes no key: read-only).
    // A subcommand's tenant follows its name: first key 2.
    for name in town_runnable() {
        let fields = command_info(&mut con, name);
        let readonly = !strings(&fields[2]).iter().any(|f| f == "write");
        let first = if name.contains('|') { 2 } else { 1 };
        assert_eq!(&fields[3..6], &[Value::Int(first), Value::Int(first), Value::Int(1)], "{name}: first key {first}");
        let specs = format!("{:?}", fields[8]).to_lowercase();
        let access = if readonly { "\"ro\"" } else { "\"rw\"" };
        assert!(specs.contains("not_key") && specs.contains(access), "{name} key spec: {specs}");
    }
}

/// The ACL rules users write with categories, per server: what a user
/// `+@all -@write`, `+@read +@write`, `+@all -@dangerous`, `+@dreamtown`
/// and `+@all -@dreamtown` may run, checked by running the commands as
/// that user (a refusal is `NOPERM` and changes nothing).
#[test]
fn category_rules_grant_and_refuse_the_module_commands_as_each_server_allows() {
    let server = Server::start();
    let mut admin = server.connect();
    let support = acl_support(&mut admin);
    let org = tenant("acl-cat");
    let town = tenant("acl-cat-town");
    let fire = |n: usize| -> Vec<String> { owned(vec![vec!["DREAMS.FIRE", &org, &format!("p{n}"), "1"]]).remove(0) };
    let send =
        |id: &str| -> Vec<String> { owned(vec![vec!["TOWN.SEND", &town, &message(id, "a", "normal")]]).remove(0) };
    let len = owned(vec![vec!["DREAMS.LEN", &org]]).remove(0);
    let town_len = owned(vec![vec!["TOWN.LEN", &town, "a"]]).remove(0);
    let set = owned(vec![vec!["SET", &format!("{org}-plain"), "1"]]).remove(0);
    // DREAMS.LEN's counts and the town's queue: what a write changes.
    let state = |admin: &mut redis::Connection| -> (Vec<i64>, Vec<i64>) {
        let dreams = cmd(&["DREAMS.LEN", &org]).query(admin).unwrap();
        let town_queue = cmd(&["TOWN.LEN", &town, "a"]).query(admin).unwrap();
        (dreams, town_queue)
    };
    let categories = support != AclSupport::NoCategories;
    let module_category = support == AclSupport::ModuleCategory;

    // (user, rules, [(call, allowed)]): a write and a read of each family,
    // and a core write.
    type Case<'a> = (&'a str, &'a str, Vec<(Vec<String>, bool)>);
    let cases: Vec<Case> = vec![
        // 7.0: module commands are in no category, so `-@write` does not
        // take them away and `+@write`/`+@read` do not grant them.
        (
            "no-writes",
            "+@all -@write",
            vec![
                (fire(1), !categories),
                (send("w1"), !categories),
                (len.clone(), true),
                (town_len.clone(), true),
                (set.clone(), false),
            ],
        ),
        (
            "read-write",
            "+@read +@write",
            vec![
                (fire(2), categories),
                (send("w2"), categories),
                (len.clone(), categories),
                (town_len.clone(), categories),
                (set.clone(), true),
            ],
        ),
        // No module command is @dangerous (none is an admin command).
        (
            "no-dangerous",
            "+@all -@dangerous",
            vec![(fire(3), true), (send("w3"), true), (len.clone(), true), (set.clone(), true)],
        ),
    ];
    let mut cases = cases;
    if module_category {
        cases.push((
            "dreamtown",
            "+@dreamtown",
            vec![
                (fire(4), true),
                (send("w4"), true),
                (len.clone(), true),
                (town_len.clone(), true),
                (set.clone(), false),
            ],
        ));
        cases.push((
            "not-dreamtown",
            "+@all -@dreamtown",
            vec![(fire(5), false), (send("w5"), false), (len.clone(), false), (set.clone(), true)],
        ));
    }
    for (user, rules, calls) in cases {
        set_user(&server, user, &format!("~* &* {rules}"));
        let mut con = server.connect_as(user, "pw");
        for (call, allowed) in calls {
            let before = state(&mut admin);
            let result = run(&mut con, &call);
            let writes = call[0] == "DREAMS.FIRE" || call[0] == "TOWN.SEND";
            match result {
                Ok(_) => {
                    assert!(allowed, "{support:?}: user {rules} ran {call:?}");
                    assert_eq!(state(&mut admin) != before, writes, "{call:?} ran: changed exactly when it writes");
                }
                Err(error) => {
                    assert!(!allowed, "{support:?}: user {rules} was refused {call:?}: {error}");
                    assert!(is_noperm(&error), "{call:?}: {error}");
                    assert_eq!(state(&mut admin), before, "{call:?} refused: nothing changed");
                }
            }
        }
    }

    // Where the server has no module categories, `@dreamtown` does not
    // exist: a rule naming it is an error, and the module loaded anyway.
    if !module_category {
        let refused = cmd(&["ACL", "SETUSER", "dreamtown", "on", "nopass", "+@dreamtown"]).query::<()>(&mut admin);
        let error = refused.expect_err("+@dreamtown without module categories").to_string();
        assert!(error.to_lowercase().contains("unknown"), "{error}");
    }
}

/// The categories `COMMAND INFO` reports for every module command: none on
/// Redis 7.0; from 7.2 the ones Redis gives a core command with the same
/// flags, plus `@dreamtown` where the server has module categories.
#[test]
fn command_info_lists_the_categories_acl_applies() {
    let server = Server::start();
    let mut con = server.connect();
    let support = acl_support(&mut con);
    for (name, flags) in module_flags(&mut con) {
        let fields = command_info(&mut con, &name);
        let categories: BTreeSet<String> = strings(&fields[6]).into_iter().collect();
        let mut wanted = BTreeSet::new();
        if support != AclSupport::NoCategories {
            let has = |flag: &str| flags.contains(flag);
            for (flag, category) in
                [("write", "@write"), ("readonly", "@read"), ("pubsub", "@pubsub"), ("blocking", "@blocking")]
            {
                if has(flag) {
                    wanted.insert(category.to_owned());
                }
            }
            wanted.insert(if has("fast") { "@fast" } else { "@slow" }.to_owned());
            assert!(!has("admin"), "{name} is no admin command (so not @dangerous)");
        }
        if support == AclSupport::ModuleCategory {
            wanted.insert("@dreamtown".to_owned());
        }
        assert_eq!(categories, wanted, "{name} on {support:?}");
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
fn every_command(org: &str, payload: &str) -> Vec<Vec<String>> {
    let calls: Vec<Vec<&str>> = vec![
        vec!["DREAMS.FIRE", org, "web", "3", "NODE", "n"],
        vec!["DREAMS.RECORD", org, "web", "3", "1", "1", "EVENT", "e2", "GENERATION", "2"],
        vec!["DREAMS.SETTLE", org, "web", "3", "e2", "2"],
        vec!["DREAMS.LEN", org],
        vec!["DREAMS.COUNTERS", org, "web", "3"],
        vec!["DREAMS.ACK", org, payload, "SUCCESS", "TRIGGER", "100", "100", "0", "1000000"],
        vec!["DREAMS.DRAIN", org, "0.1", "NOQUIET"],
        vec!["DREAMS.DRAIN", org, "0.1", "NOQUIET", "COUNT", "2", "ACK", payload, "FAILURE"],
        vec!["DREAMS.RECOVER", org],
    ];
    owned(calls)
}

/// Some state in `town`: agent `a` with mail in its inbox, urgent inbox and
/// pending list, activity, a stop flag; a task in the backlog.
fn populate_town(con: &mut redis::Connection, town: &str) {
    let calls: Vec<Vec<String>> = owned(vec![
        vec!["TOWN.AGENT", "SET", town, "a", "name", "alice", "rounds_completed", "1", "tasks_completed", "0"],
        vec!["TOWN.SEND", town, &message("m1", "a", "normal")],
        vec!["TOWN.SEND", town, &message("m2", "a", "high")],
        vec!["TOWN.SEND", town, &message("u1", "a", "normal"), "URGENT"],
        vec!["TOWN.RECV", town, "a", "RELIABLE"],
        vec!["TOWN.ACTIVITY", "LOG", town, "a", "busy"],
        vec!["TOWN.TASK", "SET", town, "t1", "id", "t1"],
        vec!["TOWN.BACKLOG", "PUSH", town, "t1"],
        vec!["TOWN.STOP", "REQUEST", town, "a"],
    ]);
    for call in calls {
        let args: Vec<&str> = call.iter().map(String::as_str).collect();
        cmd(&args).query::<Value>(con).unwrap_or_else(|e| panic!("{call:?}: {e}"));
    }
}

/// One call of every TOWN command and subcommand on `town`, in an order
/// that succeeds on a town populated by [`populate_town`].
fn every_town_command(town: &str) -> Vec<Vec<String>> {
    owned(vec![
        vec!["TOWN.SEND", town, &message("m3", "a", "low")],
        vec!["TOWN.SEND", town, &message("u2", "a", "urgent"), "URGENT"],
        vec!["TOWN.LEN", town, "a"],
        vec!["TOWN.PEEK", town, "a", "10"],
        vec!["TOWN.RECV", town, "a", "URGENT"],
        vec!["TOWN.RECV", town, "a", "COUNT", "2", "RELIABLE"],
        vec!["TOWN.RECV", town, "a", "BLOCK", "0.1"],
        vec!["TOWN.ACK", town, "a", "u1"],
        vec!["TOWN.RECV", town, "a", "RELIABLE", "ACK", "m1"],
        vec!["TOWN.REQUEUE", town, "a"],
        vec!["TOWN.RECLAIM", town, "a", "c"],
        vec!["TOWN.BROADCAST", town, r#"{"id":"b1","type":"shutdown"}"#],
        vec!["TOWN.STOP", "CHECK", town, "a"],
        vec!["TOWN.STOP", "CLEAR", town, "a"],
        vec!["TOWN.STOP", "REQUEST", town, "a", "TTL", "60"],
        vec![
            "TOWN.AGENT",
            "SET",
            town,
            "a",
            "name",
            "alice",
            "state",
            "idle",
            "rounds_completed",
            "1",
            "tasks_completed",
            "0",
        ],
        vec!["TOWN.AGENT", "GET", town, "a"],
        vec!["TOWN.AGENT", "LIST", town],
        vec!["TOWN.AGENT", "BYNAME", town, "alice"],
        vec!["TOWN.AGENT", "INCR", town, "a", "ROUNDS"],
        vec!["TOWN.AGENT", "INCR", town, "a", "TASKS"],
        vec!["TOWN.AGENT", "HEARTBEAT", town, "a"],
        vec!["TOWN.TASK", "SET", town, "t2", "id", "t2"],
        vec!["TOWN.TASK", "GET", town, "t1"],
        vec!["TOWN.TASK", "LIST", town],
        vec!["TOWN.TASK", "DEL", town, "t2"],
        vec!["TOWN.ACTIVITY", "LOG", town, "a", "more"],
        vec!["TOWN.ACTIVITY", "GET", town, "a"],
        vec!["TOWN.BACKLOG", "PUSH", town, "t2"],
        vec!["TOWN.BACKLOG", "LIST", town],
        vec!["TOWN.BACKLOG", "LEN", town],
        vec!["TOWN.BACKLOG", "REMOVE", town, "t2"],
        vec!["TOWN.BACKLOG", "POP", town],
        vec!["TOWN.AGENT", "DEL", town, "c"],
        vec!["TOWN.RESET", town, "AGENTS"],
        vec!["TOWN.RESET", town],
    ])
}

fn owned(calls: Vec<Vec<&str>>) -> Vec<Vec<String>> {
    calls.into_iter().map(|call| call.into_iter().map(str::to_owned).collect()).collect()
}

fn run(con: &mut redis::Connection, call: &[String]) -> Result<Value, String> {
    common::run(con, &call.iter().map(|s| s.as_bytes()).collect::<Vec<_>>())
}

#[test]
fn a_tenant_user_does_all_of_its_dreams_and_town_work_and_nothing_to_another_tenant() {
    let server = Server::start();
    let (a, b) = (tenant("acl-a"), tenant("acl-b"));
    let mut admin = server.connect();
    let payload_a = populate(&mut admin, &a);
    let payload_b = populate(&mut admin, &b);
    populate_town(&mut admin, &a);
    populate_town(&mut admin, &b);
    let rules = format!(
        "~exocortex:dreams:{{{a}}}:* ~tt:{{{a}}}:* resetchannels &tt:{{{a}}}:* -@all {DREAMS_COMMANDS} {TOWN_COMMANDS}"
    );
    set_user(&server, "tenant-a", &rules);
    let mut user = server.connect();
    cmd(&["AUTH", "tenant-a", "pw"]).query::<()>(&mut user).unwrap();

    let theirs: Vec<Vec<String>> = every_command(&b, &payload_b).into_iter().chain(every_town_command(&b)).collect();
    let named: BTreeSet<&str> = theirs.iter().map(|call| call[0].as_str()).collect();
    assert_eq!(named.len(), FLAGS.len() + TOWN.len(), "every module command is tried");
    for call in &theirs {
        let before = server.digest();
        let started = std::time::Instant::now();
        let error = run(&mut user, call).expect_err(&format!("{call:?} on another tenant must be refused"));
        assert!(is_noperm(&error) && error.contains(&format!("{{{b}}}")), "{call:?}: {error}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{call:?}: refused at once, never blocked");
        assert_eq!(server.digest(), before, "{call:?} changed nothing");
    }
    let log: Value = cmd(&["ACL", "LOG"]).query(&mut admin).unwrap();
    let log = format!("{log:?}");
    assert!(log.contains("tenant-a") && log.contains(&format!("{{{b}}}")), "refusals are in the ACL log: {log}");

    let before = server.digest();
    for call in every_command(&a, &payload_a) {
        let done = run(&mut user, &call);
        assert!(done.is_ok(), "{} on its own tenant: {done:?}", call[0]);
    }
    assert_ne!(server.digest(), before, "its own work went through");
    let lengths: Vec<i64> = cmd(&["DREAMS.LEN", &a]).query(&mut admin).unwrap();
    assert_eq!(lengths, vec![2, 0, 0], "acked one, drained one, recovered it: two ready");

    for call in every_town_command(&a) {
        let before = server.digest();
        let done = run(&mut user, &call);
        assert!(done.is_ok(), "{call:?} on its own town: {done:?}");
        if !matches!(call[0].as_str(), "TOWN.LEN" | "TOWN.PEEK" | "TOWN.BROADCAST")
            && !matches!(call.get(1).map(String::as_str), Some("CHECK" | "GET" | "LIST" | "BYNAME" | "LEN"))
        {
            assert_ne!(server.digest(), before, "{call:?} did its work");
        }
    }
    let left: Vec<String> = cmd(&["KEYS", &format!("tt:{{{a}}}:*")]).query(&mut admin).unwrap();
    assert!(left.is_empty(), "its own reset went through: {left:?}");
    let theirs_left: Vec<String> = cmd(&["KEYS", &format!("tt:{{{b}}}:*")]).query(&mut admin).unwrap();
    assert!(theirs_left.len() >= 8, "the other town is intact: {theirs_left:?}");
}

#[test]
fn broadcasting_needs_the_towns_channel_which_redis_7_0_does_not_grant_by_default() {
    let server = Server::start();
    let town = tenant("acl-channel");
    let mut admin = server.connect();
    let default: Vec<String> = cmd(&["CONFIG", "GET", "acl-pubsub-default"]).query(&mut admin).unwrap();
    assert_eq!(default, ["acl-pubsub-default", "resetchannels"], "a new user gets no channels");
    // Keys alone: every other TOWN command works, BROADCAST is refused.
    set_user(&server, "keys-only", &format!("~tt:{{{town}}}:* -@all {TOWN_COMMANDS}"));
    let mut user = server.connect();
    cmd(&["AUTH", "keys-only", "pw"]).query::<()>(&mut user).unwrap();
    let broadcast = owned(vec![vec!["TOWN.BROADCAST", &town, "{}"]]).remove(0);
    let before = server.digest();
    let error = run(&mut user, &broadcast).unwrap_err();
    assert!(is_noperm(&error) && error.contains(&format!("channel 'tt:{{{town}}}:broadcast'")), "{error}");
    assert_eq!(server.digest(), before);
    let send = owned(vec![vec!["TOWN.SEND", &town, &message("m", "a", "normal")]]).remove(0);
    assert!(run(&mut user, &send).is_ok());
    // With the channel pattern of the recipe, it is allowed.
    set_user(&server, "keys-only", &format!("~tt:{{{town}}}:* &tt:{{{town}}}:* -@all {TOWN_COMMANDS}"));
    assert_eq!(run(&mut user, &broadcast), Ok(Value::Int(0)));
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
    populate_town(&mut admin, &org);
    let rules = format!("%R~exocortex:dreams:{{{org}}}:* %R~tt:{{{org}}}:* -@all {DREAMS_COMMANDS} {TOWN_COMMANDS}");
    set_user(&server, "viewer", &rules);
    let mut user = server.connect();
    cmd(&["AUTH", "viewer", "pw"]).query::<()>(&mut user).unwrap();

    let lengths: Vec<i64> = cmd(&["DREAMS.LEN", &org]).query(&mut user).unwrap();
    assert_eq!(lengths, vec![1, 0, 0]);
    let counters: Value = cmd(&["DREAMS.COUNTERS", &org, "web", "1"]).query(&mut user).unwrap();
    assert_eq!(counters, Value::Array(vec![]));
    let t = org.as_str();
    // A town dashboard: every read works.
    for call in [
        vec!["TOWN.LEN", t, "a"],
        vec!["TOWN.PEEK", t, "a", "10"],
        vec!["TOWN.STOP", "CHECK", t, "a"],
        vec!["TOWN.AGENT", "GET", t, "a"],
        vec!["TOWN.AGENT", "LIST", t],
        vec!["TOWN.AGENT", "BYNAME", t, "alice"],
        vec!["TOWN.TASK", "GET", t, "t1"],
        vec!["TOWN.TASK", "LIST", t],
        vec!["TOWN.ACTIVITY", "GET", t, "a"],
        vec!["TOWN.BACKLOG", "LIST", t],
        vec!["TOWN.BACKLOG", "LEN", t],
    ] {
        let read = common::run(&mut user, &call.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
        assert!(read.is_ok(), "{call:?}: {read:?}");
    }
    let before = server.digest();
    let send = message("m9", "a", "normal");
    for call in [
        vec!["DREAMS.FIRE", t, "web", "1"],
        vec!["DREAMS.DRAIN", t, "0.1"],
        vec!["DREAMS.RECOVER", t],
        vec!["TOWN.SEND", t, &send],
        vec!["TOWN.RECV", t, "a"],
        vec!["TOWN.STOP", "CLEAR", t, "a"],
        vec!["TOWN.AGENT", "SET", t, "a", "name", "x"],
        vec!["TOWN.AGENT", "HEARTBEAT", t, "a"],
        vec!["TOWN.ACTIVITY", "LOG", t, "a", "x"],
        vec!["TOWN.BACKLOG", "POP", t],
        vec!["TOWN.RESET", t],
    ] {
        let error = common::run(&mut user, &call.iter().map(|s| s.as_bytes()).collect::<Vec<_>>()).unwrap_err();
        assert!(is_noperm(&error), "{:?}: {error}", call);
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
    let fire =
        |con: &mut redis::Connection, org: &str| common::run(con, &[b"DREAMS.FIRE", org.as_bytes(), b"web", b"1"]);
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

/// `@dreamtown` survives `MODULE UNLOAD` / `MODULE LOAD`: the server keeps
/// a module's categories after unloading it, so the reload finds the name
/// taken (EBUSY) and uses it, and a user granted `+@dreamtown` before keeps
/// the commands. Only where the server has module categories.
#[test]
fn the_dreamtown_category_survives_a_module_reload() {
    let server = Server::start_with(&["--enable-module-command", "yes"]);
    let mut admin = server.connect();
    if acl_support(&mut admin) != AclSupport::ModuleCategory {
        return;
    }
    set_user(&server, "whole-module", "~* &* +@dreamtown");
    if !common::unload_module(&mut admin).expect("MODULE UNLOAD") {
        return; // Valkey 8.1: kept loaded (glue::unload_guard), nothing to reload.
    }
    let module = common::module_path().display().to_string();
    cmd(&["MODULE", "LOAD", &module]).query::<()>(&mut admin).unwrap();
    let categories: BTreeSet<String> = strings(&command_info(&mut admin, "DREAMS.FIRE")[6]).into_iter().collect();
    assert!(categories.contains("@dreamtown"), "{categories:?}");
    let org = tenant("acl-reload");
    let mut user = server.connect_as("whole-module", "pw");
    assert_eq!(
        run(&mut user, &owned(vec![vec!["DREAMS.FIRE", &org, "p", "1"]]).remove(0)).unwrap(),
        Value::SimpleString("queued".into())
    );
    let refused = run(&mut user, &owned(vec![vec!["SET", &org, "1"]]).remove(0)).unwrap_err();
    assert!(is_noperm(&refused), "{refused}");
}

/// A subcommand is a command for ACL: `+TOWN.AGENT` grants every
/// subcommand of it, `+TOWN.AGENT|GET` that one alone (the old build had
/// no subcommands: the rule was an error). A refusal changes nothing.
#[test]
fn a_rule_may_grant_one_subcommand_or_the_whole_command() {
    let server = Server::start();
    let mut admin = server.connect();
    let town = tenant("acl-sub");
    populate_town(&mut admin, &town);
    let t = town.as_str();
    set_user(&server, "whole", &format!("~tt:{{{town}}}:* -@all +town.agent"));
    set_user(&server, "reader", &format!("~tt:{{{town}}}:* -@all +town.agent|get +town.agent|list"));
    let get = owned(vec![vec!["TOWN.AGENT", "GET", t, "a"]]).remove(0);
    let list = owned(vec![vec!["TOWN.AGENT", "LIST", t]]).remove(0);
    let heartbeat = owned(vec![vec!["TOWN.AGENT", "HEARTBEAT", t, "a"]]).remove(0);
    let set = owned(vec![vec!["TOWN.AGENT", "SET", t, "a", "name", "bob"]]).remove(0);
    let task = owned(vec![vec!["TOWN.TASK", "GET", t, "t1"]]).remove(0);

    let mut whole = server.connect_as("whole", "pw");
    for call in [&get, &list, &heartbeat, &set] {
        assert!(run(&mut whole, call).is_ok(), "+town.agent grants {call:?}");
    }
    let error = run(&mut whole, &task).unwrap_err();
    assert!(is_noperm(&error), "{error}");

    let mut reader = server.connect_as("reader", "pw");
    assert!(run(&mut reader, &get).is_ok());
    assert!(run(&mut reader, &list).is_ok());
    for call in [&heartbeat, &set] {
        let before = server.digest();
        let error = run(&mut reader, call).unwrap_err();
        assert!(is_noperm(&error) && error.to_lowercase().contains("town.agent|"), "{call:?}: {error}");
        assert_eq!(server.digest(), before, "{call:?} refused: nothing changed");
    }
}
