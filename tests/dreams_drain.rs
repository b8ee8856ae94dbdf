//! DREAMS.DRAIN (without quiet hours; see dreams_quiet.rs) and
//! DREAMS.RECOVER: FIFO hand-out into the in-flight list, blocking until
//! another connection makes work ready, timeouts, never blocking inside
//! MULTI or a script, nothing lost when a blocked client goes away, due
//! deferrals promoted first, dead letters for items that are not this
//! organization's fire messages, and recovery of in-flight work.
//!
//! Blocking is observed, never assumed: a test waits (polling INFO's
//! `blocked_clients`) until the drainer is really blocked before it acts.

use crate::common;
use crate::dreams_support;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{blocked_clients, tenant, wait_until, Server, DEADLINE};
use dreams_support::*;
use redis::Value;

/// Start `DREAMS.DRAIN org timeout NOQUIET` on its own connection in a
/// thread; the reply (payload or nil) arrives on the channel.
fn drain_in_thread(server: &Server, org: &str, timeout: &str) -> mpsc::Receiver<Result<Option<Vec<u8>>, String>> {
    let mut con = server.connect();
    let (org, timeout) = (org.to_owned(), timeout.to_owned());
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let reply = call(&mut con, &["DREAMS.DRAIN", &org, &timeout, "NOQUIET"]).map(|value| match value {
            Value::Nil => None,
            Value::BulkString(bytes) => Some(bytes),
            other => panic!("DRAIN replied {other:?}"),
        });
        let _ = sender.send(reply);
    });
    receiver
}

fn project_of(payload: &[u8]) -> String {
    SeedFireMessage::parse(payload).region.project
}

#[test]
fn drain_hands_out_the_head_and_keeps_it_in_flight() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-fifo");
    let mut dreams = Dreams::new(&mut con, &org);
    for project in ["a", "b", "c"] {
        dreams.fire(project, 1, &[]);
    }
    let ready = dreams.ready();
    let first = dreams.take_one();
    assert_eq!(first, ready[0], "the exact bytes of the head");
    assert_eq!(project_of(&dreams.take_one()), "b");
    assert_eq!(dreams.len(), (1, 0, 2));
    assert_eq!(dreams.processing(), ready[..2].to_vec());
    assert_eq!(info(dreams.con)["drained"], 2);
}

#[test]
fn an_empty_drain_times_out_with_nil() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-timeout");
    let mut dreams = Dreams::new(&mut con, &org);
    let started = Instant::now();
    assert_eq!(dreams.drain("0.2", &["NOQUIET"]), None);
    assert!(started.elapsed() >= Duration::from_millis(190), "it blocked for the timeout: {:?}", started.elapsed());
    assert_eq!(dreams.len(), (0, 0, 0));
    assert_eq!(blocked_clients(dreams.con), 0);
}

#[test]
fn a_blocked_drain_is_woken_by_a_fire_from_another_connection() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-wake-fire");
    let reply = drain_in_thread(&server, &org, "0");
    wait_until("the drainer blocks", || blocked_clients(&mut con) == 1);
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.fire("woken", 1, &[]), "queued");
    let payload = reply.recv_timeout(DEADLINE).expect("woken").expect("a payload").expect("not nil");
    assert_eq!(project_of(&payload), "woken");
    assert_eq!(dreams.processing(), [payload]);
    assert_eq!(dreams.len(), (0, 0, 1));
}

#[test]
fn a_blocked_drain_is_woken_by_a_record_that_fires() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-wake-record");
    let reply = drain_in_thread(&server, &org, "30");
    wait_until("the drainer blocks", || blocked_clients(&mut con) == 1);
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(2, 100, 0, NEVER_SECS);
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "accumulated");
    assert_eq!(blocked_clients(dreams.con), 1, "an accumulating record wakes nobody");
    assert_eq!(dreams.record("p", 1, 1, 0, &strs(&t)).0, "queued");
    let payload = reply.recv_timeout(DEADLINE).expect("woken").expect("a payload").expect("not nil");
    assert_eq!(SeedFireMessage::parse(&payload).fired_at.unwrap().memories_since_last_cycle, 2);
    assert_eq!(dreams.len(), (0, 0, 1));
}

