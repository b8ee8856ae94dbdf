//! Tenant isolation under every ACL form, held against Redis itself: for
//! every command and subcommand, under plain key patterns, `%R~`/`%W~`,
//! two selectors mixing commands and tenants (and read and write rights),
//! and channels, the module's verdict (`NOPERM` or not) on the user's own
//! tenant and on another is exactly the verdict Redis gives the command's
//! native analogue in the same configuration, with the same rules granting
//! both. A refusal changes nothing (`DEBUG DIGEST`), and `ACL DRYRUN`
//! answers what the real call did.
//!
//! The analogue of a command is the native command with the access it
//! needs (docs/operations.md, "ACL"): `LLEN` for a command that only looks
//! at types and lengths, `LRANGE` for one that reads values, `RPUSH` for one
//! that writes without reading, `LPOP` for one that reads and writes,
//! `PUBLISH` for the broadcast channel; run on a key (or channel) in the
//! same tenant's namespace.

use crate::common;

use common::{tenant, Server};
use redis::{Connection, Value};

/// What a command does with its tenant's keys, and so its native analogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    /// Types and lengths only: `LLEN`.
    Meta,
    /// Reads values: `LRANGE`.
    Read,
    /// Writes without reading values: `RPUSH`.
    Write,
    /// Reads and writes: `LPOP`.
    ReadWrite,
    /// Publishes to the town's broadcast channel: `PUBLISH`.
    Publish,
}

/// One module command in the matrix.
struct Case {
    /// Its ACL rule (`+town.agent|get`).
    rule: &'static str,
    /// Its keys' prefix before the tenant's hash tag.
    prefix: &'static str,
    access: Access,
    /// The call; `{t}` is the tenant.
    call: &'static [&'static str],
    /// Run as the admin before each call (the state the call works on).
    before: &'static [&'static [&'static str]],
}

const DREAMS: &str = "exocortex:dreams:";
const TOWN: &str = "tt:";

/// A fire of organization `{t}` (never drained: its fire id is no one's).
const FIRE: &str = r#"{"region":{"org":"{t}","project":"p","memory_type":1},"fired_by":"n","fire_id":"00000000-0000-4000-8000-000000000000"}"#;
const MESSAGE: &str = r#"{"id":"m-1","from":"x","to":"bob","type":"task","priority":"normal","payload":{}}"#;

