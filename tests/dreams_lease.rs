//! Leases on drained fires (`DREAMS.DRAIN ... LEASE`, `DREAMS.EXTEND`,
//! `DREAMS.INFLIGHT`, config `dreamtown.lease`): an item not acknowledged
//! in time comes back to the head of ready by itself, wakes a blocked
//! drainer, and a late ACK is honoured once; deadlines replicate, persist
//! in the AOF and are expired by a promoted replica.

use crate::common;
use crate::dreams_support;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{blocked_clients, tenant, wait_until, Server, DEADLINE};
use dreams_support::*;
use redis::{Connection, Value};

fn leases_key(org: &str) -> String {
    format!("exocortex:dreams:{{{org}}}:leases")
}

/// `DREAMS.INFLIGHT` as (payload, deadline-ms or None).
fn inflight(con: &mut Connection, org: &str) -> Vec<(Vec<u8>, Option<i64>)> {
    match ok(con, &["DREAMS.INFLIGHT", org]) {
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Array(pair) => match (&pair[0], &pair[1]) {
                    (Value::BulkString(p), Value::Nil) => (p.clone(), None),
                    (Value::BulkString(p), deadline) => (p.clone(), Some(int(deadline))),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("INFLIGHT replied {other:?}"),
    }
}

fn extend(con: &mut Connection, org: &str, payload: &[u8], secs: &str) -> i64 {
    int(&call_bytes(con, &[b"DREAMS.EXTEND", org.as_bytes(), payload, secs.as_bytes()]).expect("EXTEND"))
}

fn server_ms(con: &mut Connection) -> i64 {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query(con).expect("TIME");
    secs * 1000 + micros / 1000
}

/// A counted fire of region `p`/1 (5 memories), drained under `lease`.
fn counted_fire(dreams: &mut Dreams<'_>, lease: &str) -> Vec<u8> {
    let (outcome, _, _) = dreams.record("p", 1, 5, 0, &strs(&trigger(1, 1_000, 0, NEVER_SECS)));
    assert_eq!(outcome, "queued");
    dreams.drain("0.01", &["NOQUIET", "LEASE", lease]).expect("the fire")
}

#[test]
fn an_expired_lease_puts_only_its_item_back_at_the_head_at_its_deadline() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("lease-head");
    let mut dreams = Dreams::new(&mut con, &org);
    for project in ["a", "b", "c"] {
        dreams.fire(project, 1, &[]);
    }
    let started = server_ms(dreams.con);
    let leased = dreams.drain("0.01", &["NOQUIET", "LEASE", "0.4"]).unwrap();
    let kept = dreams.drain("0.01", &["NOQUIET"]).unwrap();
    let deadline = inflight(dreams.con, &org)[0].1.expect("a deadline");
    assert!(deadline >= started + 400 && deadline <= started + 400 + 1_000, "{deadline} vs {started}");
    assert_eq!(inflight(dreams.con, &org)[1], (kept.clone(), None));
    let before = info(dreams.con)["leases_expired"];
    wait_until("the leased item is back in ready", || dreams.processing().len() == 1);
    let back_at = server_ms(dreams.con);
    assert!(back_at >= deadline, "expired early: {back_at} < {deadline}");
    assert!(back_at <= deadline + 1_000, "expired late: {back_at} > {deadline} + 1s");
    assert_eq!(dreams.ready()[0], leased, "at the head");
    assert_eq!(dreams.ready().len(), 2);
    assert_eq!(dreams.processing(), vec![kept], "nothing else moved");
    assert_eq!(info(dreams.con)["leases_expired"], before + 1);
    assert_eq!(dreams.take_one(), leased, "it runs next");
}

#[test]
fn an_expired_item_wakes_a_blocked_drainer() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("lease-wake");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    let leased = dreams.drain("0.01", &["NOQUIET", "LEASE", "0.5"]).unwrap();
    let (sender, receiver) = mpsc::channel();
    let mut waiter = server.connect();
    let waiting_org = org.clone();
    let handle = thread::spawn(move || {
        let got = Dreams::new(&mut waiter, &waiting_org).drain("0", &["NOQUIET"]);
        sender.send(got).unwrap();
    });
    wait_until("the drainer blocks", || blocked_clients(dreams.con) == 1);
    let got = receiver.recv_timeout(DEADLINE).expect("the blocked drainer is woken");
    assert_eq!(got, Some(leased.clone()));
    handle.join().unwrap();
    assert_eq!(dreams.processing(), vec![leased]);
    assert!(inflight(dreams.con, &org)[0].1.is_none(), "the second drain was not leased");
}

