//! Redis decides OOM and READONLY for the module's commands as for their
//! native analogues (issue 32, points 3, 4 and 5): the TOWN.* subcommands
//! are real Redis subcommands with their own flags, key specs, docs and
//! HELP; acknowledging is allowed when memory is full, as XACK and LREM.
//! The per-command table is docs/town.md's "OOM and replicas".

use crate::common;

use std::collections::BTreeSet;

use common::{cmd, run, tenant, wait_until, Server};
use redis::Value;

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

fn call(con: &mut redis::Connection, args: &[&str]) -> Result<Value, String> {
    run(con, &args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>())
}

fn ok(con: &mut redis::Connection, args: &[&str]) -> Value {
    call(con, args).unwrap_or_else(|error| panic!("{args:?}: {error}"))
}

fn message(id: &str, to: &str) -> String {
    format!(
        r#"{{"id":"{id}","from":"boss","to":"{to}","type":"task","priority":"normal","created_at":"2024-01-01T00:00:00Z","payload":{{}}}}"#
    )
}

/// Every read subcommand of a town, on `t` (populated by [`populate`]).
fn reads(t: &str) -> Vec<Vec<String>> {
    [
        vec!["TOWN.AGENT", "GET", t, "a"],
        vec!["TOWN.AGENT", "LIST", t],
        vec!["TOWN.AGENT", "BYNAME", t, "alice"],
        vec!["TOWN.TASK", "GET", t, "t1"],
        vec!["TOWN.TASK", "LIST", t],
        vec!["TOWN.BACKLOG", "LIST", t],
        vec!["TOWN.BACKLOG", "LEN", t],
        vec!["TOWN.STOP", "CHECK", t, "a"],
        vec!["TOWN.ACTIVITY", "GET", t, "a"],
    ]
    .into_iter()
    .map(|call| call.into_iter().map(str::to_owned).collect())
    .collect()
}

/// Every write subcommand of a town, on `t`.
fn writes(t: &str) -> Vec<Vec<String>> {
    [
        vec!["TOWN.AGENT", "SET", t, "b", "name", "bob"],
        vec!["TOWN.AGENT", "DEL", t, "a"],
        vec!["TOWN.AGENT", "INCR", t, "a", "ROUNDS"],
        vec!["TOWN.AGENT", "HEARTBEAT", t, "a"],
        vec!["TOWN.TASK", "SET", t, "t2", "id", "t2"],
        vec!["TOWN.TASK", "DEL", t, "t1"],
        vec!["TOWN.BACKLOG", "PUSH", t, "t2"],
        vec!["TOWN.BACKLOG", "POP", t],
        vec!["TOWN.BACKLOG", "REMOVE", t, "t1"],
        vec!["TOWN.STOP", "REQUEST", t, "a"],
        vec!["TOWN.STOP", "CLEAR", t, "a"],
        vec!["TOWN.ACTIVITY", "LOG", t, "a", "x"],
    ]
    .into_iter()
    .map(|call| call.into_iter().map(str::to_owned).collect())
    .collect()
}

fn as_strs(call: &[String]) -> Vec<&str> {
    call.iter().map(String::as_str).collect()
}

/// Agent `a` (alice) with a stop flag and activity, task `t1` in the backlog.
fn populate(con: &mut redis::Connection, t: &str) {
    ok(con, &["TOWN.AGENT", "SET", t, "a", "name", "alice", "rounds_completed", "0", "tasks_completed", "0"]);
    ok(con, &["TOWN.TASK", "SET", t, "t1", "id", "t1"]);
    ok(con, &["TOWN.BACKLOG", "PUSH", t, "t1"]);
    ok(con, &["TOWN.STOP", "REQUEST", t, "a"]);
    ok(con, &["TOWN.ACTIVITY", "LOG", t, "a", "started"]);
}