#[test]
fn a_blocked_drain_is_woken_by_a_plain_rpush() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-wake-rpush");
    let keys = Keys::new(&org);
    let reply = drain_in_thread(&server, &org, "0");
    wait_until("the drainer blocks", || blocked_clients(&mut con) == 1);
    let payload = format!(r#"{{"region":{{"org":"{org}","project":"p","memory_type":1}},"fired_by":"legacy"}}"#);
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg(&payload).query(&mut con).unwrap();
    let got = reply.recv_timeout(DEADLINE).expect("woken").expect("a payload").expect("not nil");
    assert_eq!(got, payload.as_bytes());
}

#[test]
fn one_fire_wakes_one_of_two_drainers_and_the_other_keeps_waiting() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-two");
    let first = drain_in_thread(&server, &org, "0");
    let second = drain_in_thread(&server, &org, "0");
    wait_until("both drainers block", || blocked_clients(&mut con) == 2);
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("one", 1, &[]);
    wait_until("one drainer served", || blocked_clients(dreams.con) == 1);
    assert_eq!(dreams.len(), (0, 0, 1));
    dreams.fire("two", 1, &[]);
    let a = first.recv_timeout(DEADLINE).expect("first woken").unwrap().unwrap();
    let b = second.recv_timeout(DEADLINE).expect("second woken").unwrap().unwrap();
    let mut projects = vec![project_of(&a), project_of(&b)];
    projects.sort();
    assert_eq!(projects, ["one", "two"]);
    assert_eq!(dreams.len(), (0, 0, 2));
}

#[test]
fn a_drain_woken_by_garbage_dead_letters_it_and_keeps_waiting() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-wake-garbage");
    let keys = Keys::new(&org);
    let reply = drain_in_thread(&server, &org, "0");
    wait_until("the drainer blocks", || blocked_clients(&mut con) == 1);
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg("not a fire message").query(&mut con).unwrap();
    let mut dreams = Dreams::new(&mut con, &org);
    wait_until("the garbage is dead-lettered", || dreams.dead().len() == 1);
    assert_eq!(blocked_clients(dreams.con), 1, "still waiting for real work");
    assert!(reply.try_recv().is_err());
    dreams.fire("real", 1, &[]);
    let payload = reply.recv_timeout(DEADLINE).expect("woken").unwrap().unwrap();
    assert_eq!(project_of(&payload), "real");
    assert_eq!(dreams.dead(), [b"not a fire message".to_vec()]);
}

#[test]
fn a_blocked_drain_with_a_timeout_still_wakes_early() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-early");
    let started = Instant::now();
    let reply = drain_in_thread(&server, &org, "600");
    wait_until("the drainer blocks", || blocked_clients(&mut con) == 1);
    Dreams::new(&mut con, &org).fire("p", 1, &[]);
    reply.recv_timeout(DEADLINE).expect("woken").unwrap().expect("payload");
    assert!(started.elapsed() < Duration::from_secs(600));
}

#[test]
fn a_client_that_disconnects_while_blocked_loses_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-disconnect");
    let mut drainer = server.connect();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut drainer).unwrap();
    let (sender, receiver) = mpsc::channel();
    let thread_org = org.clone();
    thread::spawn(move || {
        let reply = call(&mut drainer, &["DREAMS.DRAIN", &thread_org, "0", "NOQUIET"]);
        let _ = sender.send(reply);
    });
    wait_until("the drainer blocks", || blocked_clients(&mut con) == 1);
    let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query(&mut con).unwrap();
    assert_eq!(killed, 1);
    let reply = receiver.recv_timeout(DEADLINE).expect("the killed drainer returns");
    assert!(reply.is_err(), "its connection is gone: {reply:?}");
    assert_eq!(blocked_clients(&mut con), 0);
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("kept", 1, &[]);
    assert_eq!(dreams.len(), (1, 0, 0), "nothing was moved for the dead client");
    assert_eq!(project_of(&dreams.take_one()), "kept");
}

