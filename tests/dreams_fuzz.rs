//! Crash resistance: thousands of malformed (and some valid) invocations
//! of every DREAMS.* command — random arity, huge and negative numbers,
//! NUL bytes, invalid UTF-8, large strings, bad JSON, odd option orders —
//! interleaved with corruption of the stored keys (wrong types, non-numeric
//! counters, garbage payloads). The server must answer PING throughout and
//! at the end, and no reply may be the module's "internal error" (a caught
//! panic: input reached an unwrap, index or overflow).
//!
//! `DREAMS_FUZZ_SEED` / `DREAMS_FUZZ_ROUNDS` reproduce or lengthen a run.

use crate::common;
use crate::dreams_support;

use std::time::Duration;

use common::random::Random as Rng;
use common::{tenant, wait_until, Server};
use dreams_support::*;
use redis::Connection;

const COMMANDS: [&str; 14] = [
    "DREAMS.FIRE",
    "DREAMS.RECORD",
    "DREAMS.SETTLE",
    "DREAMS.DRAIN",
    "DREAMS.ACK",
    "DREAMS.RECOVER",
    "DREAMS.LEN",
    "DREAMS.COUNTERS",
    "DREAMS.EXTEND",
    "DREAMS.INFLIGHT",
    "DREAMS.REDRIVE",
    "DREAMS.LIMIT",
    "DREAMS.PAUSE",
    "DREAMS.RESUME",
];

/// What follows `DREAMS.LIMIT`: its subcommands, and not.
const LIMIT_SUBCOMMANDS: [&str; 5] = ["SET", "GET", "CLEAR", "set", "FROB"];

/// Timeouts a DRAIN may get: malformed ones, or short enough to keep the
/// run fast (a valid long timeout, or 0 / -0 = forever, would only make
/// the run wait).
const TIMEOUTS: [&str; 14] = [
    "0.001",
    "0.0001",
    "1e-3",
    "-1",
    "-0.5",
    "nan",
    "inf",
    "-inf",
    "1e309",
    "abc",
    "",
    "0x1",
    "9999999999999999",
    "0.002",
];

struct Pool {
    tokens: Vec<Vec<u8>>,
    payloads: Vec<Vec<u8>>,
}

