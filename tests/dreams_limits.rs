//! Fair shares (issue 45): `DREAMS.LIMIT SET|GET|CLEAR`, `DREAMS.PAUSE`,
//! `DREAMS.RESUME`, and `DREAMS.DRAIN` (every form) under them.
//!
//! What is asserted, on a real server:
//! * the commands, their replies (RESP2 pairs, RESP3 map), errors that
//!   change nothing (`DEBUG DIGEST`), ACL on the limits key;
//! * a drain hands out no more than the cap in flight, the rate's tokens,
//!   nothing while paused; a call that cannot block answers as if empty;
//! * blocked drains are served first blocked, first served, the moment
//!   capacity returns (an ACK, a lease expiry, RESUME, a raised cap, the
//!   rate's next token by a timer), one waiter per place (no herd:
//!   `empty_wakeups` stays 0), and nothing is served while it does not;
//! * under `CLIENT PAUSE WRITE` the rate's timer writes nothing (digest and
//!   replication offset still) and serves its waiter once writes resume;
//! * the limits replicate (digest-equal replica), survive `DEBUG RELOAD`
//!   and a promotion, where the limits index is rebuilt (INFO);
//! * under load (8 workers, 3 organizations with caps 1, 2 and 4, a rate
//!   on one): every fire delivered exactly once; the in-flight list never
//!   above its cap, followed on a replica from its own keyspace events
//!   (independent of the module's figures); the long-run rate within 5%.
//!
//! Interleavings are forced (each waiter is seen blocked before the next
//! starts; work is added only once the previous reply arrived); waits use
//! deadlines; timing is asserted only as lower bounds on the server clock.

use crate::common;
use crate::dreams_support;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{tenant, wait_until, Server, DEADLINE};
use dreams_support::*;
use redis::{Connection, Value};

type Reply = mpsc::Receiver<Result<Value, String>>;

fn limits_key(org: &str) -> String {
    format!("exocortex:dreams:{{{org}}}:limits")
}

/// Run `args` on a new connection in a thread; the reply on the channel.
fn in_thread(server: &Server, args: &[&str]) -> Reply {
    let mut con = server.connect();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = sender.send(call(&mut con, &refs));
    });
    receiver
}

fn gauge(con: &mut Connection, field: &str) -> u64 {
    info(con).get(field).copied().unwrap_or_else(|| panic!("INFO dreamtown has no {field}"))
}

/// Start blocking drains one at a time, each seen blocked before the next.
fn block_in_order(server: &Server, con: &mut Connection, commands: &[Vec<String>]) -> Vec<Reply> {
    let base = gauge(con, "waiters");
    commands
        .iter()
        .enumerate()
        .map(|(i, args)| {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let reply = in_thread(server, &refs);
            wait_until("the drainer blocks", || gauge(con, "waiters") == base + i as u64 + 1);
            reply
        })
        .collect()
}

fn drain_args(org: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["DREAMS.DRAIN", org, "0", "NOQUIET"].iter().map(|s| s.to_string()).collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn payload_of(reply: &Reply) -> Vec<u8> {
    match reply.recv_timeout(DEADLINE).expect("a reply in time") {
        Ok(Value::BulkString(bytes)) => bytes,
        other => panic!("expected a payload, got {other:?}"),
    }
}

/// No reply has come yet (after the server has answered a later command).
fn still_waiting(reply: &Reply) {
    assert!(matches!(reply.try_recv(), Err(mpsc::TryRecvError::Empty)), "a drainer was served");
}

fn project_of(payload: &[u8]) -> String {
    SeedFireMessage::parse(payload).region.project
}

/// A value as text, nil as "".
fn text_or_empty(value: &Value) -> String {
    match value {
        Value::Nil => String::new(),
        Value::Int(n) => n.to_string(),
        other => text(other),
    }
}

/// Field/value pairs (RESP2) or a map (RESP3) as texts, nil as "".
fn fields(value: &Value) -> HashMap<String, String> {
    match value {
        Value::Array(items) => items.chunks(2).map(|pair| (text(&pair[0]), text_or_empty(&pair[1]))).collect(),
        Value::Map(items) => items.iter().map(|(k, v)| (text(k), text_or_empty(v))).collect(),
        other => panic!("not field/value pairs: {other:?}"),
    }
}

/// `DREAMS.LIMIT GET` as a map of texts (nil as "").
fn limit(con: &mut Connection, org: &str) -> HashMap<String, String> {
    fields(&ok(con, &["DREAMS.LIMIT", "GET", org]))
}

fn stats(con: &mut Connection, org: &str) -> HashMap<String, String> {
    fields(&ok(con, &["DREAMS.STATS", org]))
}

/// A drain that cannot block (inside MULTI): what it hands out.
fn drain_in_multi(con: &mut Connection, org: &str, extra: &[&str]) -> Value {
    let mut pipe = redis::pipe();
    pipe.atomic();
    let cmd = pipe.cmd("DREAMS.DRAIN").arg(org).arg("0").arg("NOQUIET");
    for arg in extra {
        cmd.arg(*arg);
    }
    let replies: Vec<Value> = pipe.query(con).expect("MULTI drain");
    replies.into_iter().next().expect("one reply")
}

fn server_ms(con: &mut Connection) -> i64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(con).expect("TIME");
    secs * 1000 + micros / 1000
}