const CASES: &[Case] = &[
    Case {
        rule: "+dreams.fire",
        prefix: DREAMS,
        access: Access::Write,
        call: &["DREAMS.FIRE", "{t}", "p", "1"],
        before: &[],
    },
    Case {
        rule: "+dreams.record",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.RECORD", "{t}", "p", "1", "1", "0"],
        before: &[],
    },
    Case {
        rule: "+dreams.settle",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.SETTLE", "{t}", "p", "1", "e-1", "1"],
        before: &[],
    },
    Case {
        rule: "+dreams.drain",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.DRAIN", "{t}", "0.01"],
        before: &[&["DREAMS.FIRE", "{t}", "q", "1"]],
    },
    Case {
        rule: "+dreams.ack",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.ACK", "{t}", FIRE, "SUCCESS"],
        before: &[],
    },
    Case {
        rule: "+dreams.extend",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.EXTEND", "{t}", FIRE, "30"],
        before: &[],
    },
    Case {
        rule: "+dreams.recover",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.RECOVER", "{t}"],
        before: &[],
    },
    Case {
        rule: "+dreams.redrive",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.REDRIVE", "{t}"],
        before: &[&["RPUSH", "exocortex:dreams:{{t}}:dead", "x"]],
    },
    Case { rule: "+dreams.len", prefix: DREAMS, access: Access::Meta, call: &["DREAMS.LEN", "{t}"], before: &[] },
    Case {
        rule: "+dreams.counters",
        prefix: DREAMS,
        access: Access::Read,
        call: &["DREAMS.COUNTERS", "{t}", "p", "1"],
        before: &[],
    },
    Case {
        rule: "+dreams.inflight",
        prefix: DREAMS,
        access: Access::Read,
        call: &["DREAMS.INFLIGHT", "{t}"],
        before: &[],
    },
    Case { rule: "+dreams.stats", prefix: DREAMS, access: Access::Read, call: &["DREAMS.STATS", "{t}"], before: &[] },
    // Fair shares: the limits key is read and written to change it, read
    // (with the in-flight list's length) to show it.
    Case {
        rule: "+dreams.limit|set",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.LIMIT", "SET", "{t}", "CONCURRENCY", "2"],
        before: &[],
    },
    Case {
        rule: "+dreams.limit|get",
        prefix: DREAMS,
        access: Access::Read,
        call: &["DREAMS.LIMIT", "GET", "{t}"],
        before: &[&["DREAMS.LIMIT", "SET", "{t}", "RATE", "5", "60"]],
    },
    Case {
        rule: "+dreams.limit|clear",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.LIMIT", "CLEAR", "{t}"],
        before: &[&["DREAMS.LIMIT", "SET", "{t}", "CONCURRENCY", "3"]],
    },
    Case {
        rule: "+dreams.pause",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.PAUSE", "{t}"],
        before: &[],
    },
    Case {
        rule: "+dreams.resume",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.RESUME", "{t}"],
        before: &[&["DREAMS.PAUSE", "{t}"]],
    },
    // A drain of an organization with a cap reads its limits key, and
    // with a rate writes it: the drain stays a read-and-write (`LMOVE`).
    Case {
        rule: "+dreams.drain",
        prefix: DREAMS,
        access: Access::ReadWrite,
        call: &["DREAMS.DRAIN", "{t}", "0.01"],
        before: &[
            &["DREAMS.FIRE", "{t}", "q", "1"],
            &["DREAMS.LIMIT", "SET", "{t}", "CONCURRENCY", "5", "RATE", "100", "1"],
        ],
    },
    Case { rule: "+town.send", prefix: TOWN, access: Access::Write, call: &["TOWN.SEND", "{t}", MESSAGE], before: &[] },
    Case {
        rule: "+town.recv",
        prefix: TOWN,
        access: Access::ReadWrite,
        call: &["TOWN.RECV", "{t}", "bob", "RELIABLE"],
        before: &[&["TOWN.SEND", "{t}", MESSAGE]],
    },
    Case {
        rule: "+town.ack",
        prefix: TOWN,
        access: Access::ReadWrite,
        call: &["TOWN.ACK", "{t}", "bob", "m-1"],
        before: &[],
    },
    Case {
        rule: "+town.requeue",
        prefix: TOWN,
        access: Access::ReadWrite,
        call: &["TOWN.REQUEUE", "{t}", "bob"],
        before: &[],
    },
    Case {
        rule: "+town.extend",
        prefix: TOWN,
        access: Access::ReadWrite,
        call: &["TOWN.EXTEND", "{t}", "bob", "m-1", "30"],
        before: &[],
    },
    Case { rule: "+town.len", prefix: TOWN, access: Access::Meta, call: &["TOWN.LEN", "{t}", "bob"], before: &[] },
    Case {
        rule: "+town.peek",
        prefix: TOWN,
        access: Access::Read,
        call: &["TOWN.PEEK", "{t}", "bob", "5"],
        before: &[],
    },
    Case {
        rule: "+town.reclaim",
        prefix: TOWN,
        access: Access::ReadWrite,
        call: &["TOWN.RECLAIM", "{t}", "bob", "carol"],
        before: &[&["TOWN.SEND", "{t}", MESSAGE]],
    },
    Case {
        rule: "+town.broadcast",
        prefix: TOWN,
        access: Access::Publish,
        call: &["TOWN.BROADCAST", "{t}", "{}"],
        before: &[],
    },
    Case {
        rule: "+town.reset",
        prefix: TOWN,
        access: Access::ReadWrite,
        call: &["TOWN.RESET", "{t}"],
        before: &[&["TOWN.AGENT", "SET", "{t}", "ann", "name", "Ann"]],
    },
    Case { rule: "+town.stats", prefix: TOWN, access: Access::Read, call: &["TOWN.STATS", "{t}"], before: &[] },
    Case {
        rule: "+town.agent|set",
        prefix: TOWN,
        access: Access::Write,
        call: &["TOWN.AGENT", "SET", "{t}", "ann", "name", "Ann"],
        before: &[],
    },
    Case {
        rule: "+town.agent|get",
        prefix: TOWN,
        access: Access::Read,
        call: &["TOWN.AGENT", "GET", "{t}", "ann"],
        before: &[],
    },
    Case {
        rule: "+town.agent|del",
        prefix: TOWN,
        access: Access::Write,
        call: &["TOWN.AGENT", "DEL", "{t}", "ann"],
        before: &[],
    },
    Case {
        rule: "+town.agent|list",
        prefix: TOWN,
        access: Access::Read,
        call: &["TOWN.AGENT", "LIST", "{t}"],
        before: &[&["TOWN.AGENT", "SET", "{t}", "ann", "name", "Ann"]],
    },
    Case {
        rule: "+town.agent|byname",
        prefix: TOWN,
        access: Access::Read,
        call: &["TOWN.AGENT", "BYNAME", "{t}", "Ann"],
        before: &[&["TOWN.AGENT", "SET", "{t}", "ann", "name", "Ann"]],
    },
    Case {
        rule: "+town.agent|incr",
        prefix: TOWN,
        access: Access::ReadWrite,
        call: &["TOWN.AGENT", "INCR", "{t}", "ann", "ROUNDS"],
        before: &[&["TOWN.AGENT", "SET", "{t}", "ann", "name", "Ann"]],
    },
    Case {
        rule: "+town.agent|heartbeat",
        prefix: TOWN,
        access: Access::Write,
        call: &["TOWN.AGENT", "HEARTBEAT", "{t}", "ann"],
        before: &[&["TOWN.AGENT", "SET", "{t}", "ann", "name", "Ann"]],
    },
    Case {
        rule: "+town.task|set",
        prefix: TOWN,
        access: Access::Write,
        call: &["TOWN.TASK", "SET", "{t}", "t-1", "state", "open"],
        before: &[],
    },
    Case {
        rule: "+town.task|get",
        prefix: TOWN,
        access: Access::Read,
        call: &["TOWN.TASK", "GET", "{t}", "t-1"],
        before: &[],
    },
    Case {
        rule: "+town.task|del",
        prefix: TOWN,
        access: Access::Write,
        call: &["TOWN.TASK", "DEL", "{t}", "t-1"],
        before: &[],
    },
    Case {
        rule: "+town.task|list",
        prefix: TOWN,
        access: Access::Read,
        call: &["TOWN.TASK", "LIST", "{t}"],
        before: &[&["TOWN.TASK", "SET", "{t}", "t-1", "state", "open"]],
    },
    Case {
        rule: "+town.backlog|push",
        prefix: TOWN,
        access: Access::Write,
        call: &["TOWN.BACKLOG", "PUSH", "{t}", "t-1"],
        before: &[],
    },
    Case {
        rule: "+town.backlog|pop",
        prefix: TOWN,
        access: Access::ReadWrite,
        call: &["TOWN.BACKLOG", "POP", "{t}"],
        before: &[&["TOWN.BACKLOG", "PUSH", "{t}", "t-1"]],
    },
    Case {
        rule: "+town.backlog|list",
        prefix: TOWN,
        access: Access::Read,
        call: &["TOWN.BACKLOG", "LIST", "{t}"],
        before: &[],
    },
    Case {
        rule: "+town.backlog|len",
        prefix: TOWN,
        access: Access::Meta,
        call: &["TOWN.BACKLOG", "LEN", "{t}"],
        before: &[],
    },
    Case {
        rule: "+town.backlog|remove",
        prefix: TOWN,
        access: Access::Write,
        call: &["TOWN.BACKLOG", "REMOVE", "{t}", "t-1"],
        before: &[],
    },
    Case {
        rule: "+town.activity|log",
        prefix: TOWN,
        access: Access::Write,
        call: &["TOWN.ACTIVITY", "LOG", "{t}", "ann", "did a thing"],
        before: &[],
    },
    Case {
        rule: "+town.activity|get",
        prefix: TOWN,
        access: Access::Read,
        call: &["TOWN.ACTIVITY", "GET", "{t}", "ann"],
        before: &[],
    },
    Case {
        rule: "+town.stop|request",
        prefix: TOWN,
        access: Access::Write,
        call: &["TOWN.STOP", "REQUEST", "{t}", "ann"],
        before: &[],
    },
    Case {
        rule: "+town.stop|check",
        prefix: TOWN,
        access: Access::Meta,
        call: &["TOWN.STOP", "CHECK", "{t}", "ann"],
        before: &[],
    },
    Case {
        rule: "+town.stop|clear",
        prefix: TOWN,
        access: Access::Write,
        call: &["TOWN.STOP", "CLEAR", "{t}", "ann"],
        before: &[],
    },
];