#[test]
fn drain_never_blocks_inside_multi() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-multi");
    let started = Instant::now();
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("DREAMS.DRAIN")
        .arg(&org)
        .arg(0)
        .arg("NOQUIET")
        .cmd("DREAMS.DRAIN")
        .arg(&org)
        .arg(5)
        .query(&mut con)
        .unwrap();
    assert_eq!(replies, [Value::Nil, Value::Nil]);
    assert!(started.elapsed() < Duration::from_secs(5));
    // With work, MULTI hands it out as usual.
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("p", 1, &[]);
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("DREAMS.DRAIN")
        .arg(&org)
        .arg(0)
        .arg("NOQUIET")
        .cmd("DREAMS.DRAIN")
        .arg(&org)
        .arg(0)
        .arg("NOQUIET")
        .query(dreams.con)
        .unwrap();
    assert!(matches!(&replies[0], Value::BulkString(p) if project_of(p) == "p"), "{replies:?}");
    assert_eq!(replies[1], Value::Nil);
    assert_eq!(dreams.len(), (0, 0, 1));
}

#[test]
fn drain_never_blocks_inside_a_script() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-eval");
    let script = "return redis.call('DREAMS.DRAIN', KEYS[1], '0', 'NOQUIET')";
    let reply = call(&mut con, &["EVAL", script, "1", &org]).unwrap();
    assert_eq!(reply, Value::Nil);
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("p", 1, &[]);
    let reply = call(dreams.con, &["EVAL", script, "1", &org]).unwrap();
    assert!(matches!(&reply, Value::BulkString(p) if project_of(p) == "p"), "{reply:?}");
    let function = "#!lua name=drainlib\nredis.register_function('drain_now', function(keys) return redis.call('DREAMS.DRAIN', keys[1], '0', 'NOQUIET') end)";
    ok(dreams.con, &["FUNCTION", "LOAD", function]);
    assert_eq!(call(dreams.con, &["FCALL", "drain_now", "1", &org]).unwrap(), Value::Nil);
}

#[test]
fn due_deferrals_are_promoted_before_the_head_is_taken() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-promote");
    let keys = Keys::new(&org);
    let mut dreams = Dreams::new(&mut con, &org);
    let now = server_time(dreams.con);
    let make = |project: &str| {
        format!(
            r#"{{"region":{{"org":"{org}","project":"{project}","memory_type":1}},"fired_by":"n","quiet_deferred":true}}"#
        )
    };
    let _: () = redis::cmd("ZADD")
        .arg(&keys.deferred)
        .arg(now - 10)
        .arg(make("due"))
        .arg(now + 100_000)
        .arg(make("future"))
        .query(dreams.con)
        .unwrap();
    assert_eq!(project_of(&dreams.take_one()), "due", "a due deferral runs when ready is empty");
    assert_eq!(dreams.len(), (0, 1, 1));
    dreams.fire("fresh", 1, &[]);
    let _: () = redis::cmd("ZADD").arg(&keys.deferred).arg(now - 5).arg(make("due2")).query(dreams.con).unwrap();
    assert_eq!(project_of(&dreams.take_one()), "fresh", "promoted items join the tail");
    assert_eq!(dreams.ready(), [make("due2").into_bytes()]);
    assert_eq!(dreams.drain("0.05", &["NOQUIET"]).map(|p| project_of(&p)), Some("due2".into()));
    assert_eq!(dreams.drain("0.05", &["NOQUIET"]), None, "a future deferral waits");
    assert_eq!(dreams.len(), (0, 1, 3));
    assert!(info(dreams.con)["promoted"] >= 2);
}

