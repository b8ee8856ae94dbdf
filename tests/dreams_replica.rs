//! Replication and AOF: the DREAMS.* commands read the clock and make
//! UUIDs, so they replicate their effects; a replica (and an AOF reload)
//! must end with exactly the master's dataset (`DEBUG DIGEST`) after a mixed
//! workload that includes a blocked DRAIN woken by another connection (the
//! write then happens in the wake-up callback), quiet-hours deferrals, ACK
//! requeues, stale ACKs, RECOVER, SETTLE, EVENT deduplication and dead
//! letters.

use crate::common;
use crate::dreams_support;

use std::sync::mpsc;
use std::thread;

use common::{blocked_clients, tenant, wait_until, Server, DEADLINE};
use dreams_support::*;
use redis::{Connection, Value};

fn wait_for_same_digest(master: &Server, replica: &Server) {
    let mut m = master.connect();
    let mut r = replica.connect();
    let started = std::time::Instant::now();
    loop {
        let last = (digest(&mut m), digest(&mut r));
        if last.0 == last.1 {
            return;
        }
        if started.elapsed() > DEADLINE {
            panic!("replica digest {} never matched master {}", last.1, last.0);
        }
        thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A deterministic mixed workload on `org`, covering every write path.
fn workload(server: &Server, con: &mut Connection, org: &str) {
    let covering = window(con, 0, 2);
    let keys = Keys::new(org);
    let mut dreams = Dreams::new(con, org);
    let fast = trigger(2, 5, 0, NEVER_SECS);
    // Records with and without identity, replays, settles.
    for i in 0..6u64 {
        let event = format!("e-{}", i % 3);
        let generation = (i + 1).to_string();
        let mut extra = vec!["NODE", "n1", "EVENT", &event, "GENERATION", &generation];
        extra.extend(strs(&fast));
        dreams.record(&format!("p{}", i % 2), 1, 1, 2, &extra);
    }
    dreams.settle("p0", 1, "e-0", 3, &[]);
    dreams.settle("p1", 1, "e-1", 9, &["RETAIN"]);
    dreams.record("p2", 7, 4_294_967_295, 1, &strs(&fast));
    dreams.fire("f1", 1, &["NODE", "n2"]);
    dreams.fire("f2", 1, &[]);
    // Quiet hours: everything unmarked is marked once.
    let first = dreams.drain("1", &["QUIET", &covering]).expect("work");
    // ACK failure requeues the same fire; success with min interval 0 may requeue.
    dreams.ack(&first, "FAILURE", &["NODE", "n3"]);
    while let Some(payload) = dreams.drain("0.01", &["NOQUIET"]) {
        dreams.ack(&payload, "SUCCESS", &strs(&trigger(1, 1, 0, NEVER_SECS)));
        if dreams.len().0 == 0 {
            break;
        }
    }
    // A stale ACK removes its payload; RECOVER brings the rest back.
    dreams.record("p3", 1, 5, 0, &strs(&fast));
    dreams.fire("f3", 1, &[]);
    let counted = dreams.take_one();
    let explicit = dreams.take_one();
    let _: () =
        redis::cmd("HSET").arg(keys.counters("p3", 1)).arg("pending").arg("moved-on").query(dreams.con).unwrap();
    assert_eq!(dreams.ack(&counted, "SUCCESS", &[]).0, "stale");
    let _ = explicit;
    dreams.recover();
    // Dead letters.
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg("junk").query(dreams.con).unwrap();
    while dreams.take().is_some() {}
    // A blocked DRAIN woken first by garbage (dead-lettered in the wake-up
    // callback, keeps waiting), then by a fire from another connection.
    let mut drainer = server.connect();
    let (sender, receiver) = mpsc::channel();
    let thread_org = org.to_owned();
    thread::spawn(move || {
        let _ = sender.send(call(&mut drainer, &["DREAMS.DRAIN", &thread_org, "0", "NOQUIET"]));
    });
    wait_until("the drainer blocks", || blocked_clients(dreams.con) == 1);
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg("junk-while-blocked").query(dreams.con).unwrap();
    wait_until("the junk is dead-lettered", || dreams.dead().len() == 2);
    let t = trigger(1, 1, 0, NEVER_SECS);
    dreams.record("woken", 1, 1, 0, &strs(&t));
    let woken = receiver.recv_timeout(DEADLINE).expect("woken").expect("payload");
    let Value::BulkString(woken) = woken else { panic!("{woken:?}") };
    dreams.ack(&woken, "SUCCESS", &strs(&t));
    // Due deferrals promoted by a drain.
    let now = server_time(dreams.con);
    let deferred =
        format!(r#"{{"region":{{"org":"{org}","project":"d","memory_type":1}},"fired_by":"n","quiet_deferred":true}}"#);
    let _: () = redis::cmd("ZADD").arg(&keys.deferred).arg(now - 1).arg(&deferred).query(dreams.con).unwrap();
    dreams.take_one();
}

#[test]
fn a_replica_ends_with_the_master_s_dataset() {
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    for label in ["replica-a", "replica-b"] {
        let org = tenant(label);
        workload(&master, &mut con, &org);
        wait_for_same_digest(&master, &replica);
        let mut on_replica = replica.connect();
        assert_eq!(Dreams::new(&mut on_replica, &org).len(), Dreams::new(&mut con, &org).len());
    }
    // A replica refuses writes and answers reads.
    let mut on_replica = replica.connect();
    let error = error_of(&mut on_replica, &["DREAMS.FIRE", "x", "p", "1"]);
    assert!(error.starts_with("READONLY"), "{error}");
}

#[test]
fn garbage_waking_a_blocked_drain_is_replicated_and_the_server_survives() {
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    let org = tenant("replica-garbage-wake");
    let keys = Keys::new(&org);
    let mut drainer = master.connect();
    let (sender, receiver) = mpsc::channel();
    let thread_org = org.clone();
    thread::spawn(move || {
        let _ = sender.send(call(&mut drainer, &["DREAMS.DRAIN", &thread_org, "0", "NOQUIET"]));
    });
    wait_until("the drainer blocks", || blocked_clients(&mut con) == 1);
    for junk in ["junk-1", "junk-2"] {
        let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg(junk).query(&mut con).unwrap();
        assert_eq!(text(&ok(&mut con, &["PING"])), "PONG");
    }
    let mut dreams = Dreams::new(&mut con, &org);
    wait_until("both dead-lettered", || dreams.dead().len() == 2);
    assert_eq!(blocked_clients(dreams.con), 1);
    wait_for_same_digest(&master, &replica);
    dreams.fire("real", 1, &[]);
    let woken = receiver.recv_timeout(DEADLINE).expect("woken").expect("payload");
    assert!(matches!(woken, Value::BulkString(_)), "{woken:?}");
    wait_for_same_digest(&master, &replica);
    assert!(master.alive());
}

#[test]
fn a_random_workload_replicates_exactly() {
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    set_config(&mut con, "queue-max", "12");
    let org = tenant("replica-random");
    let covering = window(&mut con, 0, 2);
    let mut dreams = Dreams::new(&mut con, &org);
    let mut random = common::random::Random::new(0x9e37_79b9_7f4a_7c15);
    let mut next = move |n: u64| random.next() % n;
    let mut held: Vec<Vec<u8>> = Vec::new();
    for step in 0..600 {
        let project = format!("p{}", next(3));
        let t = trigger(next(4) + 1, next(6) + 1, [0, NEVER_SECS][next(2) as usize], [0, NEVER_SECS][next(2) as usize]);
        match next(10) {
            0 => {
                dreams.fire(&project, 1, &[]);
            }
            1..=3 => {
                let event = format!("e{}", next(5));
                let generation = (next(6) + 1).to_string();
                let mut extra = vec!["EVENT", event.as_str(), "GENERATION", generation.as_str()];
                if next(2) == 0 {
                    extra.clear();
                }
                extra.extend(strs(&t));
                dreams.record(&project, 1, next(3), next(3), &extra);
            }
            4 => dreams.settle(
                &project,
                1,
                &format!("e{}", next(5)),
                next(6) + 1,
                if next(2) == 0 { &["RETAIN"] } else { &[] },
            ),
            5 | 6 => {
                let quiet = if next(2) == 0 { vec!["QUIET", covering.as_str()] } else { vec!["NOQUIET"] };
                if let Some(payload) = dreams.drain("0.001", &quiet) {
                    held.push(payload);
                }
            }
            7 | 8 if !held.is_empty() => {
                let at = next(held.len() as u64) as usize;
                let payload = if next(4) == 0 { held[at].clone() } else { held.swap_remove(at) };
                let result = if next(2) == 0 { "SUCCESS" } else { "FAILURE" };
                dreams.ack(&payload, result, &strs(&t));
            }
            9 if step % 5 == 0 => {
                dreams.recover();
            }
            _ => {}
        }
    }
    wait_for_same_digest(&master, &replica);
}

#[test]
fn commands_inside_scripts_and_transactions_replicate_exactly() {
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    let org = tenant("replica-scripted");
    let record = "return redis.call('DREAMS.RECORD', KEYS[1], 'p', '1', '3', '1', 'EVENT', ARGV[1], 'GENERATION', '1', 'TRIGGER', '3', '9', '0', '0')";
    ok(&mut con, &["EVAL", record, "1", &org, "e-1"]);
    ok(&mut con, &["EVAL", record, "1", &org, "e-1"]);
    ok(&mut con, &["EVAL", "return redis.call('DREAMS.SETTLE', KEYS[1], 'p', '1', 'e-1', '1')", "1", &org]);
    ok(&mut con, &["EVAL", "return redis.call('DREAMS.FIRE', KEYS[1], 'q', '1')", "1", &org]);
    let drained = ok(&mut con, &["EVAL", "return redis.call('DREAMS.DRAIN', KEYS[1], '0', 'NOQUIET')", "1", &org]);
    let Value::BulkString(payload) = drained else { panic!("{drained:?}") };
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("DREAMS.ACK")
        .arg(&org)
        .arg(&payload)
        .arg("FAILURE")
        .cmd("DREAMS.RECORD")
        .arg(&org)
        .arg("p")
        .arg(1)
        .arg(1)
        .arg(1)
        .arg("EVENT")
        .arg("e-2")
        .arg("GENERATION")
        .arg(2)
        .cmd("DREAMS.DRAIN")
        .arg(&org)
        .arg(0)
        .arg("NOQUIET")
        .cmd("DREAMS.RECOVER")
        .arg(&org)
        .query(&mut con)
        .unwrap();
    assert_eq!(replies.len(), 4);
    wait_for_same_digest(&master, &replica);
}

#[test]
fn an_aof_reload_reproduces_the_dataset() {
    let server = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut con = server.connect();
    let org = tenant("aof");
    workload(&server, &mut con, &org);
    let before = digest(&mut con);
    assert_ne!(before, "0000000000000000000000000000000000000000");
    ok(&mut con, &["DEBUG", "LOADAOF"]);
    assert_eq!(digest(&mut con), before);
}