#[test]
fn extend_holds_the_item_until_the_worker_stops_extending() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("lease-extend");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    let leased = dreams.drain("0.01", &["NOQUIET", "LEASE", "0.5"]).unwrap();
    let until = Instant::now() + Duration::from_millis(1_500);
    while Instant::now() < until {
        // Extended every 100 ms by 0.5 s: three lease lengths pass.
        assert_eq!(extend(dreams.con, &org, &leased, "0.5"), 1);
        assert_eq!(dreams.processing(), vec![leased.clone()], "held while extended");
        thread::sleep(Duration::from_millis(100));
    }
    wait_until("it comes back once extending stops", || dreams.ready() == vec![leased.clone()]);
    assert_eq!(extend(dreams.con, &org, &leased, "5"), 0, "no one holds it now");
    assert_eq!(extend(dreams.con, &org, b"never drained", "5"), 0);
    // Drained again and acknowledged: no lease left to extend.
    let again = dreams.drain("0.01", &["NOQUIET", "LEASE", "30"]).unwrap();
    assert_eq!(dreams.ack(&again, "SUCCESS", &[]).0, "acknowledged");
    assert_eq!(extend(dreams.con, &org, &again, "5"), 0);
    assert_eq!(int(&ok(dreams.con, &["EXISTS", &leases_key(&org)])), 0);
}

#[test]
fn a_late_ack_of_an_item_back_in_ready_is_honoured_once() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("lease-late-ready");
    let mut dreams = Dreams::new(&mut con, &org);
    let payload = counted_fire(&mut dreams, "0.3");
    wait_until("expired", || dreams.ready() == vec![payload.clone()]);
    let (outcome, memories, _) = dreams.ack(&payload, "SUCCESS", &strs(&trigger(1, 1_000, 0, NEVER_SECS)));
    assert_eq!((outcome.as_str(), memories), ("acknowledged", 0));
    assert!(dreams.ready().is_empty(), "the work is not handed out again");
    assert_eq!(dreams.len(), (0, 0, 0));
    let (outcome, memories, _) = dreams.ack(&payload, "SUCCESS", &[]);
    assert_eq!((outcome.as_str(), memories), ("stale", 0));
    assert_eq!(dreams.counter("p", 1, "memories"), Some(0), "subtracted once");
    assert_eq!(int(&ok(dreams.con, &["EXISTS", &leases_key(&org)])), 0);
}

#[test]
fn a_late_ack_of_a_re_leased_item_makes_the_second_holders_ack_stale() {
    let server = Server::start();
    let mut con = server.connect();
    let mut second = server.connect();
    let org = tenant("lease-late-again");
    let mut dreams = Dreams::new(&mut con, &org);
    let payload = counted_fire(&mut dreams, "0.3");
    wait_until("expired", || dreams.ready() == vec![payload.clone()]);
    let mut worker_b = Dreams::new(&mut second, &org);
    assert_eq!(worker_b.drain("0.01", &["NOQUIET", "LEASE", "60"]), Some(payload.clone()));
    let (outcome, memories, _) = dreams.ack(&payload, "SUCCESS", &strs(&trigger(1, 1_000, 0, NEVER_SECS)));
    assert_eq!((outcome.as_str(), memories), ("acknowledged", 0));
    assert!(dreams.processing().is_empty());
    let mut worker_b = Dreams::new(&mut second, &org);
    assert_eq!(worker_b.ack(&payload, "SUCCESS", &[]).0, "stale");
    assert_eq!(dreams.counter("p", 1, "memories"), Some(0));
    assert_eq!(dreams.len(), (0, 0, 0));
}