fn fire_n(con: &mut Connection, org: &str, n: usize, label: &str) -> Vec<String> {
    let mut dreams = Dreams::new(con, org);
    (0..n)
        .map(|i| {
            let project = format!("{label}{i}");
            dreams.fire(&project, 1, &[]);
            project
        })
        .collect()
}

#[test]
fn limits_are_set_read_and_cleared() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("limits");
    // Nothing set: every limit nil, not paused.
    let fresh = limit(&mut con, &org);
    assert_eq!(fresh["concurrency"], "");
    assert_eq!(fresh["rate_count"], "");
    assert_eq!(fresh["tokens_left"], "");
    assert_eq!((fresh["in_flight"].as_str(), fresh["paused"].as_str()), ("0", "0"));
    assert!(matches!(ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "3"]), Value::Okay));
    assert!(matches!(ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "RATE", "10", "60"]), Value::Okay));
    let set = limit(&mut con, &org);
    assert_eq!(
        (&set["concurrency"][..], &set["rate_count"][..], &set["rate_seconds"][..], &set["tokens_left"][..]),
        ("3", "10", "60", "10"),
        "SET keeps what it is not given"
    );
    let stored: String = redis::cmd("GET").arg(limits_key(&org)).query(&mut con).expect("GET");
    assert_eq!(stored, "concurrency=3 rate=10/60");
    // RESP3: a map.
    let mut resp3 = redis::Client::open(format!("{}?protocol=resp3", server.url()))
        .expect("client")
        .get_connection()
        .expect("RESP3 connection");
    match ok(&mut resp3, &["DREAMS.LIMIT", "GET", &org]) {
        Value::Map(fields) => assert_eq!(fields.len(), 6, "{fields:?}"),
        other => panic!("RESP3 should get a map: {other:?}"),
    }
    // NONE removes one limit.
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "NONE"]);
    assert_eq!(limit(&mut con, &org)["concurrency"], "");
    assert_eq!(limit(&mut con, &org)["rate_count"], "10");
    // PAUSE/RESUME answer whether they changed anything; CLEAR keeps a pause.
    assert_eq!(int(&ok(&mut con, &["DREAMS.PAUSE", &org])), 1);
    assert_eq!(int(&ok(&mut con, &["DREAMS.PAUSE", &org])), 0);
    assert_eq!(int(&ok(&mut con, &["DREAMS.LIMIT", "CLEAR", &org])), 1);
    assert_eq!(int(&ok(&mut con, &["DREAMS.LIMIT", "CLEAR", &org])), 0);
    assert_eq!(limit(&mut con, &org)["paused"], "1");
    assert_eq!(int(&ok(&mut con, &["DREAMS.RESUME", &org])), 1);
    assert_eq!(int(&ok(&mut con, &["DREAMS.RESUME", &org])), 0);
    // Nothing set any more: the key is gone.
    let exists: i64 = redis::cmd("EXISTS").arg(limits_key(&org)).query(&mut con).expect("EXISTS");
    assert_eq!(exists, 0);
    // Described for COMMAND DOCS, with HELP.
    let help = ok(&mut con, &["DREAMS.LIMIT", "HELP"]);
    assert!(format!("{help:?}").contains("CONCURRENCY"), "{help:?}");
    let docs = ok(&mut con, &["COMMAND", "DOCS", "DREAMS.PAUSE", "DREAMS.RESUME", "DREAMS.LIMIT"]);
    assert!(format!("{docs:?}").contains("dreams.limit|set"), "{docs:?}");
}