/// The ACL configurations: `{K}` is the user's own tenant's key pattern
/// (`<prefix>{<own>}:*`), `{O}` another tenant's, `{CH}` the own town's
/// channel pattern, `{C}` the module command's rule and `{N}` its
/// analogue's (granted together, in the same selectors), `{X}` another
/// module command and its analogue (neither `{C}` nor `{N}`).
const CONFIGS: &[&str] = &[
    // Plain key patterns.
    "~{K} &* -@all {C} {N}",
    // Read-only and write-only patterns, and both.
    "%R~{K} &* -@all {C} {N}",
    "%W~{K} &* -@all {C} {N}",
    "%R~{K} %W~{K} &* -@all {C} {N}",
    // Two selectors mixing commands and tenants: the command with the own
    // tenant, a length command with the other (and the reverse).
    "~{K} &* -@all {C} {N} (~{O} &* -@all {X})",
    "~{O} &* -@all {X} (~{K} &* -@all {C} {N})",
    // Read rights in one selector, write rights in another.
    "%R~{K} &* -@all {C} {N} (%W~{K} &* -@all {C} {N})",
    // Channels: none, the own town's in a selector with the command, and
    // every channel in a selector without it.
    "~{K} resetchannels -@all {C} {N}",
    "~{K} resetchannels -@all {C} {N} (~{K} &{CH} -@all {C} {N})",
    "~{K} resetchannels -@all {C} {N} (&* -@all +ping)",
];