#[test]
fn promotion_stops_when_ready_reaches_the_ceiling() {
    let server = Server::start();
    let mut con = server.connect();
    set_config(&mut con, "queue-max", "2");
    let org = tenant("drain-promote-cap");
    let keys = Keys::new(&org);
    let mut dreams = Dreams::new(&mut con, &org);
    let make = |project: &str| {
        format!(r#"{{"region":{{"org":"{org}","project":"{project}","memory_type":1}},"fired_by":"n"}}"#)
    };
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg(make("r1")).arg(make("r2")).query(dreams.con).unwrap();
    let _: () =
        redis::cmd("ZADD").arg(&keys.deferred).arg(1).arg(make("d1")).arg(2).arg(make("d2")).query(dreams.con).unwrap();
    // Ready is full: nothing promoted; the head runs.
    assert_eq!(project_of(&dreams.take_one()), "r1");
    assert_eq!(dreams.len(), (1, 2, 1));
    // Ready has one slot: one promoted (lowest score first).
    assert_eq!(project_of(&dreams.take_one()), "r2");
    assert_eq!(dreams.ready(), [make("d1").into_bytes()]);
}

#[test]
fn foreign_and_corrupt_items_go_to_the_dead_letter_list_and_drain_carries_on() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("drain-dead");
    let keys = Keys::new(&org);
    let foreign = r#"{"region":{"org":"someone-else","project":"p","memory_type":1},"fired_by":"n"}"#;
    let items: Vec<&[u8]> =
        vec![b"garbage", foreign.as_bytes(), b"\xff\xfe not utf-8", b"{\"region\":{\"org\":1}}", b""];
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg(&items).query(&mut con).unwrap();
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("good", 1, &[]);
    assert_eq!(project_of(&dreams.take_one()), "good");
    let dead = dreams.dead();
    assert_eq!(dead, items.iter().map(|i| i.to_vec()).collect::<Vec<_>>(), "kept, in order");
    assert_eq!(dreams.len(), (0, 0, 1), "nothing stranded in flight");
    assert_eq!(info(dreams.con)["dead_lettered"], items.len() as u64);
    // Only garbage left: dead-lettered, then the drain times out.
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg("more garbage").query(dreams.con).unwrap();
    assert_eq!(dreams.drain("0.05", &["NOQUIET"]), None);
    assert_eq!(dreams.dead().len(), items.len() + 1);
    assert_eq!(dreams.len(), (0, 0, 1));
}

#[test]
fn recover_moves_everything_in_flight_back_to_the_tail_in_order() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("recover");
    let mut dreams = Dreams::new(&mut con, &org);
    for project in ["a", "b", "c"] {
        dreams.fire(project, 1, &[]);
    }
    dreams.take_one();
    dreams.take_one();
    assert_eq!(dreams.len(), (1, 0, 2));
    assert_eq!(dreams.recover(), 2);
    let projects: Vec<String> = dreams.ready().iter().map(|p| project_of(p)).collect();
    assert_eq!(projects, ["c", "a", "b"]);
    assert_eq!(dreams.len(), (3, 0, 0));
    let exists: i64 = redis::cmd("EXISTS").arg(&dreams.keys.processing).query(dreams.con).unwrap();
    assert_eq!(exists, 0);
    assert_eq!(dreams.recover(), 0);
    assert_eq!(info(dreams.con)["recovered"], 2);
}

#[test]
fn recover_wakes_a_blocked_drainer() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("recover-wake");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("p", 1, &[]);
    let payload = dreams.take_one();
    let reply = drain_in_thread(&server, &org, "0");
    wait_until("the drainer blocks", || blocked_clients(&mut con) == 1);
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.recover(), 1);
    let got = reply.recv_timeout(DEADLINE).expect("woken").unwrap().unwrap();
    assert_eq!(got, payload);
    assert_eq!(dreams.len(), (0, 0, 1));
}

#[test]
fn an_ack_retry_wakes_a_blocked_drainer() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-wake");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.record("p", 1, 3, 0, &strs(&trigger(3, 100, 0, NEVER_SECS)));
    let payload = dreams.take_one();
    let reply = drain_in_thread(&server, &org, "0");
    wait_until("the drainer blocks", || blocked_clients(&mut con) == 1);
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.ack(&payload, "FAILURE", &[]).0, "requeued");
    let retried = reply.recv_timeout(DEADLINE).expect("woken").unwrap().unwrap();
    assert_eq!(SeedFireMessage::parse(&retried).fire_id, SeedFireMessage::parse(&payload).fire_id);
    assert_eq!(dreams.len(), (0, 0, 1));
}