#[test]
fn bad_input_changes_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("bad");
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "2"]);
    fire_n(&mut con, &org, 2, "p");
    let before = digest(&mut con);
    for (args, expected) in [
        (vec!["DREAMS.LIMIT", "SET", &org], "needs CONCURRENCY or RATE"),
        (vec!["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "0"], "concurrency must be an integer from 1"),
        (vec!["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "-1"], "concurrency must be an integer from 1"),
        (vec!["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "4294967296"], "concurrency must be an integer from 1"),
        (vec!["DREAMS.LIMIT", "SET", &org, "RATE", "0", "1"], "rate count must be an integer from 1"),
        (vec!["DREAMS.LIMIT", "SET", &org, "RATE", "5", "0"], "rate seconds must be an integer from 1"),
        (vec!["DREAMS.LIMIT", "SET", &org, "RATE", "5000000", "1"], "at most 1000000 items per second"),
        (vec!["DREAMS.LIMIT", "SET", &org, "RATE", "5"], "rate seconds"),
        (vec!["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "1", "CONCURRENCY", "2"], "given more than once"),
        (vec!["DREAMS.LIMIT", "SET", &org, "SPEED", "2"], "unknown option"),
        (vec!["DREAMS.LIMIT", "SET", "a{b", "CONCURRENCY", "2"], "must not contain"),
        (vec!["DREAMS.LIMIT", "GET", &org, "extra"], "ERR"),
        (vec!["DREAMS.LIMIT", "FROB", &org], "unknown subcommand"),
        (vec!["DREAMS.PAUSE", &org, "extra"], "ERR"),
    ] {
        let error = error_of(&mut con, &args);
        assert!(error.contains(expected), "{args:?}: {error}");
    }
    // A limits key of another type: WRONGTYPE for every command that
    // reads it, the drain included, and nothing moves.
    let other = tenant("wrongtype");
    fire_n(&mut con, &other, 1, "p");
    ok(&mut con, &["DREAMS.LIMIT", "SET", &other, "CONCURRENCY", "5"]);
    ok(&mut con, &["DEL", &limits_key(&other)]);
    ok(&mut con, &["RPUSH", &limits_key(&other), "x"]);
    let before_other = digest(&mut con);
    for args in [
        vec!["DREAMS.DRAIN", &other, "0", "NOQUIET"],
        vec!["DREAMS.LIMIT", "GET", &other],
        vec!["DREAMS.LIMIT", "SET", &other, "CONCURRENCY", "1"],
        vec!["DREAMS.PAUSE", &other],
        vec!["DREAMS.STATS", &other],
    ] {
        assert!(error_of(&mut con, &args).starts_with("WRONGTYPE"), "{args:?}");
    }
    assert_eq!(digest(&mut con), before_other);
    // Text that is not limits: the drain refuses (nothing moves); SET replaces it.
    ok(&mut con, &["SET", &limits_key(&other), "concurrency=lots"]);
    let before_text = digest(&mut con);
    let refused = error_of(&mut con, &["DREAMS.DRAIN", &other, "0", "NOQUIET"]);
    assert!(refused.contains("Dreams limits are not valid"), "{refused}");
    assert_eq!(digest(&mut con), before_text);
    ok(&mut con, &["DREAMS.LIMIT", "SET", &other, "CONCURRENCY", "1"]);
    assert!(Dreams::new(&mut con, &other).take().is_some());
    ok(&mut con, &["DEL", &limits_key(&other)]);
    ok(&mut con, &["DEL", &Keys::new(&other).ready, &Keys::new(&other).processing]);
    assert_eq!(digest(&mut con), before);
}

#[test]
fn a_cap_bounds_what_every_drain_form_hands_out() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("cap");
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "2"]);
    fire_n(&mut con, &org, 6, "p");
    // COUNT 5 hands out the cap's 2.
    let batch = ok(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "COUNT", "5"]);
    let Value::Array(batch) = batch else { panic!("a batch: {batch:?}") };
    assert_eq!(batch.len(), 2);
    // A call that cannot block answers as if nothing were ready.
    assert_eq!(drain_in_multi(&mut con, &org, &[]), Value::Nil);
    assert_eq!(drain_in_multi(&mut con, &org, &["COUNT", "3"]), Value::Nil);
    // A blocking call with a timeout times out (nil), still at the cap.
    assert_eq!(ok(&mut con, &["DREAMS.DRAIN", &org, "0.1", "NOQUIET"]), Value::Nil);
    // The one-trip form: the acknowledgement frees a place, the drain takes it.
    let first = match &batch[0] {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).expect("utf8"),
        other => panic!("{other:?}"),
    };
    let reply = ok(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "COUNT", "3", "ACK", &first, "SUCCESS"]);
    let Value::Array(parts) = reply else { panic!("a pair") };
    let Value::Array(next) = &parts[1] else { panic!("a batch after the ack: {parts:?}") };
    assert_eq!(next.len(), 1, "one place was freed");
    assert_eq!(Dreams::new(&mut con, &org).len().2, 2, "two in flight");
    // Counted: throttled drains by the cap while work waited.
    let figures = stats(&mut con, &org);
    assert!(figures["drains_throttled_concurrency"].parse::<u64>().unwrap() >= 4, "{figures:?}");
    assert_eq!(figures["limit_concurrency"], "2");
    assert_eq!(figures["drains_throttled"], figures["drains_throttled_concurrency"]);
    // Raising the cap lets more go.
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "3"]);
    assert!(Dreams::new(&mut con, &org).take().is_some());
    assert_eq!(drain_in_multi(&mut con, &org, &[]), Value::Nil);
    ok(&mut con, &["DREAMS.LIMIT", "CLEAR", &org]);
    assert!(Dreams::new(&mut con, &org).take().is_some());
}