impl Pool {
    fn new(org: &str) -> Self {
        let mut tokens: Vec<Vec<u8>> = [
            org,
            "other-org",
            "",
            "{",
            "}",
            "a{b}",
            "p",
            "alpha",
            "0",
            "1",
            "2",
            "3",
            "7",
            "-1",
            "-0",
            "+1",
            "01",
            "4294967295",
            "4294967296",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999999999999",
            "1.5",
            "1e3",
            "nan",
            "inf",
            "0x10",
            " 1",
            "1 ",
            "NODE",
            "node",
            "EVENT",
            "event",
            "GENERATION",
            "TRIGGER",
            "trigger",
            "QUIET",
            "quiet",
            "OFFSET",
            "NOQUIET",
            "LIMIT",
            "COUNT",
            "RETAIN",
            "retain",
            "SUCCESS",
            "FAILURE",
            "success",
            "failure",
            "MAYBE",
            "02-06",
            "23-07",
            "00-00",
            "2-6",
            "24-01",
            "-",
            "--",
            "02-06-08",
            "1439",
            "-1439",
            "1440",
            "-1440",
            "3153600000",
            "3153600001",
            "LEASE",
            "lease",
            "CONCURRENCY",
            "concurrency",
            "RATE",
            "NONE",
            "1000000",
            "31536000",
            "0.05",
            "0.001",
            "1e-9",
            "-0",
        ]
        .iter()
        .map(|t| t.as_bytes().to_vec())
        .collect();
        tokens.extend([
            b"\0".to_vec(),
            b"a\0b".to_vec(),
            b"\xff\xfe".to_vec(),
            b"\xc3".to_vec(),
            b"\r\n".to_vec(),
            "é".repeat(100).into_bytes(),
        ]);
        let region = |o: &str, extra: &str| {
            format!(r#"{{"region":{{"org":"{o}","project":"p","memory_type":1}},"fired_by":"n"{extra}}}"#)
        };
        let counted = r#","fired_at":{"memories_since_last_cycle":3,"edges_since_last_cycle":0,"seconds_since_last_cycle":0},"fire_id":"x""#;
        let payloads: Vec<Vec<u8>> = vec![
            region(org, "").into_bytes(),
            region(org, counted).into_bytes(),
            region(org, r#","fire_id":"x","quiet_deferred":true"#).into_bytes(),
            region(org, r#","fired_at":{"memories_since_last_cycle":4294967295,"edges_since_last_cycle":4294967295,"seconds_since_last_cycle":18446744073709551615},"fire_id":"x""#).into_bytes(),
            region(org, r#","fired_at":{"memories_since_last_cycle":-1,"edges_since_last_cycle":0,"seconds_since_last_cycle":0}"#).into_bytes(),
            region(org, r#","fired_at":null,"fire_id":null,"quiet_deferred":false"#).into_bytes(),
            region(org, r#","fire_id":"\u0000\ud800""#).into_bytes(),
            region(org, r#","extra":[1,2,3],"fire_id":"y""#).into_bytes(),
            region("other-org", counted).into_bytes(),
            region("", "").into_bytes(),
            format!(r#"{{"region":{{"org":"{org}","project":"p","memory_type":1.5}},"fired_by":"n"}}"#).into_bytes(),
            format!(r#"{{"region":{{"org":"{org}","project":"p","memory_type":1}}}}"#).into_bytes(),
            format!(r#"{{"region":{{"org":"{org}","org":"x","project":"p","memory_type":1}},"fired_by":"n"}}"#).into_bytes(),
            b"{".to_vec(),
            b"[]".to_vec(),
            b"null".to_vec(),
            b"\"str\"".to_vec(),
            "[".repeat(100_000).into_bytes(),
            "{\"a\":".repeat(1_000).into_bytes(),
            b"{\"region\":1e999}".to_vec(),
            b"\xff{}".to_vec(),
        ];
        tokens.extend(payloads.iter().cloned());
        Self { tokens, payloads }
    }

    fn token(&self, rng: &mut Rng) -> Vec<u8> {
        if rng.percent(1) {
            return vec![b'x'; 1 << 20];
        }
        if rng.percent(3) {
            return (0..rng.below(64)).map(|_| rng.next() as u8).collect();
        }
        self.tokens[rng.below(self.tokens.len())].clone()
    }
}

/// A random invocation of a random command.
fn invocation(rng: &mut Rng, pool: &Pool, org: &str) -> Vec<Vec<u8>> {
    let command = COMMANDS[rng.below(COMMANDS.len())];
    let mut args = vec![command.as_bytes().to_vec()];
    let arity = rng.below(14);
    for position in 1..=arity {
        let arg = match (command, position) {
            // Mostly the real organization, so the commands get past it.
            (_, 1) if rng.percent(80) => org.as_bytes().to_vec(),
            ("DREAMS.DRAIN", 2) => TIMEOUTS[rng.below(TIMEOUTS.len())].as_bytes().to_vec(),
            ("DREAMS.ACK" | "DREAMS.EXTEND", 2) if rng.percent(80) => {
                pool.payloads[rng.below(pool.payloads.len())].clone()
            }
            _ => pool.token(rng),
        };
        args.push(arg);
    }
    if command == "DREAMS.LIMIT" {
        args.insert(1, LIMIT_SUBCOMMANDS[rng.below(LIMIT_SUBCOMMANDS.len())].as_bytes().to_vec());
    }
    args
}

/// A well-formed invocation with options in random order, then (often) one
/// or two arguments swapped for pool tokens: these reach the state machine.
fn structured(rng: &mut Rng, pool: &Pool, org: &str) -> Vec<Vec<u8>> {
    fn any<'a>(rng: &mut Rng, items: &[&'a str]) -> &'a str {
        items[rng.below(items.len())]
    }
    let project = any(rng, &["p", "alpha", "é"]);
    let memory_type = any(rng, &["1", "0", "4294967295"]);
    let count = |rng: &mut Rng| any(rng, &["0", "1", "3", "4294967295"]).to_owned();
    let mut options: Vec<Vec<String>> = Vec::new();
    let command = COMMANDS[rng.below(COMMANDS.len())];
    let mut args: Vec<String> = vec![command.into(), org.into()];
    let trigger = |rng: &mut Rng| {
        let mut t = vec!["TRIGGER".to_owned()];
        t.extend((0..4).map(|_| any(rng, &["0", "1", "5", "4294967295", "3153600000"]).to_owned()));
        t
    };
    match command {
        "DREAMS.FIRE" => {
            args.extend([project.into(), memory_type.into()]);
            options.push(vec!["NODE".into(), any(rng, &["n", "", "\u{0}"]).into()]);
        }
        "DREAMS.RECORD" => {
            args.extend([project.into(), memory_type.into(), count(rng), count(rng)]);
            options.push(vec!["NODE".into(), "n".into()]);
            options.push(vec![
                "EVENT".into(),
                any(rng, &["e1", "e2"]).into(),
                "GENERATION".into(),
                any(rng, &["1", "5", "9223372036854775807"]).into(),
            ]);
            options.push(trigger(rng));
        }
        "DREAMS.SETTLE" => {
            args.extend([
                project.into(),
                memory_type.into(),
                any(rng, &["e1", "e2"]).into(),
                any(rng, &["1", "5", "9223372036854775807"]).into(),
            ]);
            options.push(vec!["RETAIN".into()]);
        }
        "DREAMS.DRAIN" => {
            args.push(any(rng, &["0.001", "0.002"]).into());
            options.push(vec!["QUIET".into(), any(rng, &["02-06", "23-07", "00-23"]).into()]);
            options.push(vec!["OFFSET".into(), any(rng, &["0", "1439", "-1439", "60"]).into()]);
            options.push(vec!["NOQUIET".into()]);
            // Short leases, so some run out during the run.
            options.push(vec!["LEASE".into(), any(rng, &["0.05", "0.2", "0.3", "0", "-1", "x"]).into()]);
        }
        "DREAMS.EXTEND" => {
            args.push(String::new()); // the payload, set below as bytes
            args.push(any(rng, &["0.05", "1", "0", "nan"]).into());
        }
        "DREAMS.ACK" => {
            args.push(String::new()); // the payload, set below as bytes
            args.push(any(rng, &["SUCCESS", "FAILURE"]).into());
            options.push(vec!["NODE".into(), "n".into()]);
            options.push(trigger(rng));
        }
        "DREAMS.COUNTERS" => args.extend([project.into(), memory_type.into()]),
        "DREAMS.LIMIT" => {
            args.insert(1, any(rng, &LIMIT_SUBCOMMANDS).into());
            options.push(vec!["CONCURRENCY".into(), any(rng, &["1", "2", "0", "NONE", "4294967295"]).into()]);
            options.push(vec![
                "RATE".into(),
                any(rng, &["1000", "1", "0", "NONE"]).into(),
                any(rng, &["1", "60", "0", "31536000"]).into(),
            ]);
        }
        _ => {}
    }
    // A random subset of the options, in random order.
    while !options.is_empty() {
        let option = options.swap_remove(rng.below(options.len()));
        if rng.percent(60) {
            args.extend(option);
        }
    }
    let mut bytes: Vec<Vec<u8>> = args.into_iter().map(String::into_bytes).collect();
    if command == "DREAMS.ACK" || command == "DREAMS.EXTEND" {
        bytes[2] = pool.payloads[rng.below(pool.payloads.len())].clone();
    }
    if rng.percent(50) && bytes.len() > 2 {
        for _ in 0..=rng.below(2) {
            let at = 1 + rng.below(bytes.len() - 1);
            // (A subcommand name in invalid UTF-8 comes back in Redis's own
            // error, which the client cannot read: the server is fine.)
            let kept = matches!((command, at), ("DREAMS.DRAIN", 2) | ("DREAMS.LIMIT", 1));
            if !kept {
                bytes[at] = pool.token(rng);
            }
        }
    }
    bytes
}

/// Corrupt (or clear) one of the organization's keys with a plain command.
fn mutate(con: &mut Connection, rng: &mut Rng, pool: &Pool, keys: &Keys) {
    let counters = keys.counters("p", 1);
    let events = keys.events("p", 1);
    let leases = format!("exocortex:dreams:{{{}}}:leases", keys.org);
    let limits = format!("exocortex:dreams:{{{}}}:limits", keys.org);
    let all = [&keys.ready, &keys.deferred, &keys.processing, &keys.dead, &counters, &events, &leases, &limits];
    let key = all[rng.below(all.len())].as_str();
    let value = pool.token(rng);
    let field = ["memories", "edges", "last_success", "settled_generation", "pending"][rng.below(5)];
    let mut cmd;
    match rng.below(6) {
        0 => {
            cmd = redis::cmd("DEL");
            cmd.arg(key);
        }
        1 => {
            cmd = redis::cmd("SET");
            cmd.arg(key).arg(&value);
        }
        2 => {
            // Mostly a counter field of the region the fuzzer uses.
            cmd = redis::cmd("HSET");
            cmd.arg(if rng.percent(80) { counters.as_str() } else { key }).arg(field).arg(&value);
        }
        3 => {
            cmd = redis::cmd("RPUSH");
            cmd.arg(if rng.percent(70) { keys.ready.as_str() } else { key }).arg(&value);
        }
        4 => {
            cmd = redis::cmd("SADD");
            cmd.arg(key).arg(&value);
        }
        _ => {
            cmd = redis::cmd("ZADD");
            cmd.arg(key).arg(["-inf", "0", "1", "+inf", "9e15"][rng.below(5)]).arg(&value);
        }
    }
    // Wrong-type errors from these plain commands are expected; ignore them.
    let _ = cmd.query::<redis::Value>(con);
}

fn seed_and_rounds(default_rounds: usize) -> (u64, usize) {
    let seed: u64 = std::env::var("DREAMS_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_f00d);
    let rounds: usize = std::env::var("DREAMS_FUZZ_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(default_rounds);
    (seed, rounds)
}

#[test]
fn malformed_invocations_never_crash_the_server() {
    let (seed, rounds) = seed_and_rounds(6_000);
    fuzz(&Server::start(), seed, rounds, Mix { corrupt: 8, work: 10 });
}

/// The same run with a replica and an AOF attached: every accepted call's
/// effects, including those of calls that fail half-way through a plan or
/// meet corrupted keys, must reach both intact, and propagation must never
/// trip a Redis assertion (a blocked DRAIN once did).
#[test]
fn malformed_invocations_leave_replica_and_aof_equal_to_the_master() {
    let (seed, rounds) = seed_and_rounds(2_500);
    let master = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let replica = master.start_replica();
    // Less corruption and more valid work than above, so the queue holds
    // several items most of the time and their order reaches the digest.
    fuzz(&master, seed ^ 0xa0f, rounds, Mix { corrupt: 1, work: 20 });
    let mut con = master.connect();
    let mut replica_con = replica.connect();
    wait_for_short_leases(&mut con);
    let expected = digest(&mut con);
    wait_until("the replica's digest equals the master's", || digest(&mut replica_con) == expected);
    ok(&mut con, &["DEBUG", "LOADAOF"]);
    assert_eq!(digest(&mut con), expected, "reloading the AOF gave another dataset");
}

/// Wait until no lease of any organization falls due in the next few
/// seconds (the run's leases are short; corrupted ones may be far off), so
/// no expiry changes the dataset while digests are compared.
fn wait_for_short_leases(con: &mut Connection) {
    let keys: Vec<String> = redis::cmd("KEYS").arg("exocortex:dreams:{*}:leases").query(con).unwrap();
    wait_until("the run's short leases expired", || {
        let (secs, _): (i64, i64) = redis::cmd("TIME").query(con).unwrap();
        let soon = (secs + 5) * 1000;
        keys.iter().all(|key| {
            let due: i64 = redis::cmd("ZCOUNT").arg(key).arg(1).arg(soon).query(con).unwrap_or(0);
            due == 0
        })
    });
}

/// Percentages of rounds that corrupt a key with a plain command, and (of
/// the rest) that do valid work; the remaining rounds are malformed calls.
struct Mix {
    corrupt: usize,
    work: usize,
}

/// Run `rounds` random calls against `server`, checking it stays up and
/// never answers with a caught panic. Leaves the fuzzed tenant's keys behind.
fn fuzz(server: &Server, seed: u64, rounds: usize, mix: Mix) {
    let mut con = server.connect();
    con.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let org = tenant("fuzz");
    let keys = Keys::new(&org);
    let pool = Pool::new(&org);
    let mut rng = Rng::new(seed);
    let (mut errors, mut accepted) = (0usize, 0usize);
    for round in 0..rounds {
        if rng.percent(mix.corrupt) {
            mutate(&mut con, &mut rng, &pool, &keys);
        } else if rng.percent(mix.work) {
            // Valid work, so the malformed calls meet a queue with items.
            // Sometimes on top of what is there, so lists grow past one
            // item and their order matters to the replica test.
            if rng.percent(10) {
                let _ = call(&mut con, &["DEL", &keys.ready, &keys.processing, &keys.deferred, &keys.dead]);
                let _ = call(&mut con, &["DEL", &keys.counters("p", 1), &keys.events("p", 1)]);
            }
            let _ = call(&mut con, &["DREAMS.FIRE", &org, "p", "1"]);
            let _ = call(&mut con, &["DREAMS.FIRE", &org, ["q", "r", "s"][rng.below(3)], "2"]);
            let _ = call(&mut con, &["DREAMS.RECORD", &org, "p", "1", "3", "0", "TRIGGER", "1", "1", "0", "0"]);
            if rng.percent(50) {
                let _ = call(&mut con, &["DREAMS.DRAIN", &org, "0.001", "NOQUIET"]);
            }
            if rng.percent(30) {
                // Leased: it runs out during the run and comes back.
                let _ = call(&mut con, &["DREAMS.DRAIN", &org, "0.001", "NOQUIET", "LEASE", "0.05"]);
            }
            // Fair shares: a cap or a fast rate now and then, a pause
            // seldom and resumed more often, so drains meet every limit.
            match rng.below(20) {
                0 => drop(call(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", ["1", "2", "3"][rng.below(3)]])),
                1 => drop(call(&mut con, &["DREAMS.LIMIT", "SET", &org, "RATE", "1000", "1"])),
                2 => drop(call(&mut con, &["DREAMS.PAUSE", &org])),
                3..=5 => drop(call(&mut con, &["DREAMS.RESUME", &org])),
                6 => drop(call(&mut con, &["DREAMS.LIMIT", "CLEAR", &org])),
                _ => {}
            }
        } else {
            let args =
                if rng.percent(50) { invocation(&mut rng, &pool, &org) } else { structured(&mut rng, &pool, &org) };
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            match call_bytes(&mut con, &refs) {
                Ok(_) => accepted += 1,
                Err(error) => {
                    errors += 1;
                    assert!(
                        !error.contains("internal error"),
                        "round {round} (DREAMS_FUZZ_SEED={seed}): a panic was caught for {:?}: {error}",
                        refs.iter()
                            .map(|a| String::from_utf8_lossy(&a[..a.len().min(60)]).into_owned())
                            .collect::<Vec<_>>()
                    );
                    assert!(
                        error.starts_with("ERR") || error.starts_with("WRONGTYPE") || error.starts_with("NOPERM"),
                        "round {round}: unexpected error kind: {error} for {:?}",
                        refs.iter()
                            .map(|a| String::from_utf8_lossy(&a[..a.len().min(60)]).into_owned())
                            .collect::<Vec<_>>()
                    );
                }
            }
        }
        if round % 50 == 0 {
            assert!(server.alive(), "the server died by round {round} (DREAMS_FUZZ_SEED={seed})");
        }
    }
    assert!(server.alive());
    assert_eq!(text(&ok(&mut con, &["PING"])), "PONG");
    assert!(errors > rounds / 4, "the run should be mostly refusals: {errors} of {rounds}");
    assert!(accepted > rounds / 10, "some calls should get through to the queue: {accepted} of {rounds}");
    // The module still works normally afterwards (on a fresh organization:
    // the fuzzed one's keys stay for the replica test to compare).
    let mut fresh = Dreams::new(&mut con, &tenant("after-fuzz"));
    assert_eq!(fresh.fire("p", 1, &[]), "queued");
    assert_eq!(fresh.len(), (1, 0, 0));
}