#[test]
fn without_a_lease_nothing_expires_and_the_config_sets_a_default() {
    let server = Server::start();
    let mut con = server.connect();
    let plain = tenant("lease-none");
    let timed = tenant("lease-timed");
    Dreams::new(&mut con, &plain).fire("a", 1, &[]);
    let unleased = Dreams::new(&mut con, &plain).take_one();
    let mut dreams = Dreams::new(&mut con, &timed);
    dreams.fire("a", 1, &[]);
    dreams.drain("0.01", &["NOQUIET", "LEASE", "0.2"]).unwrap();
    // Proof the timer ran past that deadline: the leased one came back.
    wait_until("the leased item expired", || dreams.ready().len() == 1);
    thread::sleep(Duration::from_millis(300));
    let mut dreams = Dreams::new(&mut con, &plain);
    assert_eq!(dreams.processing(), vec![unleased]);
    assert_eq!(inflight(&mut con, &plain)[0].1, None);
    assert_eq!(int(&ok(&mut con, &["EXISTS", &leases_key(&plain)])), 0);
    // The config: a whole number of seconds; DRAIN's LEASE still wins.
    set_config(&mut con, "lease", "30");
    let org = tenant("lease-config");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    dreams.fire("b", 1, &[]);
    let now = server_ms(dreams.con);
    dreams.take_one();
    dreams.drain("0.01", &["NOQUIET", "LEASE", "100"]).unwrap();
    let listed = inflight(dreams.con, &org);
    let first = listed[0].1.unwrap() - now;
    let second = listed[1].1.unwrap() - now;
    assert!((30_000..32_000).contains(&first), "{first}");
    assert!((100_000..102_000).contains(&second), "{second}");
    assert!(call(&mut con, &["CONFIG", "SET", "dreamtown.lease", "-1"]).is_err());
}

#[test]
fn bad_lease_arguments_change_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("lease-errors");
    Dreams::new(&mut con, &org).fire("a", 1, &[]);
    for bad in [
        &["LEASE"][..],
        &["LEASE", "0"],
        &["LEASE", "-1"],
        &["LEASE", "x"],
        &["LEASE", "nan"],
        &["LEASE", "inf"],
        &["LEASE", "1", "LEASE", "2"],
        &["LEASE", "9999999999"],
    ] {
        let mut args = vec!["DREAMS.DRAIN", org.as_str(), "0.01", "NOQUIET"];
        args.extend_from_slice(bad);
        let error = error_of(&mut con, &args);
        assert!(error.starts_with("ERR"), "{bad:?}: {error}");
    }
    for bad in [
        &["DREAMS.EXTEND", &org, "p"][..],
        &["DREAMS.EXTEND", &org, "p", "0"],
        &["DREAMS.EXTEND", &org, "p", "1", "x"],
        &["DREAMS.EXTEND", "a{b", "p", "1"],
        &["DREAMS.INFLIGHT"],
        &["DREAMS.INFLIGHT", &org, "x"],
    ] {
        assert!(call(&mut con, bad).is_err(), "{bad:?}");
    }
    // A lease key of the wrong type: DRAIN LEASE refuses before writing.
    ok(&mut con, &["SET", &leases_key(&org), "x"]);
    let error = error_of(&mut con, &["DREAMS.DRAIN", &org, "0.01", "NOQUIET", "LEASE", "5"]);
    assert!(error.starts_with("WRONGTYPE"), "{error}");
    assert!(call(&mut con, &["DREAMS.EXTEND", &org, "p", "5"]).unwrap_err().starts_with("WRONGTYPE"));
    assert!(call(&mut con, &["DREAMS.INFLIGHT", &org]).unwrap_err().starts_with("WRONGTYPE"));
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!((dreams.ready().len(), dreams.processing().len()), (1, 0), "nothing moved");
}

#[test]
fn recover_clears_the_leases_of_what_it_moves() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("lease-recover");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    dreams.fire("b", 1, &[]);
    dreams.drain("0.01", &["NOQUIET", "LEASE", "0.5"]).unwrap();
    dreams.drain("0.01", &["NOQUIET", "LEASE", "60"]).unwrap();
    assert_eq!(dreams.recover(), 2);
    assert_eq!(int(&ok(dreams.con, &["EXISTS", &leases_key(&org)])), 0);
    let before = info(dreams.con)["leases_expired"];
    thread::sleep(Duration::from_millis(800));
    assert_eq!(info(dreams.con)["leases_expired"], before, "nothing left to expire");
    assert_eq!(dreams.ready().len(), 2);
}