#[test]
fn blocked_drains_are_served_in_order_as_places_free() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("order");
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "1"]);
    fire_n(&mut con, &org, 1, "held");
    let held = Dreams::new(&mut con, &org).take_one();
    let empty_before = gauge(&mut con, "empty_wakeups");
    // Three drainers wait (one of them the one-trip form of another
    // worker's next call would be: plain, COUNT, LEASE).
    let waiters = block_in_order(
        &server,
        &mut con,
        &[drain_args(&org, &[]), drain_args(&org, &["COUNT", "2"]), drain_args(&org, &["LEASE", "60"])],
    );
    // Work arrives, but no place is free: nobody is served, nobody runs.
    let projects = fire_n(&mut con, &org, 3, "w");
    ok(&mut con, &["PING"]);
    thread::sleep(Duration::from_millis(50));
    for waiter in &waiters {
        still_waiting(waiter);
    }
    assert_eq!(gauge(&mut con, "waiters"), 3);
    // Each acknowledgement serves the next waiter in arrival order, one item each.
    let mut acked = held;
    for (at, waiter) in waiters.iter().enumerate() {
        Dreams::new(&mut con, &org).ack(&acked, "SUCCESS", &[]);
        let got = match waiter.recv_timeout(DEADLINE).expect("served") {
            Ok(Value::BulkString(bytes)) => bytes,
            Ok(Value::Array(items)) if items.len() == 1 => match &items[0] {
                Value::BulkString(bytes) => bytes.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("waiter {at}: {other:?}"),
        };
        assert_eq!(project_of(&got), projects[at], "first blocked, first served");
        assert_eq!(Dreams::new(&mut con, &org).len().2, 1, "never more than the cap in flight");
        acked = got;
    }
    assert_eq!(gauge(&mut con, "empty_wakeups"), empty_before, "no waiter ran for nothing");
}

#[test]
fn a_new_drain_waits_behind_blocked_ones() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("behind");
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "1"]);
    fire_n(&mut con, &org, 3, "p");
    let held = Dreams::new(&mut con, &org).take_one();
    let waiters = block_in_order(&server, &mut con, &[drain_args(&org, &[])]);
    // An acknowledgement and a new blocking drain in one batch: the place
    // goes to the drainer that waited first.
    let late =
        in_thread(&server, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "ACK", &String::from_utf8_lossy(&held), "SUCCESS"]);
    let first = payload_of(&waiters[0]);
    assert_eq!(project_of(&first), "p1");
    wait_until("the late call waits", || gauge(&mut con, "waiters") == 1);
    Dreams::new(&mut con, &org).ack(&first, "SUCCESS", &[]);
    match late.recv_timeout(DEADLINE).expect("served") {
        Ok(Value::Array(parts)) => assert_eq!(
            project_of(&match &parts[1] {
                Value::BulkString(bytes) => bytes.clone(),
                other => panic!("{other:?}"),
            }),
            "p2"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_expiring_lease_frees_its_place_for_the_first_waiter() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("lease");
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "1"]);
    fire_n(&mut con, &org, 2, "p");
    let leased = Dreams::new(&mut con, &org).drain("0", &["NOQUIET", "LEASE", "1"]).expect("leased");
    let waiter = block_in_order(&server, &mut con, &[drain_args(&org, &["LEASE", "30"])]).remove(0);
    // The lease runs out: its item goes back to the head of ready, the
    // place it held is free, and the waiter gets that item (not p1).
    let got = payload_of(&waiter);
    assert_eq!(got, leased);
    assert_eq!(Dreams::new(&mut con, &org).len(), (1, 0, 1));
    assert_eq!(info(&mut con)["leases_expired"], 1);
    // RECOVER: everything back, the cap still holds for what comes next.
    assert_eq!(Dreams::new(&mut con, &org).recover(), 1);
    let batch = ok(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "COUNT", "10"]);
    assert!(matches!(&batch, Value::Array(items) if items.len() == 1), "{batch:?}");
}