/// `call` with `{t}` made `tenant`.
fn fill(call: &[&str], tenant: &str) -> Vec<String> {
    call.iter().map(|arg| arg.replace("{t}", tenant)).collect()
}

fn run(con: &mut Connection, args: &[String]) -> Result<Value, String> {
    let mut cmd = redis::cmd(&args[0]);
    for arg in &args[1..] {
        cmd.arg(arg.as_str());
    }
    cmd.query(con).map_err(|error| error.to_string())
}

fn refused(outcome: &Result<Value, String>) -> bool {
    matches!(outcome, Err(error) if is_noperm(error))
}

/// A `NOPERM` error as the client crate prints it (`NoPerm: ...`).
fn is_noperm(error: &str) -> bool {
    error.to_ascii_uppercase().contains("NOPERM")
}

/// The analogue's rule and call, on `tenant`.
fn analogue(case: &Case, tenant: &str) -> (&'static str, Vec<String>) {
    let key = format!("{}{{{tenant}}}:analogue", case.prefix);
    let (rule, call): (&str, Vec<&str>) = match case.access {
        Access::Meta => ("+llen", vec!["LLEN", &key]),
        Access::Read => ("+lrange", vec!["LRANGE", &key, "0", "0"]),
        Access::Write => ("+rpush", vec!["RPUSH", &key, "v"]),
        Access::ReadWrite => ("+lpop", vec!["LPOP", &key]),
        Access::Publish => ("+publish", vec![]),
    };
    if case.access == Access::Publish {
        return ("+publish", vec!["PUBLISH".into(), format!("tt:{{{tenant}}}:broadcast"), "{}".into()]);
    }
    (rule, call.into_iter().map(String::from).collect())
}

fn digest(admin: &mut Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(admin).expect("DEBUG DIGEST")
}

/// What `ACL DRYRUN user <call>` answers: `None` for OK, else the text.
fn dry_run(admin: &mut Connection, user: &str, call: &[String]) -> Option<String> {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("DRYRUN").arg(user);
    for arg in call {
        cmd.arg(arg.as_str());
    }
    match cmd.query::<Value>(admin).expect("ACL DRYRUN") {
        Value::Okay => None,
        Value::SimpleString(ok) if ok == "OK" => None,
        Value::BulkString(text) => Some(String::from_utf8_lossy(&text).into_owned()),
        other => Some(format!("{other:?}")),
    }
}