/// Under `allkeys-lru` at the limit Redis evicts before each command and
/// refuses a `denyoom` one only when eviction fails: the subcommands that
/// add data never answer OOM, as HSET beside them never does. The old
/// build checked the OOM flag itself after Redis had evicted, and answered
/// OOM on some of them.
#[test]
fn under_an_evicting_policy_the_writing_subcommands_never_answer_oom() {
    let server = Server::start_with(&["--maxmemory", "3mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut con = server.connect();
    let t = tenant("lru");
    let filler = "x".repeat(4_000);
    let text = "y".repeat(2_000);
    let mut refused = Vec::new();
    for i in 0..1_500 {
        let n = i.to_string();
        let key = format!("filler:{i}");
        let calls: [Vec<&str>; 5] = [
            vec!["HSET", &key, "f", &filler],
            vec!["TOWN.AGENT", "SET", &t, &n, "name", &text],
            vec!["TOWN.TASK", "SET", &t, &n, "id", &text],
            vec!["TOWN.BACKLOG", "PUSH", &t, &n],
            vec!["TOWN.ACTIVITY", "LOG", &t, &n, &text],
        ];
        for args in &calls {
            if let Err(error) = call(&mut con, args) {
                refused.push(format!("{}: {error}", args[..2].join(" ")));
            }
        }
    }
    let info: String = redis::cmd("INFO").arg("stats").query(&mut con).unwrap();
    let evicted: u64 = info
        .lines()
        .find_map(|line| line.strip_prefix("evicted_keys:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(evicted > 0, "the loop filled memory: Redis evicted");
    assert!(refused.is_empty(), "{} refusals, first: {:?}", refused.len(), refused.first());
}

/// On a replica every read subcommand answers (the old build's commands
/// were all `write`: READONLY), every write subcommand is READONLY.
#[test]
fn on_a_replica_reads_answer_and_writes_are_readonly() {
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    let t = tenant("replica");
    populate(&mut con, &t);
    let mut rcon = replica.connect();
    wait_until("the replica has the town", || replica.digest() == master.digest());
    for read in reads(&t) {
        let args = as_strs(&read);
        let here = call(&mut rcon, &args).unwrap_or_else(|error| panic!("{read:?} on the replica: {error}"));
        let there = ok(&mut con, &args);
        assert_eq!(here, there, "{read:?}: the replica answers as the master");
    }
    let before = replica.digest();
    for write in writes(&t) {
        let error = call(&mut rcon, &as_strs(&write)).expect_err("a write on a replica");
        assert!(error.to_uppercase().starts_with("READONLY"), "{write:?}: {error}");
    }
    assert_eq!(replica.digest(), before);
}

/// `noeviction` with memory full: adding work is refused (FIRE, RECORD,
/// TOWN.SEND and the adding subcommands), finishing it is not (DREAMS.ACK,
/// SETTLE, EXTEND, RECOVER, TOWN.ACK, REQUEUE, RECLAIM, RESET, and the
/// deleting subcommands): workers can acknowledge the work whose
/// acknowledgement frees memory, as with XACK and LREM. The old build
/// refused DREAMS.ACK and DREAMS.SETTLE.
#[test]
fn with_memory_full_acknowledging_works_and_adding_is_refused() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("oom");
    let t = tenant("oom-town");
    // Two items in flight, a recorded effect to settle.
    ok(&mut con, &["DREAMS.FIRE", &org, "web", "1"]);
    ok(&mut con, &["DREAMS.FIRE", &org, "api", "1"]);
    ok(&mut con, &["DREAMS.RECORD", &org, "web", "3", "1", "1", "EVENT", "e1", "GENERATION", "1"]);
    let first = text(&ok(&mut con, &["DREAMS.DRAIN", &org, "1", "NOQUIET", "LEASE", "60"]));
    let second = text(&ok(&mut con, &["DREAMS.DRAIN", &org, "1", "NOQUIET", "LEASE", "60"]));
    populate(&mut con, &t);
    for id in ["m1", "m2"] {
        ok(&mut con, &["TOWN.SEND", &t, &message(id, "a")]);
    }
    ok(&mut con, &["TOWN.RECV", &t, "a", "COUNT", "2", "RELIABLE", "LEASE", "60"]);

    ok(&mut con, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "1"]);
    let m3 = message("m3", "a");
    let refused: [Vec<&str>; 8] = [
        vec!["DREAMS.FIRE", &org, "web", "2"],
        vec!["DREAMS.RECORD", &org, "web", "4", "1", "1"],
        vec!["DREAMS.DRAIN", &org, "0.1", "NOQUIET"],
        vec!["TOWN.SEND", &t, &m3],
        vec!["TOWN.AGENT", "SET", &t, "b", "name", "bob"],
        vec!["TOWN.TASK", "SET", &t, "t2", "id", "t2"],
        vec!["TOWN.BACKLOG", "PUSH", &t, "t2"],
        vec!["TOWN.ACTIVITY", "LOG", &t, "a", "x"],
    ];
    let before = server.digest();
    for args in &refused {
        let error = call(&mut con, args).expect_err("an addition with memory full");
        assert!(error.starts_with("OOM") || error.contains("OOM"), "{args:?}: {error}");
    }
    assert_eq!(server.digest(), before, "the refusals changed nothing");

    let allowed: Vec<Vec<&str>> = vec![
        vec!["DREAMS.EXTEND", &org, &first, "120"],
        vec!["DREAMS.ACK", &org, &first, "SUCCESS"],
        vec!["DREAMS.SETTLE", &org, "web", "3", "e1", "1"],
        vec!["DREAMS.RECOVER", &org],
        vec!["TOWN.EXTEND", &t, "a", "m1", "120"],
        vec!["TOWN.ACK", &t, "a", "m1"],
        vec!["TOWN.REQUEUE", &t, "a"],
        vec!["TOWN.RECLAIM", &t, "a", "c"],
        vec!["TOWN.BACKLOG", "POP", &t],
        vec!["TOWN.STOP", "CLEAR", &t, "a"],
        vec!["TOWN.TASK", "DEL", &t, "t1"],
        vec!["TOWN.AGENT", "DEL", &t, "a"],
        vec!["TOWN.RESET", &t],
    ];
    for args in &allowed {
        call(&mut con, args).unwrap_or_else(|error| panic!("{args:?} with memory full: {error}"));
    }
    // The acknowledged item is gone; the other one went back to ready.
    let lengths: Vec<i64> = cmd(&["DREAMS.LEN", &org]).query(&mut con).unwrap();
    assert_eq!(lengths, vec![1, 0, 0], "acked {first}, recovered {second}");
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
}

/// `COMMAND INFO` / `COMMAND DOCS` show each subcommand with its own flags,
/// its tenant key spec after the subcommand's name (argv[2]) and its docs;
/// `COMMAND GETKEYS` treats the tenant as the plain commands' (a `NOT_KEY`
/// spec, which GETKEYS leaves out: "no key arguments"; cluster routing
/// reads it).
#[test]
fn command_info_and_docs_show_the_subcommands() {
    let server = Server::start();
    let mut con = server.connect();
    let info = ok(&mut con, &["COMMAND", "INFO", "TOWN.AGENT"]);
    let rendered = format!("{info:?}");
    for sub in ["set", "get", "del", "list", "byname", "incr", "heartbeat", "help"] {
        assert!(rendered.to_lowercase().contains(&format!("town.agent|{sub}")), "{sub}: {rendered}");
    }
    for (name, flags) in [
        ("TOWN.AGENT|GET", &["readonly"][..]),
        ("TOWN.AGENT|SET", &["write", "denyoom", "fast"][..]),
        ("TOWN.BACKLOG|LEN", &["readonly", "fast"][..]),
        ("TOWN.BACKLOG|POP", &["write", "fast"][..]),
        ("TOWN.STOP|CHECK", &["readonly", "fast"][..]),
        ("TOWN.ACTIVITY|LOG", &["write", "denyoom", "fast"][..]),
        ("TOWN.TASK|LIST", &["readonly"][..]),
    ] {
        let Value::Array(entries) = ok(&mut con, &["COMMAND", "INFO", name]) else { panic!("{name}") };
        let Some(Value::Array(fields)) = entries.first() else { panic!("{name} not registered: {entries:?}") };
        let Value::Array(actual) = &fields[2] else { panic!("{fields:?}") };
        let actual: BTreeSet<String> = actual.iter().map(text).filter(|f| f != "module").collect();
        let wanted: BTreeSet<String> = flags.iter().map(|f| f.to_string()).collect();
        assert_eq!(actual, wanted, "{name} flags");
        assert_eq!(&fields[3..6], &[Value::Int(2), Value::Int(2), Value::Int(1)], "{name}: the tenant is argv[2]");
        let specs = format!("{:?}", fields[8]).to_lowercase();
        let access = if flags.contains(&"readonly") { "\"ro\"" } else { "\"rw\"" };
        assert!(specs.contains("not_key") && specs.contains(access) && specs.contains("int(2)"), "{name}: {specs}");
    }
    let docs = format!("{:?}", ok(&mut con, &["COMMAND", "DOCS", "TOWN.STOP"])).to_lowercase();
    for part in ["town.stop|request", "town.stop|check", "town.stop|clear", "summary", "complexity", "ttl", "agent-id"]
    {
        assert!(docs.contains(part), "COMMAND DOCS TOWN.STOP lacks {part}: {docs}");
    }
    // The tenant is no key for GETKEYS, as for every module command.
    let plain = call(&mut con, &["COMMAND", "GETKEYS", "TOWN.LEN", "t", "a"]);
    let sub = call(&mut con, &["COMMAND", "GETKEYS", "TOWN.AGENT", "GET", "t", "a"]);
    assert_eq!(sub, plain, "a subcommand's tenant is declared as a plain command's");
}

/// Each container answers HELP as `XINFO HELP` does; the old order and an
/// unknown subcommand get Redis's own error naming HELP; a bare container
/// is an arity error.
#[test]
fn help_and_wrong_subcommands() {
    let server = Server::start();
    let mut con = server.connect();
    for (container, subs) in [
        ("TOWN.AGENT", &["SET", "GET", "DEL", "LIST", "BYNAME", "INCR", "HEARTBEAT"][..]),
        ("TOWN.TASK", &["SET", "GET", "DEL", "LIST"][..]),
        ("TOWN.BACKLOG", &["PUSH", "POP", "LIST", "LEN", "REMOVE"][..]),
        ("TOWN.ACTIVITY", &["LOG", "GET"][..]),
        ("TOWN.STOP", &["REQUEST", "CHECK", "CLEAR"][..]),
    ] {
        let Value::Array(lines) = ok(&mut con, &[container, "help"]) else { panic!("{container} HELP") };
        let lines: Vec<String> = lines.iter().map(text).collect();
        assert_eq!(
            lines.first().map(String::as_str),
            Some(&*format!("{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"))
        );
        for sub in subs {
            assert!(
                lines.iter().any(|line| line.starts_with(&format!("{sub} <town>"))),
                "{container} HELP lacks {sub}: {lines:?}"
            );
        }
        assert_eq!(lines.iter().rev().nth(1).map(String::as_str), Some("HELP"));
        let wrong = call(&mut con, &[container, "t", subs[0], "a"]).unwrap_err();
        assert!(wrong.contains(&format!("unknown subcommand 't'. Try {container} HELP.")), "{wrong}");
        let bare = call(&mut con, &[container]).unwrap_err();
        assert!(bare.contains("wrong number of arguments"), "{bare}");
    }
    let keys: i64 = cmd(&["DBSIZE"]).query(&mut con).unwrap();
    assert_eq!(keys, 0, "nothing was written");
}