#[test]
fn pause_holds_blocked_drains_until_resume() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("pause");
    let other = tenant("unpaused");
    let empty_before = gauge(&mut con, "empty_wakeups");
    let waiters =
        block_in_order(&server, &mut con, &[drain_args(&org, &[]), drain_args(&org, &[]), drain_args(&other, &[])]);
    assert_eq!(int(&ok(&mut con, &["DREAMS.PAUSE", &org])), 1);
    let projects = fire_n(&mut con, &org, 2, "p");
    fire_n(&mut con, &other, 1, "o");
    // The other organization is served; the paused one's drainers wait.
    payload_of(&waiters[2]);
    thread::sleep(Duration::from_millis(50));
    still_waiting(&waiters[0]);
    still_waiting(&waiters[1]);
    assert_eq!(drain_in_multi(&mut con, &org, &[]), Value::Nil);
    assert_eq!(Dreams::new(&mut con, &org).len(), (2, 0, 0), "paused: nothing moved");
    let paused = stats(&mut con, &org);
    assert_eq!(paused["paused"], "1");
    assert!(paused["drains_throttled_paused"].parse::<u64>().unwrap() >= 1, "{paused:?}");
    let before = server_ms(&mut con);
    wait_until("some time passes on the server clock", || server_ms(&mut con) >= before + 20);
    // RESUME serves both, in order.
    assert_eq!(int(&ok(&mut con, &["DREAMS.RESUME", &org])), 1);
    assert_eq!(project_of(&payload_of(&waiters[0])), projects[0]);
    assert_eq!(project_of(&payload_of(&waiters[1])), projects[1]);
    let resumed = stats(&mut con, &org);
    assert_eq!(resumed["paused"], "0");
    assert_eq!(resumed["paused_for_ms"], "");
    assert!(resumed["paused_ms"].parse::<u64>().unwrap() >= 20, "{resumed:?}");
    assert!(info(&mut con)["paused_ms"] >= 20);
    assert_eq!(gauge(&mut con, "empty_wakeups"), empty_before, "no waiter ran for nothing");
}

#[test]
fn the_rate_lets_its_count_go_then_serves_a_waiter_at_the_next_token() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("rate");
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "RATE", "2", "1"]);
    fire_n(&mut con, &org, 4, "p");
    // The server's clock before the burst: the burst took its tokens at or
    // after this.
    let took_at = server_ms(&mut con);
    let batch = ok(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET", "COUNT", "10"]);
    assert!(matches!(&batch, Value::Array(items) if items.len() == 2), "the burst: {batch:?}");
    assert_eq!(limit(&mut con, &org)["tokens_left"], "0");
    // The next token is 500 ms after the burst: a waiter is served by the
    // queue's timer then, with no other command, never before.
    let waiter = block_in_order(&server, &mut con, &[drain_args(&org, &[])]).remove(0);
    payload_of(&waiter);
    let served_at = server_ms(&mut con);
    assert!(served_at >= took_at + 500, "served {} ms after the burst", served_at - took_at);
    assert!(stats(&mut con, &org)["drains_throttled_rate"].parse::<u64>().unwrap() >= 1);
    // The rate's state is written back (replicated as the key's SET).
    let stored: String = redis::cmd("GET").arg(limits_key(&org)).query(&mut con).expect("GET");
    assert!(stored.starts_with("rate=2/1 tat="), "{stored}");
}

#[test]
fn a_rate_timer_writes_nothing_while_writes_are_paused() {
    let master = Server::start_with(&["--repl-ping-replica-period", "1000", "--repl-timeout", "2000"]);
    let replica = master.start_replica();
    let mut con = master.connect();
    let org = tenant("clientpause");
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "RATE", "1", "2"]);
    fire_n(&mut con, &org, 2, "p");
    Dreams::new(&mut con, &org).take_one();
    let waiter = block_in_order(&master, &mut con, &[drain_args(&org, &[])]).remove(0);
    // The next token is 2 s after the first drain; writes pause before it.
    ok(&mut con, &["CLIENT", "PAUSE", "60000", "WRITE"]);
    let held_before = gauge(&mut con, "held_waiter_passes");
    let paused_at = server_ms(&mut con);
    let digest_paused = digest(&mut con);
    let offset = |con: &mut Connection| -> String {
        let text: String = redis::cmd("INFO").arg("replication").query(con).expect("INFO");
        text.lines().find_map(|l| l.strip_prefix("master_repl_offset:")).unwrap_or("").trim().to_owned()
    };
    let offset_paused = offset(&mut con);
    wait_until("the token falls due inside the pause", || server_ms(&mut con) > paused_at + 2_200);
    wait_until("the pass is held", || gauge(&mut con, "held_waiter_passes") > held_before);
    still_waiting(&waiter);
    assert_eq!(digest(&mut con), digest_paused, "nothing written while paused");
    assert_eq!(offset(&mut con), offset_paused);
    ok(&mut con, &["CLIENT", "UNPAUSE"]);
    payload_of(&waiter);
    let mut replica_con = replica.connect();
    wait_until("the replica caught up", || digest(&mut replica_con) == digest(&mut con));
}