#[test]
fn a_promoted_replica_expires_its_old_masters_leases_and_replicas_stay_equal() {
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    let org = tenant("lease-failover");
    let expired_on_master = tenant("lease-on-master");
    let mut dreams = Dreams::new(&mut con, &expired_on_master);
    dreams.fire("a", 1, &[]);
    dreams.fire("b", 1, &[]);
    dreams.drain("0.01", &["NOQUIET", "LEASE", "0.2"]).unwrap();
    dreams.drain("0.01", &["NOQUIET"]).unwrap();
    wait_until("expired on the master", || dreams.ready().len() == 1);
    // The expiry replicated as effects: the replica holds the same data.
    let mut r = replica.connect();
    wait_until("replica digest equal", || digest(&mut con) == digest(&mut r));
    assert_eq!(lrange(&mut r, &Keys::new(&expired_on_master).ready).len(), 1);
    // A lease granted by the master, then the master dies and the replica is promoted.
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    let leased = dreams.drain("0.01", &["NOQUIET", "LEASE", "1.5"]).unwrap();
    wait_until("the lease reached the replica", || int(&ok(&mut r, &["EXISTS", &leases_key(&org)])) == 1);
    drop(dreams);
    drop(con);
    drop(master);
    ok(&mut r, &["REPLICAOF", "NO", "ONE"]);
    wait_until("the promoted replica expires it", || lrange(&mut r, &Keys::new(&org).ready) == vec![leased.clone()]);
    assert!(lrange(&mut r, &Keys::new(&org).processing).is_empty());
}

#[test]
fn an_aof_reload_keeps_deadlines_and_replays_expiries_exactly() {
    let server = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let replica = server.start_replica();
    let mut con = server.connect();
    let org = tenant("lease-aof");
    let mut dreams = Dreams::new(&mut con, &org);
    for project in ["a", "b", "c"] {
        dreams.fire(project, 1, &[]);
    }
    dreams.drain("0.01", &["NOQUIET", "LEASE", "0.2"]).unwrap();
    let long = dreams.drain("0.01", &["NOQUIET", "LEASE", "2"]).unwrap();
    wait_until("the short lease expired", || dreams.processing() == vec![long.clone()]);
    let before = inflight(dreams.con, &org);
    let digest_before = digest(dreams.con);
    ok(dreams.con, &["DEBUG", "LOADAOF"]);
    assert_eq!(inflight(dreams.con, &org), before, "deadlines kept");
    assert_eq!(digest(dreams.con), digest_before);
    wait_until("the reloaded lease still expires", || dreams.processing().is_empty());
    assert_eq!(dreams.ready()[0], long);
    let mut r = replica.connect();
    wait_until("replica digest equal", || digest(&mut con) == digest(&mut r));
    let after = digest(&mut con);
    ok(&mut con, &["DEBUG", "LOADAOF"]);
    assert_eq!(digest(&mut con), after, "the AOF replays the expiries");
}

#[test]
fn leases_are_checked_against_acl() {
    let server = Server::start();
    let mut admin = server.connect();
    let org = tenant("lease-acl");
    ok(
        &mut admin,
        &[
            "ACL",
            "SETUSER",
            "worker",
            "on",
            ">pw",
            "+@all",
            "-@dangerous",
            &format!("~exocortex:dreams:{{{org}}}:queue"),
            &format!("~exocortex:dreams:{{{org}}}:deferred"),
            &format!("~exocortex:dreams:{{{org}}}:processing"),
            &format!("~exocortex:dreams:{{{org}}}:dead"),
            &format!("~exocortex:dreams:{{{org}}}:counters:*"),
            &format!("~exocortex:dreams:{{{org}}}:events:*"),
        ],
    );
    for command in ["DREAMS.FIRE", "DREAMS.DRAIN", "DREAMS.EXTEND", "DREAMS.INFLIGHT", "DREAMS.ACK", "DREAMS.RECOVER"] {
        ok(&mut admin, &["ACL", "SETUSER", "worker", &format!("+{command}")]);
    }
    Dreams::new(&mut admin, &org).fire("a", 1, &[]);
    let mut worker = server.connect_as("worker", "pw");
    let error = error_of(&mut worker, &["DREAMS.DRAIN", &org, "0.01", "NOQUIET", "LEASE", "5"]);
    assert!(error.starts_with("NOPERM"), "{error}");
    assert_eq!(Dreams::new(&mut admin, &org).ready().len(), 1, "nothing moved");
    assert!(error_of(&mut worker, &["DREAMS.EXTEND", &org, "p", "5"]).starts_with("NOPERM"));
    assert!(error_of(&mut worker, &["DREAMS.INFLIGHT", &org]).starts_with("NOPERM"));
}

