//! Malformed input never crashes the server: thousands of random
//! invocations of every TOWN command (random arity, huge and negative
//! numbers, NUL bytes, invalid UTF-8, large strings, bad and deep JSON,
//! valid messages mixed in so real state builds up), with the server
//! answering PING throughout and at the end. The generator is seeded, so a
//! failure is reproducible (`TOWN_FUZZ_SEED`).

use crate::common;
use crate::town_support;

use std::time::Duration;

use common::random::Random as Rng;
use common::Server;

const COMMANDS: &[&str] = &[
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
    "TOWN.EXTEND",
];
const WORDS: &[&str] = &[
    "REQUEST",
    "CHECK",
    "CLEAR",
    "SET",
    "GET",
    "DEL",
    "LIST",
    "BYNAME",
    "INCR",
    "HEARTBEAT",
    "ROUNDS",
    "TASKS",
    "LOG",
    "PUSH",
    "POP",
    "LEN",
    "REMOVE",
    "AGENTS",
    "URGENT",
    "RELIABLE",
    "BLOCK",
    "COUNT",
    "TTL",
    "name",
    "rounds_completed",
    "id",
    "urgent",
    "count",
    "a",
    "b",
    "m1",
    "LEASE",
    "lease",
];
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "10",
    "3600",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "99999999999999999999999",
    "1e308",
    "1e-9",
    "nan",
    "inf",
    "-0",
    "0.5",
    "+5",
    " 1",
    "0x10",
    "",
];
const SAFE_TIMEOUTS: &[&str] = &["0.01", "0.001", "-1", "x", "nan", "1e999", ""];