#[test]
fn limits_replicate_survive_reload_and_a_promotion() {
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    let org = tenant("durable");
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "1", "RATE", "100", "1"]);
    ok(&mut con, &["DREAMS.PAUSE", &org]);
    ok(&mut con, &["DREAMS.RESUME", &org]);
    fire_n(&mut con, &org, 3, "p");
    Dreams::new(&mut con, &org).take_one();
    let mut replica_con = replica.connect();
    wait_until("digest-equal", || digest(&mut replica_con) == digest(&mut con));
    assert_eq!(limit(&mut replica_con, &org)["concurrency"], "1", "GET runs on a replica");
    // DEBUG RELOAD: the limits index is rebuilt by the catch-up; the cap holds throughout.
    ok(&mut con, &["DEBUG", "RELOAD"]);
    assert_eq!(drain_in_multi(&mut con, &org, &[]), Value::Nil);
    wait_until("the limits index is trusted again", || gauge(&mut con, "limits_index_trusted") == 1);
    assert_eq!(gauge(&mut con, "limits_indexed_orgs"), 1);
    assert_eq!(drain_in_multi(&mut con, &org, &[]), Value::Nil);
    // The replica, promoted, enforces the cap from its first command.
    wait_until("digest-equal", || digest(&mut replica_con) == digest(&mut con));
    ok(&mut replica_con, &["REPLICAOF", "NO", "ONE"]);
    assert_eq!(drain_in_multi(&mut replica_con, &org, &[]), Value::Nil);
    wait_until("the new master's index is trusted", || gauge(&mut replica_con, "limits_index_trusted") == 1);
    assert_eq!(gauge(&mut replica_con, "limits_indexed_orgs"), 1);
    assert_eq!(drain_in_multi(&mut replica_con, &org, &[]), Value::Nil);
    ok(&mut replica_con, &["DREAMS.LIMIT", "CLEAR", &org]);
    assert!(matches!(drain_in_multi(&mut replica_con, &org, &[]), Value::BulkString(_)));
}

#[test]
fn a_limits_key_that_arrives_by_restore_or_rename_is_honoured() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("arrives");
    fire_n(&mut con, &org, 3, "p");
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "1"]);
    let dumped: Vec<u8> = redis::cmd("DUMP").arg(limits_key(&org)).query(&mut con).expect("DUMP");
    ok(&mut con, &["DREAMS.LIMIT", "CLEAR", &org]);
    assert_eq!(gauge(&mut con, "limits_indexed_orgs"), 0, "cleared: off the index");
    // RESTORE (a legacy slot move does this).
    redis::cmd("RESTORE").arg(limits_key(&org)).arg(0).arg(dumped).query::<()>(&mut con).expect("RESTORE");
    assert!(Dreams::new(&mut con, &org).take().is_some());
    assert_eq!(drain_in_multi(&mut con, &org, &[]), Value::Nil, "the restored cap holds");
    // RENAME from elsewhere.
    ok(&mut con, &["RENAME", &limits_key(&org), "parked"]);
    assert!(Dreams::new(&mut con, &org).take().is_some(), "the key is gone: no cap");
    ok(&mut con, &["RENAME", "parked", &limits_key(&org)]);
    assert_eq!(drain_in_multi(&mut con, &org, &[]), Value::Nil, "renamed back: the cap holds");
}

#[test]
fn the_limits_key_is_checked_against_acl() {
    let server = Server::start();
    let mut admin = server.connect();
    let org = tenant("acl");
    let names = Keys::new(&org);
    // A worker with the queue's keys but not the limits key, and a reader
    // of the limits key.
    let queue_keys: Vec<String> =
        [&names.ready, &names.deferred, &names.processing, &names.dead].iter().map(|name| format!("~{name}")).collect();
    let limits_read = format!("%R~{}", limits_key(&org));
    for (user, extra) in [("worker", None), ("reader", Some(limits_read.as_str()))] {
        let mut rule = vec!["ACL", "SETUSER", user, "on", ">pw", "+@all", "resetkeys"];
        rule.extend(queue_keys.iter().map(String::as_str));
        rule.extend(extra);
        ok(&mut admin, &rule);
    }
    fire_n(&mut admin, &org, 3, "p");
    let mut worker = server.connect_as("worker", "pw");
    // Without limits the worker drains (the key is not touched).
    assert!(Dreams::new(&mut worker, &org).take().is_some());
    ok(&mut admin, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "5"]);
    let before = digest(&mut admin);
    let refused = error_of(&mut worker, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]);
    assert!(refused.starts_with("NOPERM") && refused.contains(":limits"), "{refused}");
    assert!(error_of(&mut worker, &["DREAMS.LIMIT", "SET", &org, "CONCURRENCY", "9"]).starts_with("NOPERM"));
    assert_eq!(digest(&mut admin), before);
    // Read access is enough for a cap; a rate's state needs write access.
    let mut reader = server.connect_as("reader", "pw");
    assert!(Dreams::new(&mut reader, &org).take().is_some());
    assert!(error_of(&mut reader, &["DREAMS.PAUSE", &org]).starts_with("NOPERM"));
    ok(&mut admin, &["DREAMS.LIMIT", "SET", &org, "RATE", "10", "1"]);
    let before = digest(&mut admin);
    assert!(error_of(&mut reader, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]).starts_with("NOPERM"));
    assert_eq!(digest(&mut admin), before);
}