#[test]
fn every_command_under_every_acl_form_is_judged_as_its_native_analogue() {
    let server = Server::start();
    let mut admin = server.connect();
    let own = tenant("own");
    let other = tenant("other");
    let mut checked = 0;
    for case in CASES {
        for config in CONFIGS {
            let (analogue_rule, _) = analogue(case, &own);
            let rules = config
                .replace("{K}", &format!("{}{{{own}}}:*", case.prefix))
                .replace("{O}", &format!("{}{{{other}}}:*", case.prefix))
                .replace("{CH}", &format!("tt:{{{own}}}:*"))
                .replace(
                    "{X}",
                    if case.access == Access::Meta { "+dreams.counters +lrange" } else { "+dreams.len +llen" },
                )
                .replace("{C}", case.rule)
                .replace("{N}", analogue_rule);
            let mut setuser = redis::cmd("ACL");
            setuser.arg("SETUSER").arg("matrix").arg("reset").arg("on").arg(">pw");
            for rule in split_rules(&rules) {
                setuser.arg(rule);
            }
            setuser.query::<()>(&mut admin).unwrap_or_else(|e| panic!("ACL SETUSER {rules}: {e}"));
            let mut user = server.connect_as("matrix", "pw");
            for tenant in [&own, &other] {
                for before in case.before {
                    run(&mut admin, &fill(before, tenant)).unwrap_or_else(|e| panic!("{before:?}: {e}"));
                }
                let call = fill(case.call, tenant);
                let (_, native) = analogue(case, tenant);
                let native_refused = refused(&run(&mut user, &native));
                let dry = dry_run(&mut admin, "matrix", &call);
                let before = digest(&mut admin);
                let outcome = run(&mut user, &call);
                let module_refused = refused(&outcome);
                assert_eq!(
                    module_refused, native_refused,
                    "{:?} under '{rules}' on {tenant}: module {outcome:?}, analogue {native:?} refused: {native_refused}",
                    call
                );
                if module_refused {
                    assert_eq!(digest(&mut admin), before, "{call:?} under '{rules}' was refused but changed the data");
                }
                assert_eq!(
                    dry.is_some(),
                    module_refused,
                    "ACL DRYRUN of {call:?} under '{rules}' answered {dry:?}, the call {outcome:?}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, CASES.len() * CONFIGS.len() * 2);
}

/// The rules of a configuration as `ACL SETUSER` arguments: a selector in
/// parentheses is one argument.
fn split_rules(rules: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut selector: Option<String> = None;
    for word in rules.split_whitespace() {
        match &mut selector {
            Some(open) => {
                open.push(' ');
                open.push_str(word);
                if word.ends_with(')') {
                    out.push(selector.take().unwrap_or_default());
                }
            }
            None if word.starts_with('(') && !word.ends_with(')') => selector = Some(word.to_string()),
            None => out.push(word.to_string()),
        }
    }
    out
}

#[test]
fn every_registered_command_is_in_the_matrix() {
    let server = Server::start();
    let mut con = server.connect();
    let names: Vec<Value> = redis::cmd("COMMAND").arg("LIST").query(&mut con).expect("COMMAND LIST");
    let mut module_commands: Vec<String> = names
        .into_iter()
        .filter_map(|v| match v {
            Value::BulkString(b) => Some(String::from_utf8_lossy(&b).to_ascii_lowercase()),
            _ => None,
        })
        .filter(|name| name.starts_with("dreams.") || name.starts_with("town."))
        .collect();
    module_commands.sort();
    for name in module_commands {
        let info: Value = redis::cmd("COMMAND").arg("INFO").arg(&name).query(&mut con).expect("COMMAND INFO");
        let subcommands = subcommand_names(&info);
        let runnable = if subcommands.is_empty() { vec![name.clone()] } else { subcommands };
        for full in runnable.into_iter().filter(|full| !full.ends_with("|help")) {
            let rule = format!("+{full}");
            assert!(CASES.iter().any(|case| case.rule == rule), "{full} is not in the ACL matrix");
        }
    }
}

/// The subcommand names (`town.agent|get`) in a `COMMAND INFO` reply.
fn subcommand_names(info: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect(info, &mut found);
    found
}

fn collect(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::BulkString(bytes) => {
            let text = String::from_utf8_lossy(bytes).to_ascii_lowercase();
            if text.contains('|') && !found.contains(&text) {
                found.push(text);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect(item, found)),
        _ => {}
    }
}

#[test]
fn a_script_calling_a_module_command_is_judged_as_one_calling_the_native_analogue() {
    let server = Server::start();
    let mut admin = server.connect();
    let (own, other) = (tenant("own"), tenant("other"));
    let rules = format!("reset on >pw ~tt:{{{own}}}:* &* -@all +eval +town.send +rpush (~tt:{{{other}}}:* &* -@all +eval +town.len +llen)");
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("scripted");
    for rule in split_rules(&rules) {
        setuser.arg(rule);
    }
    setuser.query::<()>(&mut admin).expect("ACL SETUSER");
    let mut user = server.connect_as("scripted", "pw");
    let send = "return redis.call('TOWN.SEND', ARGV[1], ARGV[2])";
    let push = "return redis.call('RPUSH', ARGV[1], 'v')";
    for (tenant, allowed) in [(&own, true), (&other, false)] {
        let module: Result<Value, _> =
            redis::cmd("EVAL").arg(send).arg(0).arg(tenant.as_str()).arg(MESSAGE).query(&mut user);
        let native: Result<Value, _> =
            redis::cmd("EVAL").arg(push).arg(0).arg(format!("tt:{{{tenant}}}:analogue")).query(&mut user);
        assert_eq!(module.is_ok(), allowed, "TOWN.SEND {tenant} in a script: {module:?}");
        assert_eq!(native.is_ok(), allowed, "RPUSH in {tenant} in a script: {native:?}");
    }
}

#[test]
fn a_refusal_is_logged_with_the_real_key_or_channel() {
    let server = Server::start();
    let mut admin = server.connect();
    let own = tenant("own");
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg("logged")
        .arg("reset")
        .arg("on")
        .arg(">pw")
        .arg(format!("~tt:{{{own}}}:*"))
        .arg("resetchannels")
        .arg("+town.send")
        .arg("+town.broadcast")
        .arg(format!("(~tt:{{{own}}}x:* +town.len)"))
        .query::<()>(&mut admin)
        .expect("ACL SETUSER");
    let mut user = server.connect_as("logged", "pw");
    redis::cmd("ACL").arg("LOG").arg("RESET").query::<()>(&mut admin).expect("ACL LOG RESET");
    let refused: Result<Value, _> = redis::cmd("TOWN.BROADCAST").arg(own.as_str()).arg("{}").query(&mut user);
    assert!(refused.is_err());
    let refused: Result<Value, _> = redis::cmd("TOWN.SEND").arg("elsewhere").arg(MESSAGE).query(&mut user);
    assert!(refused.is_err());
    let log: Value = redis::cmd("ACL").arg("LOG").query(&mut admin).expect("ACL LOG");
    let text = format!("{log:?}");
    assert!(text.contains("tt:{elsewhere}:inbox:bob"), "{text}");
    assert!(text.contains(&format!("tt:{{{own}}}:broadcast")), "{text}");
}

#[test]
fn acl_changes_apply_to_the_next_call_also_through_multi() {
    let server = Server::start();
    let mut admin = server.connect();
    let own = tenant("own");
    let set = |con: &mut Connection, keys: &str| {
        redis::cmd("ACL")
            .arg("SETUSER")
            .arg("changing")
            .arg("reset")
            .arg("on")
            .arg(">pw")
            .arg(keys)
            .arg("+town.send")
            .arg("(~nothing:* +town.len)")
            .query::<()>(con)
            .expect("ACL SETUSER");
    };
    set(&mut admin, &format!("~tt:{{{own}}}:*"));
    let mut user = server.connect_as("changing", "pw");
    let send = |con: &mut Connection| redis::cmd("TOWN.SEND").arg(own.as_str()).arg(MESSAGE).query::<Value>(con);
    assert!(send(&mut user).is_ok());
    // Queued in MULTI, the change applies at EXEC: the call after sees it.
    redis::cmd("MULTI").query::<()>(&mut admin).expect("MULTI");
    set(&mut admin, "~elsewhere:*");
    assert!(send(&mut user).is_ok(), "the queued change is not applied yet");
    redis::cmd("EXEC").query::<Value>(&mut admin).expect("EXEC");
    let refused = send(&mut user);
    assert!(matches!(&refused, Err(e) if is_noperm(&e.to_string())), "{refused:?}");
    set(&mut admin, &format!("~tt:{{{own}}}:*"));
    assert!(send(&mut user).is_ok());
    redis::cmd("ACL").arg("DELUSER").arg("changing").query::<()>(&mut admin).expect("ACL DELUSER");
}

#[test]
fn users_whose_selectors_cannot_be_evaluated_are_refused() {
    let server = Server::start();
    let mut admin = server.connect();
    let own = tenant("own");
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg("many").arg("reset").arg("on").arg(">pw").arg(format!("~tt:{{{own}}}:*")).arg("+@all");
    for n in 0..70 {
        setuser.arg(format!("(~other{n}:* +get)"));
    }
    setuser.query::<()>(&mut admin).expect("ACL SETUSER");
    let mut user = server.connect_as("many", "pw");
    let refused: Result<Value, _> = redis::cmd("TOWN.SEND").arg(own.as_str()).arg(MESSAGE).query(&mut user);
    let error = refused.expect_err("fails closed").to_string();
    assert!(is_noperm(&error) && error.contains("selectors"), "{error}");
    // Native commands are Redis's own business.
    redis::cmd("GET").arg(format!("tt:{{{own}}}:x")).query::<Value>(&mut user).expect("GET");
}

#[test]
fn acl_dryrun_of_module_commands_answers_as_acl_dryrun() {
    let server = Server::start();
    let mut admin = server.connect();
    let own = tenant("own");
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg("audited")
        .arg("reset")
        .arg("on")
        .arg(">pw")
        .arg(format!("~exocortex:dreams:{{{own}}}:*"))
        .arg("+dreams.fire")
        .query::<()>(&mut admin)
        .expect("ACL SETUSER");
    let dry = |con: &mut Connection, args: &[&str]| -> Result<Value, String> {
        let mut cmd = redis::cmd("ACL");
        cmd.arg("DRYRUN");
        for arg in args {
            cmd.arg(*arg);
        }
        cmd.query(con).map_err(|e| e.to_string())
    };
    assert_eq!(dry(&mut admin, &["audited", "DREAMS.FIRE", &own, "p", "1"]), Ok(Value::Okay));
    assert_eq!(
        dry(&mut admin, &["audited", "DREAMS.FIRE", "other", "p", "1"]),
        Ok(Value::BulkString(
            b"This user has no permissions to access the 'exocortex:dreams:{other}:queue' key".to_vec()
        ))
    );
    assert_eq!(
        dry(&mut admin, &["audited", "DREAMS.LEN", &own]),
        Ok(Value::BulkString(b"This user has no permissions to run the 'dreams.len' command".to_vec()))
    );
    let unknown = dry(&mut admin, &["nobody", "DREAMS.FIRE", &own, "p", "1"]).expect_err("no such user");
    assert!(unknown.contains("User 'nobody' not found"), "{unknown}");
    let arity = dry(&mut admin, &["audited", "DREAMS.LEN"]).expect_err("arity");
    assert!(arity.contains("wrong number of arguments"), "{arity}");
    // Nothing ran: no queue, no ACL LOG entry.
    let len: Vec<i64> = redis::cmd("DREAMS.LEN").arg(own.as_str()).query(&mut admin).expect("LEN");
    assert_eq!(len, vec![0, 0, 0]);
    // The caller needs the right to run ACL DRYRUN.
    redis::cmd("ACL")
        .arg("SETUSER")
        .arg("tenant")
        .arg("reset")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("+@all")
        .arg("-acl")
        .query::<()>(&mut admin)
        .expect("ACL SETUSER");
    let mut tenant_user = server.connect_as("tenant", "pw");
    let refused = dry(&mut tenant_user, &["audited", "DREAMS.FIRE", &own, "p", "1"]).expect_err("not allowed");
    assert!(is_noperm(&refused), "{refused}");
}