fn json(rng: &mut Rng) -> Vec<u8> {
    let agent = *rng.pick(&["a", "b", "c", "", "a\u{0}b", "é"]);
    let priority = *rng.pick(&["low", "normal", "HIGH", "Urgent", "asap", ""]);
    match rng.below(12) {
        0 => b"{".to_vec(),
        1 => b"[]".to_vec(),
        2 => br#"{"to":null}"#.to_vec(),
        3 => format!("{}{}", "[".repeat(300), "]".repeat(300)).into_bytes(),
        4 => format!("{{\"to\":{}\"a\"{}}}", "[".repeat(200), "]".repeat(200)).into_bytes(),
        5 => br#"{"to":"a","to":"b"}"#.to_vec(),
        6 => format!(r#"{{"to":"a","description":"{}"}}"#, "x".repeat(100_000)).into_bytes(),
        7 => br#"{"to":"\u0000","id":"\ud800"}"#.to_vec(),
        _ => format!(
            r#"{{"id":"m{}","from":"f","to":{},"type":"task","priority":"{priority}"}}"#,
            rng.below(5),
            serde_json_string(agent)
        )
        .into_bytes(),
    }
}

/// A JSON string literal for `text` (enough escaping for the generator's inputs).
fn serde_json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn argument(rng: &mut Rng) -> Vec<u8> {
    match rng.below(20) {
        0..=5 => rng.pick(WORDS).as_bytes().to_vec(),
        6..=9 => rng.pick(NUMBERS).as_bytes().to_vec(),
        10..=12 => json(rng),
        13 => vec![0u8; rng.below(4)],
        14 => vec![0xff, 0xfe, 0xc3, 0x28],
        15 => (0..rng.below(64)).map(|_| rng.next() as u8).collect(),
        16 if rng.one_in(20) => vec![b'x'; 1_000_000],
        16 => vec![b'y'; 10_000],
        17 => b"{x}".to_vec(),
        _ => format!("agent{}", rng.below(6)).into_bytes(),
    }
}

fn town(rng: &mut Rng, towns: &[String]) -> Vec<u8> {
    match rng.below(10) {
        0 => Vec::new(),
        1 => b"a{b".to_vec(),
        2 => vec![0xff, b'}'],
        3 => b"t\0own".to_vec(),
        _ => rng.pick(towns).as_bytes().to_vec(),
    }
}

/// A well-formed invocation of a random command, so that real state
/// builds up between the malformed ones (and some get one argument mutated).
/// Wait until no lease falls due in the next few seconds, so no expiry
/// changes the dataset while digests are compared.
fn wait_for_short_leases(con: &mut redis::Connection) {
    let keys: Vec<String> = redis::cmd("KEYS").arg("tt:{*}:leases:*").query(con).unwrap();
    common::wait_until("the run's short leases expired", || {
        let (secs, _): (i64, i64) = redis::cmd("TIME").query(con).unwrap();
        let soon = (secs + 5) * 1000;
        keys.iter().all(|key| redis::cmd("ZCOUNT").arg(key).arg(1).arg(soon).query::<i64>(con).unwrap_or(0) == 0)
    });
}

fn plausible(rng: &mut Rng, towns: &[String]) -> Vec<Vec<u8>> {
    let town = rng.pick(towns).clone();
    let agent = format!("agent{}", rng.below(4));
    let other = format!("agent{}", rng.below(4));
    let task = format!("t{}", rng.below(4));
    let count = rng.below(4).to_string();
    let message = format!(
        r#"{{"id":"m{}","to":"{agent}","type":"task","priority":"{}"}}"#,
        rng.below(5),
        rng.pick(&["low", "normal", "high", "urgent"])
    );
    let words: Vec<String> = match rng.below(24) {
        0 | 1 => vec!["TOWN.SEND".into(), town, message],
        2 => vec!["TOWN.SEND".into(), town, message, "URGENT".into()],
        3 | 4 => {
            let mut recv = vec!["TOWN.RECV".into(), town, agent];
            for option in [["COUNT", &count], ["BLOCK", "0.001"]] {
                if rng.one_in(2) {
                    recv.extend(option.iter().map(|s| s.to_string()));
                }
            }
            for flag in ["URGENT", "RELIABLE"] {
                if rng.one_in(2) {
                    recv.push(flag.into());
                }
            }
            if rng.one_in(2) {
                // Short leases, so some run out during the run.
                recv.extend(["LEASE".to_owned(), rng.pick(&["0.05", "0.2", "0", "-1", "x"]).to_string()]);
            }
            recv
        }
        5 if rng.one_in(3) => vec![
            "TOWN.EXTEND".into(),
            town,
            agent,
            format!("m{}", rng.below(5)),
            rng.pick(&["0.05", "0.3", "0", "nan"]).to_string(),
        ],
        5 => {
            let mut ack = vec!["TOWN.ACK".into(), town, agent];
            ack.extend((0..=rng.below(3)).map(|_| format!("m{}", rng.below(5))));
            ack
        }
        6 => vec!["TOWN.REQUEUE".into(), town, agent],
        7 => vec!["TOWN.LEN".into(), town, agent],
        8 => vec!["TOWN.PEEK".into(), town, agent, count],
        9 => vec!["TOWN.RECLAIM".into(), town, agent, other],
        10 => vec!["TOWN.BROADCAST".into(), town, message],
        11 => vec!["TOWN.STOP".into(), rng.pick(&["REQUEST", "CHECK", "CLEAR"]).to_string(), town, agent],
        12 => vec!["TOWN.STOP".into(), "REQUEST".into(), town, agent, "TTL".into(), "5".into()],
        13 | 14 => {
            vec!["TOWN.AGENT".into(), "SET".into(), town, agent, "name".into(), other, "state".into(), "idle".into()]
        }
        15 => vec!["TOWN.AGENT".into(), rng.pick(&["GET", "DEL", "HEARTBEAT"]).to_string(), town, agent],
        16 => vec!["TOWN.AGENT".into(), "INCR".into(), town, agent, rng.pick(&["ROUNDS", "TASKS"]).to_string()],
        17 => vec!["TOWN.AGENT".into(), "LIST".into(), town],
        18 => vec!["TOWN.AGENT".into(), "BYNAME".into(), town, other],
        19 => vec!["TOWN.TASK".into(), "SET".into(), town, task, "id".into(), "x".into()],
        20 => vec!["TOWN.TASK".into(), rng.pick(&["LIST", "GET", "DEL"]).to_string(), town, task],
        21 => vec!["TOWN.ACTIVITY".into(), rng.pick(&["LOG", "GET"]).to_string(), town, agent, "did".into()],
        22 => vec!["TOWN.BACKLOG".into(), rng.pick(&["PUSH", "POP", "LIST", "LEN", "REMOVE"]).to_string(), town, task],
        _ if rng.one_in(10) => vec!["TOWN.RESET".into(), town, "AGENTS".into()],
        _ => vec!["TOWN.LEN".into(), town, agent],
    };
    let mut args: Vec<Vec<u8>> = words.into_iter().map(String::into_bytes).collect();
    if rng.one_in(4) && args.len() > 1 {
        let at = 1 + rng.below(args.len() - 1);
        args[at] = argument(rng);
    }
    args
}

fn invocation(rng: &mut Rng, towns: &[String]) -> Vec<Vec<u8>> {
    let args = if rng.one_in(2) { plausible(rng, towns) } else { random(rng, towns) };
    guard_block(args, rng)
}

/// A receive must not block for long: whatever follows a BLOCK keyword
/// (its timeout, if it is parsed as one) becomes a short or invalid timeout.
fn guard_block(mut args: Vec<Vec<u8>>, rng: &mut Rng) -> Vec<Vec<u8>> {
    if args.first().is_some_and(|name| name.eq_ignore_ascii_case(b"TOWN.RECV")) {
        for at in 1..args.len() {
            if args[at].eq_ignore_ascii_case(b"BLOCK") && at + 1 < args.len() {
                args[at + 1] = rng.pick(SAFE_TIMEOUTS).as_bytes().to_vec();
            }
        }
    }
    args
}

fn random(rng: &mut Rng, towns: &[String]) -> Vec<Vec<u8>> {
    let name = *rng.pick(COMMANDS);
    let name = if rng.one_in(5) { name.to_ascii_lowercase() } else { name.to_string() };
    let mut args = vec![name.clone().into_bytes()];
    let arity = rng.below(9);
    for at in 0..arity {
        if at == 0 && !rng.one_in(8) {
            args.push(town(rng, towns));
        } else {
            args.push(argument(rng));
        }
    }
    args
}

fn seed_and_rounds(default_rounds: usize) -> (u64, usize) {
    let seed: u64 = std::env::var("TOWN_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_7047_0000_0001);
    let rounds: usize = std::env::var("TOWN_FUZZ_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(default_rounds);
    (seed, rounds)
}

#[test]
fn random_invocations_never_crash_the_server() {
    let (seed, rounds) = seed_and_rounds(20_000);
    fuzz(&Server::start(), seed, rounds);
}

/// The same run with a replica and an AOF attached: whatever the calls
/// did, both must end with the master's dataset, and propagation (from
/// commands and from blocked receives woken later) must never trip a Redis
/// assertion.
#[test]
fn random_invocations_leave_replica_and_aof_equal_to_the_master() {
    let (seed, rounds) = seed_and_rounds(8_000);
    let master = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let replica = master.start_replica();
    fuzz(&master, seed ^ 0xa0f, rounds);
    let mut con = master.connect();
    let mut replica_con = replica.connect();
    let digest =
        |con: &mut redis::Connection| -> String { redis::cmd("DEBUG").arg("DIGEST").query(con).expect("DEBUG DIGEST") };
    wait_for_short_leases(&mut con);
    let expected = digest(&mut con);
    assert_ne!(expected, "0000000000000000000000000000000000000000", "the run should leave data behind");
    common::wait_until("the replica's digest equals the master's", || digest(&mut replica_con) == expected);
    let _: () = redis::cmd("DEBUG").arg("LOADAOF").query(&mut con).expect("DEBUG LOADAOF");
    assert_eq!(digest(&mut con), expected, "reloading the AOF gave another dataset");
}

/// Run `rounds` random calls against `server`, checking it stays up and
/// never answers with a caught panic; then check it still works.
fn fuzz(server: &Server, seed: u64, rounds: usize) {
    let towns = vec![common::tenant("fuzz"), common::tenant("fuzz")];
    let connect = || {
        let con = server.connect();
        con.set_read_timeout(Some(Duration::from_secs(20))).expect("read timeout");
        con
    };
    let mut con = connect();
    let mut rng = Rng::new(seed);
    let (mut replies, mut errors) = (0usize, 0usize);
    for round in 0..rounds {
        let args = invocation(&mut rng, &towns);
        let mut cmd = redis::Cmd::new();
        for arg in &args {
            cmd.arg(arg.as_slice());
        }
        match cmd.query::<redis::Value>(&mut con) {
            Ok(_) => replies += 1,
            Err(error) if error.code().is_some() => {
                // A panic caught by the command guard is a bug, not a refusal.
                let detail = error.detail().unwrap_or("");
                assert!(
                    !detail.contains("dreamtown bug"),
                    "round {round} (seed {seed}) hit a panic: {:?}",
                    args.iter()
                        .map(|a| String::from_utf8_lossy(&a[..a.len().min(80)]).into_owned())
                        .collect::<Vec<_>>()
                );
                errors += 1
            }
            Err(error) => {
                assert!(server.alive(), "server died at round {round} (seed {seed}): {error}");
                con = connect();
            }
        }
        if round % 50 == 0 {
            let pong: String = redis::cmd("PING")
                .query(&mut con)
                .unwrap_or_else(|e| panic!("no PING reply at round {round} (seed {seed}): {e}"));
            assert_eq!(pong, "PONG");
        }
    }
    let pong: String = redis::cmd("PING").query(&mut con).expect("PING at the end");
    assert_eq!(pong, "PONG");
    assert!(server.alive());
    assert!(replies > rounds / 5, "many invocations were valid ({replies} replies, {errors} errors)");
    assert!(errors > rounds / 5, "many invocations were refused ({replies} replies, {errors} errors)");
    // The module still works normally afterwards.
    let town = common::tenant("after-fuzz");
    let sent = town_support::message("m", "a", "normal");
    let length: i64 = redis::cmd("TOWN.SEND").arg(&town).arg(&sent).query(&mut con).expect("send");
    assert_eq!(length, 1);
    let got: Vec<String> = redis::cmd("TOWN.RECV").arg(&town).arg("a").query(&mut con).expect("recv");
    assert_eq!(got, vec![sent]);
}