/// The in-flight count of each organization as a replica sees it, from
/// the keyspace events its own replicated commands fire (independent of
/// the module): each push onto the in-flight list adds one (the module
/// moves items one at a time), each `lrem`/pop removes one, a `del`
/// empties it. The most seen per organization.
struct InFlightWatch {
    most: Arc<Mutex<BTreeMap<String, i64>>>,
    now: Arc<Mutex<BTreeMap<String, i64>>>,
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl InFlightWatch {
    fn start(replica: &Server, orgs: &[String]) -> InFlightWatch {
        let mut con = replica.connect();
        ok(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "Klg"]);
        let mut sub = replica.connect();
        sub.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
        let patterns: Vec<String> =
            orgs.iter().map(|org| format!("__keyspace@0__:{}", Keys::new(org).processing)).collect();
        let most = Arc::new(Mutex::new(BTreeMap::new()));
        let now = Arc::new(Mutex::new(BTreeMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let handle = {
            let (most, now, stop, orgs) = (most.clone(), now.clone(), stop.clone(), orgs.to_vec());
            thread::spawn(move || {
                let mut pubsub = sub.as_pubsub();
                for pattern in &patterns {
                    pubsub.subscribe(pattern).expect("SUBSCRIBE");
                }
                let _ = ready_tx.send(());
                while !stop.load(Ordering::Relaxed) {
                    let Ok(message) = pubsub.get_message() else { continue };
                    let channel = message.get_channel_name().to_owned();
                    let event: String = message.get_payload().unwrap_or_default();
                    let Some(org) = orgs.iter().find(|org| channel.ends_with(&Keys::new(org).processing)) else {
                        continue;
                    };
                    let mut now = now.lock().unwrap();
                    let count = now.entry(org.clone()).or_insert(0);
                    match event.as_str() {
                        "lpush" | "rpush" => *count += 1,
                        "lrem" | "lpop" | "rpop" => *count -= 1,
                        "del" => *count = 0,
                        _ => {}
                    }
                    let seen = *count;
                    let mut most = most.lock().unwrap();
                    let top = most.entry(org.clone()).or_insert(0);
                    *top = (*top).max(seen);
                }
            })
        };
        ready_rx.recv_timeout(DEADLINE).expect("subscribed");
        InFlightWatch { most, now, stop, handle: Some(handle) }
    }

    fn finish(mut self) -> (BTreeMap<String, i64>, BTreeMap<String, i64>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            handle.join().expect("watcher");
        }
        (self.most.lock().unwrap().clone(), self.now.lock().unwrap().clone())
    }
}

#[test]
fn under_load_every_fire_is_delivered_once_and_no_cap_is_ever_passed() {
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    let orgs: Vec<String> = (0..3).map(|n| tenant(&format!("load{n}"))).collect();
    let caps = [1u64, 2, 4];
    for (org, cap) in orgs.iter().zip(caps) {
        ok(&mut con, &["DREAMS.LIMIT", "SET", org, "CONCURRENCY", &cap.to_string()]);
    }
    // The last one also has a rate: 40 per second.
    ok(&mut con, &["DREAMS.LIMIT", "SET", &orgs[2], "RATE", "40", "1"]);
    let per_org = 150usize;
    let watch = InFlightWatch::start(&replica, &orgs);
    let mut fired: HashSet<String> = HashSet::new();
    for org in &orgs {
        for project in fire_n(&mut con, org, per_org, "p") {
            fired.insert(format!("{org}/{project}"));
        }
    }
    let delivered = Arc::new(Mutex::new(Vec::<String>::new()));
    let done = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for worker in 0..8 {
        let (mut con, orgs, delivered, done) = (master.connect(), orgs.clone(), delivered.clone(), done.clone());
        workers.push(thread::spawn(move || {
            let org = &orgs[worker % orgs.len()];
            let mut holding: Option<Vec<u8>> = None;
            while !done.load(Ordering::Relaxed) {
                let mut args: Vec<Vec<u8>> =
                    ["DREAMS.DRAIN", org, "0.2", "NOQUIET"].iter().map(|a| a.as_bytes().to_vec()).collect();
                if let Some(payload) = holding.take() {
                    args.extend([b"ACK".to_vec(), payload, b"SUCCESS".to_vec()]);
                }
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                let reply = call_bytes(&mut con, &refs).expect("drain");
                let next = match reply {
                    Value::Array(parts) => parts.into_iter().nth(1).unwrap_or(Value::Nil),
                    other => other,
                };
                if let Value::BulkString(payload) = next {
                    // Some work, as a worker would do.
                    thread::sleep(Duration::from_millis(2));
                    delivered.lock().unwrap().push(format!("{org}/{}", project_of(&payload)));
                    holding = Some(payload);
                }
            }
            if let Some(payload) = holding {
                Dreams::new(&mut con, org).ack(&payload, "SUCCESS", &[]);
            }
        }));
    }
    let started = Instant::now();
    wait_until("every fire delivered", || delivered.lock().unwrap().len() >= fired.len());
    let took = started.elapsed();
    done.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().expect("worker");
    }
    let delivered = delivered.lock().unwrap().clone();
    let unique: HashSet<String> = delivered.iter().cloned().collect();
    assert_eq!(unique.len(), delivered.len(), "delivered twice");
    assert_eq!(unique, fired, "every fire delivered");
    let mut replica_con = replica.connect();
    wait_until("the replica caught up", || digest(&mut replica_con) == digest(&mut con));
    let (most, now) = watch.finish();
    for (org, cap) in orgs.iter().zip(caps) {
        assert_eq!(now.get(org).copied().unwrap_or(0), 0, "the replay of {org} ends empty: {now:?}");
        let seen = most.get(org).copied().unwrap_or(0);
        assert!(seen >= 1 && seen as u64 <= cap, "{org}: {seen} in flight at once, cap {cap}");
    }
    // The rated organization took at least its 150 items at 40 per second
    // after a burst of 40: at least 2.7 s.
    assert!(took >= Duration::from_millis(2_700), "{took:?}");
}