#[test]
fn the_new_commands_are_described_and_routed_by_tenant() {
    let server = Server::start();
    let mut con = server.connect();
    for (name, arity) in [("DREAMS.EXTEND", 4), ("DREAMS.INFLIGHT", -2), ("DREAMS.DRAIN", -3)] {
        let info = ok(&mut con, &["COMMAND", "INFO", name]);
        let Value::Array(entries) = info else { panic!("{info:?}") };
        let Some(Value::Array(fields)) = entries.first() else { panic!("{name} not registered") };
        assert_eq!(fields[1], Value::Int(arity), "{name} arity");
        assert_eq!(&fields[3..6], &[Value::Int(1), Value::Int(1), Value::Int(1)], "{name} first key");
        let docs = format!("{:?}", ok(&mut con, &["COMMAND", "DOCS", name]));
        for part in ["summary", "complexity", "arguments", "org"] {
            assert!(docs.contains(part), "{name} docs lack {part}: {docs}");
        }
        if name != "DREAMS.INFLIGHT" {
            assert!(docs.contains("secs"), "{name} documents its lease: {docs}");
        }
    }
    let docs = format!("{:?}", ok(&mut con, &["COMMAND", "DOCS", "TOWN.RECV"]));
    assert!(docs.contains("LEASE"), "{docs}");
}

#[test]
fn a_blocked_leased_drain_is_leased_when_woken_and_replicas_agree() {
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    let org = tenant("lease-blocked");
    let (sender, receiver) = mpsc::channel();
    let mut waiter = master.connect();
    let waiting_org = org.clone();
    let handle = thread::spawn(move || {
        let got = Dreams::new(&mut waiter, &waiting_org).drain("0", &["NOQUIET", "LEASE", "0.3"]);
        sender.send(got).unwrap();
    });
    wait_until("the drainer blocks", || blocked_clients(&mut con) == 1);
    Dreams::new(&mut con, &org).fire("a", 1, &[]);
    let got = receiver.recv_timeout(DEADLINE).expect("woken").expect("a payload");
    handle.join().unwrap();
    let listed = inflight(&mut con, &org);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].0, got);
    assert!(listed[0].1.is_some(), "leased in the wake-up callback");
    let mut dreams = Dreams::new(&mut con, &org);
    wait_until("it expires", || dreams.ready() == vec![got.clone()]);
    let mut r = replica.connect();
    wait_until("replica digest equal", || digest(&mut con) == digest(&mut r));
}

#[test]
fn a_restored_lease_set_is_indexed_and_expires() {
    // What a cluster slot migration does to the importing node: the keys
    // arrive by RESTORE, and the node must learn of their leases.
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("lease-restore");
    let keys = Keys::new(&org);
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    let leased = dreams.drain("0.01", &["NOQUIET", "LEASE", "1.5"]).unwrap();
    let dump = |con: &mut Connection, key: &str| -> Vec<u8> { redis::cmd("DUMP").arg(key).query(con).unwrap() };
    let processing = dump(dreams.con, &keys.processing);
    let lease_set = dump(dreams.con, &leases_key(&org));
    // Moved to another organization name (another tenant the index never saw).
    let moved = tenant("lease-restored");
    let moved_keys = Keys::new(&moved);
    let payload_elsewhere = leased.clone();
    redis::cmd("RESTORE").arg(&moved_keys.processing).arg(0).arg(processing).query::<()>(dreams.con).unwrap();
    redis::cmd("RESTORE").arg(leases_key(&moved)).arg(0).arg(lease_set).query::<()>(dreams.con).unwrap();
    ok(dreams.con, &["DEL", &keys.processing, &leases_key(&org)]);
    wait_until("the restored lease expires", || lrange(&mut con, &moved_keys.ready) == vec![payload_elsewhere.clone()]);
    assert!(lrange(&mut con, &moved_keys.processing).is_empty());
}