#[test]
fn the_long_run_rate_is_kept_within_five_percent() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("longrun");
    let (rate, burst) = (25i64, 25i64);
    ok(&mut con, &["DREAMS.LIMIT", "SET", &org, "RATE", &rate.to_string(), "1"]);
    fire_n(&mut con, &org, 400, "p");
    let done = Arc::new(AtomicBool::new(false));
    let times = Arc::new(Mutex::new(Vec::<i64>::new()));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (mut con, org, done, times) = (server.connect(), org.clone(), done.clone(), times.clone());
            thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if let Ok(Value::BulkString(payload)) = call(&mut con, &["DREAMS.DRAIN", &org, "0.2", "NOQUIET"]) {
                        let at = server_ms(&mut con);
                        times.lock().unwrap().push(at);
                        Dreams::new(&mut con, &org).ack(&payload, "SUCCESS", &[]);
                    }
                }
            })
        })
        .collect();
    let start = server_ms(&mut con);
    wait_until("eight seconds of drains", || server_ms(&mut con) >= start + 8_000);
    done.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().expect("worker");
    }
    let times = times.lock().unwrap().clone();
    let first = *times.iter().min().expect("drained");
    let last = *times.iter().max().expect("drained");
    // After the burst, one item per interval.
    let after_burst = times.len() as i64 - burst;
    let measured = after_burst as f64 * 1000.0 / (last - first) as f64;
    assert!((measured - rate as f64).abs() <= rate as f64 * 0.05, "{measured:.2} per second, rate {rate}");
}

#[test]
fn the_commands_carry_their_native_analogues_flags() {
    let server = Server::start();
    let mut con = server.connect();
    for (name, expected, first_key) in [
        ("DREAMS.LIMIT|SET", &["write", "denyoom", "fast"][..], 2),
        ("DREAMS.LIMIT|GET", &["readonly", "fast"][..], 2),
        ("DREAMS.LIMIT|CLEAR", &["write", "fast"][..], 2),
        ("DREAMS.PAUSE", &["write", "denyoom", "fast"][..], 1),
        ("DREAMS.RESUME", &["write", "fast"][..], 1),
    ] {
        let info = ok(&mut con, &["COMMAND", "INFO", name]);
        let Value::Array(entries) = info else { panic!("{info:?}") };
        let Some(Value::Array(fields)) = entries.into_iter().next() else { panic!("{name}: no entry") };
        let Value::Array(flags) = &fields[2] else { panic!("{name}: {fields:?}") };
        let mut flags: Vec<String> = flags.iter().map(text).filter(|flag| flag != "module").collect();
        flags.sort();
        let mut wanted: Vec<String> = expected.iter().map(|flag| flag.to_string()).collect();
        wanted.sort();
        assert_eq!(flags, wanted, "{name}");
        assert_eq!(fields[3], Value::Int(first_key), "{name}: the organization is its first key");
        let specs = format!("{:?}", fields[8]).to_lowercase();
        let access = if expected.contains(&"readonly") { "\"ro\"" } else { "\"rw\"" };
        assert!(specs.contains("not_key") && specs.contains(access), "{name}: {specs}");
    }
    // A replica answers the read and refuses the writes.
    let replica = server.start_replica();
    let mut replica_con = replica.connect();
    assert!(call(&mut replica_con, &["DREAMS.LIMIT", "GET", "acme"]).is_ok());
    assert!(error_of(&mut replica_con, &["DREAMS.PAUSE", "acme"]).starts_with("READONLY"));
    // Under maxmemory: the additions are refused, the removals run.
    ok(&mut con, &["DREAMS.PAUSE", "acme"]);
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "1"]);
    assert!(error_of(&mut con, &["DREAMS.LIMIT", "SET", "acme", "CONCURRENCY", "1"]).starts_with("OOM"));
    assert_eq!(int(&ok(&mut con, &["DREAMS.RESUME", "acme"])), 1);
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
}
