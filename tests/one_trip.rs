//! The one-trip worker loops: `DREAMS.DRAIN ... ACK <payload> SUCCESS|FAILURE`
//! and `TOWN.RECV ... RELIABLE ACK <message-id>` (acknowledge the last item
//! and take the next in one call), and `DREAMS.DRAIN ... COUNT <n>`.
//!
//! What the two-call loop guarantees holds here too: exactly once under
//! concurrent consumers, first come first served among blocked drainers,
//! the acknowledgement standing when the drain then times out or its client
//! disconnects (and reaching the replica while the call is still blocked),
//! an error (arguments, types, ACL on either half) changing nothing, leases
//! and quiet hours applied to every item of a batch as single drains would.
//! Blocking is observed (INFO `blocked_clients`), never assumed.

use crate::common;
use crate::dreams_support;

use std::collections::HashSet;
use std::sync::mpsc;
use std::thread;

use common::{blocked_clients, tenant, wait_until, Server, DEADLINE};
use dreams_support::*;
use redis::{Connection, Value};

/// `DREAMS.DRAIN org timeout extra... ACK payload result ack_extra...`.
fn one_trip(
    con: &mut Connection,
    org: &str,
    timeout: &str,
    extra: &[&str],
    payload: &[u8],
    result: &str,
) -> Result<Value, String> {
    let mut args: Vec<&[u8]> = vec![b"DREAMS.DRAIN", org.as_bytes(), timeout.as_bytes()];
    args.extend(extra.iter().map(|a| a.as_bytes()));
    args.extend([b"ACK".as_slice(), payload, result.as_bytes()]);
    call_bytes(con, &args)
}

/// `[ack reply, drain reply]`.
fn halves(value: Value) -> (Value, Value) {
    match value {
        Value::Array(mut items) if items.len() == 2 => {
            let second = items.pop().unwrap();
            (items.pop().unwrap(), second)
        }
        other => panic!("not a two-element reply: {other:?}"),
    }
}

fn bulk(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::Nil => None,
        Value::BulkString(bytes) => Some(bytes.clone()),
        other => panic!("not a payload: {other:?}"),
    }
}

fn bulks(value: &Value) -> Vec<Vec<u8>> {
    match value {
        Value::Nil => Vec::new(),
        Value::Array(items) => items.iter().map(|item| bulk(item).expect("a payload")).collect(),
        other => panic!("not an array of payloads: {other:?}"),
    }
}

fn project_of(payload: &[u8]) -> String {
    SeedFireMessage::parse(payload).region.project
}

/// Run `args` on a connection of its own in a thread; also its client id.
fn in_thread(server: &Server, args: Vec<Vec<u8>>) -> (i64, mpsc::Receiver<Result<Value, String>>) {
    let mut con = server.connect();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut con).unwrap();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let _ = sender.send(call_bytes(&mut con, &refs));
    });
    (id, receiver)
}

fn owned(args: &[&[u8]]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.to_vec()).collect()
}

fn wait_same_digest(master: &Server, replica: &Server) {
    let (mut m, mut r) = (master.connect(), replica.connect());
    wait_until("the replica's digest equals the master's", || digest(&mut m) == digest(&mut r));
}

#[test]
fn drain_ack_acknowledges_then_hands_out_the_next_item() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("onetrip-basic");
    let mut dreams = Dreams::new(&mut con, &org);
    for project in ["a", "b"] {
        dreams.fire(project, 1, &[]);
    }
    let first = dreams.take_one();
    let (acked, next) = halves(one_trip(dreams.con, &org, "1", &["NOQUIET"], &first, "SUCCESS").unwrap());
    assert_eq!(counted(&acked).0, "acknowledged");
    let next = bulk(&next).expect("the next item");
    assert_eq!(project_of(&next), "b");
    assert_eq!(dreams.processing(), [next.as_slice()], "the acknowledged one left, the next is in flight");
    // Acknowledging it again is stale (its exact payload is gone), and the
    // drain still runs: nothing there, so nil after the timeout.
    let (acked, none) = halves(one_trip(dreams.con, &org, "0.05", &["NOQUIET"], &first, "SUCCESS").unwrap());
    assert_eq!(counted(&acked).0, "stale");
    assert_eq!(none, Value::Nil);
    let (acked, none) = halves(one_trip(dreams.con, &org, "0.05", &["NOQUIET"], &next, "FAILURE").unwrap());
    assert_eq!(counted(&acked).0, "acknowledged", "a FAILURE of a FIRE payload just removes it");
    assert_eq!(none, Value::Nil);
    assert_eq!(dreams.len(), (0, 0, 0));
    let stats = info(dreams.con);
    assert_eq!((stats["drained"], stats["acks_stale"]), (2, 1));
}

#[test]
fn inside_multi_the_one_trip_form_never_blocks() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("onetrip-multi");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    let payload = dreams.take_one();
    let payload = String::from_utf8(payload).unwrap();
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("DREAMS.DRAIN")
        .arg(&org)
        .arg("0")
        .arg("NOQUIET")
        .arg("ACK")
        .arg(&payload)
        .arg("SUCCESS")
        .cmd("DREAMS.DRAIN")
        .arg(&org)
        .arg("0")
        .arg("COUNT")
        .arg("3")
        .query(dreams.con)
        .unwrap();
    let (acked, none) = halves(replies[0].clone());
    assert_eq!(counted(&acked).0, "acknowledged");
    assert_eq!(none, Value::Nil);
    assert_eq!(replies[1], Value::Nil);
}

#[test]
fn the_acknowledgement_stands_when_the_drain_times_out_or_the_client_disconnects_and_reaches_the_replica_while_blocked()
{
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    let org = tenant("onetrip-stands");
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(5, 100, 0, NEVER_SECS);
    dreams.record("p", 1, 5, 2, &strs(&t));
    dreams.record("q", 1, 5, 2, &strs(&t));
    let (p, q) = (dreams.take_one(), dreams.take_one());

    // Timeout: the reply carries the acknowledgement, then nil.
    let started = std::time::Instant::now();
    let (acked, none) = halves(one_trip(dreams.con, &org, "0.3", &["NOQUIET"], &p, "SUCCESS").unwrap());
    assert!(started.elapsed() >= std::time::Duration::from_millis(290), "it blocked");
    assert_eq!(counted(&acked), ("acknowledged".to_owned(), 0, 0));
    assert_eq!(none, Value::Nil);
    assert_eq!(dreams.processing(), [q.as_slice()]);
    assert_eq!(dreams.counter("p", 1, "memories"), Some(0));

    // Disconnect: block forever, see the acknowledgement on the master and
    // on the replica while the call is still blocked, then kill the client.
    let (id, reply) =
        in_thread(&master, owned(&[b"DREAMS.DRAIN", org.as_bytes(), b"0", b"NOQUIET", b"ACK", &q, b"SUCCESS"]));
    wait_until("the one-trip call blocks", || blocked_clients(dreams.con) == 1);
    assert_eq!(dreams.processing(), Vec::<Vec<u8>>::new(), "acknowledged before blocking");
    wait_same_digest(&master, &replica);
    let mut on_replica = replica.connect();
    assert_eq!(lrange(&mut on_replica, &dreams.keys.processing.clone()), Vec::<Vec<u8>>::new());
    let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query(dreams.con).unwrap();
    assert_eq!(killed, 1);
    assert!(reply.recv_timeout(DEADLINE).expect("the killed call returns").is_err());
    assert_eq!(blocked_clients(dreams.con), 0);
    assert_eq!(dreams.counter("q", 1, "memories"), Some(0), "the acknowledgement was not undone");
    dreams.fire("after", 1, &[]);
    assert_eq!(dreams.len(), (1, 0, 0), "nothing was moved for the dead client");
    wait_same_digest(&master, &replica);
}

#[test]
fn a_blocked_one_trip_call_is_served_with_its_acknowledgement_in_the_reply() {
    let server = Server::start();
    let replica = server.start_replica();
    let mut con = server.connect();
    let org = tenant("onetrip-served");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    let a = dreams.take_one();
    let (_, reply) = in_thread(
        &server,
        owned(&[b"DREAMS.DRAIN", org.as_bytes(), b"0", b"NOQUIET", b"LEASE", b"60", b"ACK", &a, b"SUCCESS"]),
    );
    wait_until("the one-trip call blocks", || blocked_clients(dreams.con) == 1);
    dreams.fire("b", 1, &[]);
    let (acked, next) = halves(reply.recv_timeout(DEADLINE).expect("served").unwrap());
    assert_eq!(counted(&acked).0, "acknowledged");
    let next = bulk(&next).unwrap();
    assert_eq!(project_of(&next), "b");
    assert_eq!(dreams.processing(), [next.as_slice()]);
    let leases: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg(format!("exocortex:dreams:{{{org}}}:leases"))
        .arg(0)
        .arg(-1)
        .query(dreams.con)
        .unwrap();
    assert_eq!(leases, [next], "the served item is leased, the acknowledged one is not");
    wait_same_digest(&server, &replica);
}

#[test]
fn a_one_trip_call_waits_behind_drainers_already_blocked_even_for_the_item_its_ack_requeued() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("onetrip-fifo");
    let mut dreams = Dreams::new(&mut con, &org);
    // Min interval 0: a successful ACK with enough new writes requeues at once.
    let t = trigger(1, 100, 0, NEVER_SECS);
    dreams.record("p", 1, 1, 0, &strs(&t));
    let p = dreams.take_one();
    dreams.record("p", 1, 3, 0, &strs(&t));
    let (_, waiter) = in_thread(&server, owned(&[b"DREAMS.DRAIN", org.as_bytes(), b"0", b"NOQUIET"]));
    wait_until("the first drainer blocks", || blocked_clients(dreams.con) == 1);
    let mut args: Vec<Vec<u8>> = owned(&[b"DREAMS.DRAIN", org.as_bytes(), b"0", b"NOQUIET", b"ACK", &p, b"SUCCESS"]);
    args.extend(t.iter().map(|a| a.as_bytes().to_vec()));
    let (_, late) = in_thread(&server, args);
    let requeued = waiter.recv_timeout(DEADLINE).expect("the first drainer is served").unwrap();
    let requeued = bulk(&requeued).expect("the requeued fire");
    assert_eq!(SeedFireMessage::parse(&requeued).fired_at.unwrap().memories_since_last_cycle, 3);
    wait_until("the one-trip call waits", || blocked_clients(dreams.con) == 1);
    assert!(late.try_recv().is_err(), "the later caller did not jump the queue");
    dreams.fire("next", 1, &[]);
    let (acked, next) = halves(late.recv_timeout(DEADLINE).expect("served next").unwrap());
    assert_eq!(counted(&acked).0, "requeued");
    assert_eq!(project_of(&bulk(&next).unwrap()), "next");
}

#[test]
fn concurrent_one_trip_consumers_take_every_item_exactly_once() {
    const ITEMS: usize = 300;
    const CONSUMERS: usize = 4;
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("onetrip-exactly-once");
    let (sender, seen) = mpsc::channel::<Vec<u8>>();
    let mut workers = Vec::new();
    for _ in 0..CONSUMERS {
        let (mut con, org, sender) = (server.connect(), org.clone(), sender.clone());
        workers.push(thread::spawn(move || {
            let mut last: Option<Vec<u8>> = None;
            loop {
                let next = match &last {
                    None => bulk(&call(&mut con, &["DREAMS.DRAIN", &org, "1", "NOQUIET"]).unwrap()),
                    Some(done) => {
                        let (acked, next) =
                            halves(one_trip(&mut con, &org, "1", &["NOQUIET"], done, "SUCCESS").unwrap());
                        assert_eq!(counted(&acked).0, "acknowledged", "each item is acknowledged once, by its holder");
                        bulk(&next)
                    }
                };
                match next {
                    Some(payload) => {
                        sender.send(payload.clone()).unwrap();
                        last = Some(payload);
                    }
                    None => return,
                }
            }
        }));
    }
    drop(sender);
    let mut producer = server.connect();
    for i in 0..ITEMS {
        let project = format!("p{i}");
        assert_eq!(text(&ok(&mut producer, &["DREAMS.FIRE", &org, &project, "1"])), "queued");
    }
    for worker in workers {
        worker.join().expect("a consumer");
    }
    let projects: Vec<String> = seen.iter().map(|p| project_of(&p)).collect();
    let distinct: HashSet<&String> = projects.iter().collect();
    assert_eq!((projects.len(), distinct.len()), (ITEMS, ITEMS), "every item handed out once");
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.len(), (0, 0, 0), "every item acknowledged");
    assert_eq!(info(dreams.con)["acks_acknowledged"], ITEMS as u64);
}

#[test]
fn errors_in_either_half_change_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("onetrip-errors");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    dreams.fire("b", 1, &[]);
    let a = dreams.take_one();
    let other_org =
        String::from_utf8(a.clone()).unwrap().replace(&format!("\"org\":\"{org}\""), "\"org\":\"elsewhere\"");
    let before = digest(dreams.con);
    let a_text = String::from_utf8(a.clone()).unwrap();
    let bad: Vec<Vec<&str>> = vec![
        vec!["DREAMS.DRAIN", &org, "1", "ACK", "not json", "SUCCESS"],
        vec!["DREAMS.DRAIN", &org, "1", "ACK", &other_org, "SUCCESS"],
        vec!["DREAMS.DRAIN", &org, "1", "ACK", &a_text, "MAYBE"],
        vec!["DREAMS.DRAIN", &org, "1", "ACK", &a_text],
        vec!["DREAMS.DRAIN", &org, "1", "ACK", &a_text, "SUCCESS", "TRIGGER", "1", "2"],
        vec!["DREAMS.DRAIN", &org, "1", "ACK", &a_text, "SUCCESS", "COUNT", "2"],
        vec!["DREAMS.DRAIN", &org, "1", "COUNT", "0", "ACK", &a_text, "SUCCESS"],
        vec!["DREAMS.DRAIN", &org, "1", "COUNT", "1001"],
        vec!["DREAMS.DRAIN", &org, "1", "COUNT", "2", "COUNT", "2"],
        vec!["DREAMS.DRAIN", &org, "1", "LEASE", "0", "ACK", &a_text, "SUCCESS"],
    ];
    for args in &bad {
        let error = error_of(dreams.con, args);
        assert!(error.starts_with("ERR"), "{args:?}: {error}");
        assert_eq!(digest(dreams.con), before, "{args:?} changed nothing");
    }
    // A wrong type on a key only the drain uses (the dead-letter list), and
    // on one only the acknowledgement uses (the region's counters).
    for key in [dreams.keys.dead.clone(), dreams.keys.counters("a", 1)] {
        let _: () = redis::cmd("SET").arg(&key).arg("x").query(dreams.con).unwrap();
        let before = digest(dreams.con);
        let error = one_trip(dreams.con, &org, "1", &["NOQUIET"], &a, "SUCCESS").unwrap_err();
        assert!(error.starts_with("WRONGTYPE"), "{key}: {error}");
        assert_eq!(digest(dreams.con), before, "{key}: nothing changed");
        let _: () = redis::cmd("DEL").arg(&key).query(dreams.con).unwrap();
    }
    assert_eq!(dreams.processing(), [a]);
}

/// Create `user` with `rules` (password "pw") and connect as it.
fn user_with(server: &Server, user: &str, rules: &str) -> Connection {
    let mut args = vec!["ACL", "SETUSER", user, "reset", "on", ">pw", "+@all"];
    args.extend(rules.split_whitespace());
    common::cmd(&args).query::<()>(&mut server.connect()).unwrap();
    server.connect_as(user, "pw")
}

#[test]
fn acl_refusal_of_a_key_of_either_half_refuses_the_whole_call() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("onetrip-acl");
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    dreams.fire("b", 1, &[]);
    let a = dreams.take_one();
    let all = format!("~exocortex:dreams:{{{org}}}:*");
    // The dead-letter list: only the drain half opens it. The counters: only
    // the acknowledgement. Read access alone is not enough for either.
    let cases = [
        ("no-dead", format!("%R~exocortex:dreams:{{{org}}}:dead ~exocortex:dreams:{{{org}}}:queue ~exocortex:dreams:{{{org}}}:deferred ~exocortex:dreams:{{{org}}}:processing ~exocortex:dreams:{{{org}}}:leases ~exocortex:dreams:{{{org}}}:counters:*")),
        ("no-counters", format!("~exocortex:dreams:{{{org}}}:dead ~exocortex:dreams:{{{org}}}:queue ~exocortex:dreams:{{{org}}}:deferred ~exocortex:dreams:{{{org}}}:processing ~exocortex:dreams:{{{org}}}:leases %R~exocortex:dreams:{{{org}}}:counters:*")),
    ];
    for (user, rules) in &cases {
        let mut limited = user_with(&server, user, rules);
        let before = digest(dreams.con);
        let error = one_trip(&mut limited, &org, "0.1", &["NOQUIET"], &a, "SUCCESS").unwrap_err();
        assert!(error.starts_with("NOPERM"), "{user}: {error}");
        assert_eq!(digest(dreams.con), before, "{user}: nothing changed");
    }
    let mut allowed = user_with(&server, "everything", &all);
    let (acked, next) = halves(one_trip(&mut allowed, &org, "0.1", &["NOQUIET"], &a, "SUCCESS").unwrap());
    assert_eq!(counted(&acked).0, "acknowledged");
    assert_eq!(project_of(&bulk(&next).unwrap()), "b");
}

#[test]
fn count_hands_out_a_batch_each_item_in_flight_and_leased() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("onetrip-count");
    let mut dreams = Dreams::new(&mut con, &org);
    for project in ["a", "b", "c", "d", "e"] {
        dreams.fire(project, 1, &[]);
    }
    let batch = bulks(&ok(dreams.con, &["DREAMS.DRAIN", &org, "1", "NOQUIET", "LEASE", "60", "COUNT", "3"]));
    assert_eq!(batch.iter().map(|p| project_of(p)).collect::<Vec<_>>(), ["a", "b", "c"]);
    assert_eq!(dreams.processing(), batch);
    let leases: Vec<(Vec<u8>, f64)> = redis::cmd("ZRANGE")
        .arg(format!("exocortex:dreams:{{{org}}}:leases"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(dreams.con)
        .unwrap();
    let mut leased: Vec<Vec<u8>> = leases.iter().map(|(p, _)| p.clone()).collect();
    leased.sort();
    let mut expected = batch.clone();
    expected.sort();
    assert_eq!(leased, expected, "every item of the batch is leased");
    // With ACK: the batch is the second element; fewer than asked is fine.
    let (acked, rest) =
        halves(one_trip(dreams.con, &org, "1", &["NOQUIET", "COUNT", "10"], &batch[0], "SUCCESS").unwrap());
    assert_eq!(counted(&acked).0, "acknowledged");
    assert_eq!(bulks(&rest).iter().map(|p| project_of(p)).collect::<Vec<_>>(), ["d", "e"]);
    let (_, none) =
        halves(one_trip(dreams.con, &org, "0.05", &["NOQUIET", "COUNT", "10"], &batch[1], "SUCCESS").unwrap());
    assert_eq!(none, Value::Nil, "nothing before the timeout: nil, as BLMPOP");
    assert_eq!(dreams.len(), (0, 0, 3));
}

#[test]
fn count_in_quiet_hours_does_what_as_many_single_drains_do() {
    let server = Server::start();
    let mut con = server.connect();
    let quiet = window(&mut con, 0, 2);
    let (batched, single) = (tenant("onetrip-quiet-batch"), tenant("onetrip-quiet-single"));
    for org in [&batched, &single] {
        let mut dreams = Dreams::new(&mut con, org);
        for project in ["a", "b", "c", "d"] {
            dreams.fire(project, 1, &[]);
        }
    }
    let batch = bulks(&ok(&mut con, &["DREAMS.DRAIN", &batched, "0.05", "QUIET", &quiet, "COUNT", "3"]));
    let mut singles = Vec::new();
    for _ in 0..3 {
        if let Some(payload) = Dreams::new(&mut con, &single).drain("0.05", &["QUIET", &quiet]) {
            singles.push(payload);
        }
    }
    let shape = |payloads: &[Vec<u8>]| -> Vec<(String, bool)> {
        payloads
            .iter()
            .map(|p| {
                let message = SeedFireMessage::parse(p);
                (message.region.project.clone(), message.quiet_deferred)
            })
            .collect()
    };
    assert!(!batch.is_empty());
    assert_eq!(shape(&batch), shape(&singles));
    let batched_len = Dreams::new(&mut con, &batched).len();
    assert_eq!(batched_len, Dreams::new(&mut con, &single).len());
    assert!(info(&mut con)["quiet_deferred"] > 0, "the window reordered something");
}

/// `{"id":..,"from":"lead","to":..}`.
fn message(id: &str, to: &str) -> String {
    format!(r#"{{"id":"{id}","from":"lead","to":"{to}","priority":"normal"}}"#)
}

fn town_len(con: &mut Connection, town: &str, agent: &str) -> Vec<i64> {
    match ok(con, &["TOWN.LEN", town, agent]) {
        Value::Array(items) => items.iter().map(int).collect(),
        other => panic!("LEN replied {other:?}"),
    }
}

#[test]
fn recv_ack_acknowledges_then_receives() {
    let master = Server::start();
    let replica = master.start_replica();
    let mut con = master.connect();
    let town = tenant("onetrip-town");
    for id in ["m1", "m2", "m3"] {
        ok(&mut con, &["TOWN.SEND", &town, &message(id, "w")]);
    }
    let first = ok(&mut con, &["TOWN.RECV", &town, "w", "RELIABLE"]);
    assert_eq!(bulks(&first), [message("m1", "w").into_bytes()]);
    let (acked, next) = halves(ok(&mut con, &["TOWN.RECV", &town, "w", "RELIABLE", "ACK", "m1"]));
    assert_eq!((acked, bulks(&next)), (Value::Int(1), vec![message("m2", "w").into_bytes()]));
    let (acked, next) =
        halves(ok(&mut con, &["TOWN.RECV", &town, "w", "COUNT", "5", "RELIABLE", "LEASE", "60", "ACK", "nope"]));
    assert_eq!(
        (acked, bulks(&next)),
        (Value::Int(0), vec![message("m3", "w").into_bytes()]),
        "an unknown id still receives"
    );
    assert_eq!(town_len(&mut con, &town, "w"), [0, 0, 2]);
    // Blocked: the acknowledgement is made first and stands through the timeout.
    let (acked, none) = halves(ok(&mut con, &["TOWN.RECV", &town, "w", "BLOCK", "0.2", "RELIABLE", "ACK", "m2"]));
    assert_eq!((acked, none), (Value::Int(1), Value::Nil));
    // ... and through a disconnect, seen on the replica while still blocked.
    let (id, reply) =
        in_thread(&master, owned(&[b"TOWN.RECV", town.as_bytes(), b"w", b"BLOCK", b"0", b"RELIABLE", b"ACK", b"m3"]));
    wait_until("the receiver blocks", || blocked_clients(&mut con) == 1);
    assert_eq!(town_len(&mut con, &town, "w"), [0, 0, 0]);
    wait_same_digest(&master, &replica);
    let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query(&mut con).unwrap();
    assert_eq!(killed, 1);
    assert!(reply.recv_timeout(DEADLINE).unwrap().is_err());
    // A blocked one-trip receive served by a send.
    ok(&mut con, &["TOWN.SEND", &town, &message("m4", "w")]);
    let m4 = ok(&mut con, &["TOWN.RECV", &town, "w", "RELIABLE"]);
    assert_eq!(bulks(&m4).len(), 1);
    let (_, reply) =
        in_thread(&master, owned(&[b"TOWN.RECV", town.as_bytes(), b"w", b"BLOCK", b"0", b"RELIABLE", b"ACK", b"m4"]));
    wait_until("the receiver blocks", || blocked_clients(&mut con) == 1);
    ok(&mut con, &["TOWN.SEND", &town, &message("m5", "w")]);
    let (acked, next) = halves(reply.recv_timeout(DEADLINE).unwrap().unwrap());
    assert_eq!((acked, bulks(&next)), (Value::Int(1), vec![message("m5", "w").into_bytes()]));
    assert_eq!(town_len(&mut con, &town, "w"), [0, 0, 1]);
    wait_same_digest(&master, &replica);
}

#[test]
fn recv_ack_errors_and_acl_refusals_change_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("onetrip-town-errors");
    for id in ["m1", "m2"] {
        ok(&mut con, &["TOWN.SEND", &town, &message(id, "w")]);
    }
    ok(&mut con, &["TOWN.RECV", &town, "w", "RELIABLE"]);
    let before = digest(&mut con);
    let bad: Vec<Vec<&str>> = vec![
        vec!["TOWN.RECV", &town, "w", "ACK", "m1"],
        vec!["TOWN.RECV", &town, "w", "RELIABLE", "ACK"],
        vec!["TOWN.RECV", &town, "w", "RELIABLE", "ACK", "m1", "ACK", "m1"],
        vec!["TOWN.RECV", &town, "w", "RELIABLE", "ACK", "m1", "COUNT", "0"],
    ];
    for args in &bad {
        assert!(error_of(&mut con, args).starts_with("ERR"), "{args:?}");
        assert_eq!(digest(&mut con), before, "{args:?} changed nothing");
    }
    // The urgent inbox: only the receive opens it; the lease set (without
    // LEASE): only the acknowledgement.
    let prefix = format!("tt:{{{town}}}");
    let everything_but = |denied: &str| {
        ["inbox:w", "urgent:w", "pending:w", "leases:w", "index:mailboxes"]
            .iter()
            .map(|key| match key.starts_with(denied) {
                true => format!("%R~{prefix}:{key}"),
                false => format!("~{prefix}:{key}"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (user, key) in [("no-urgent", "urgent"), ("no-leases", "leases")] {
        let mut limited = user_with(&server, user, &everything_but(key));
        let error = call(&mut limited, &["TOWN.RECV", &town, "w", "RELIABLE", "ACK", "m1"]).unwrap_err();
        assert!(error.starts_with("NOPERM") && error.contains(key), "{user}: {error}");
        assert_eq!(digest(&mut con), before, "{user}: nothing changed");
    }
    let _: () = redis::cmd("SET").arg(format!("{prefix}:urgent:w")).arg("x").query(&mut con).unwrap();
    let before = digest(&mut con);
    assert!(error_of(&mut con, &["TOWN.RECV", &town, "w", "RELIABLE", "ACK", "m1"]).starts_with("WRONGTYPE"));
    assert_eq!(digest(&mut con), before, "a wrong type on the receive's key: the ACK was not applied");
}

#[test]
fn command_docs_describe_the_one_trip_forms() {
    let server = Server::start();
    let mut con = server.connect();
    let docs: Value = redis::cmd("COMMAND").arg("DOCS").arg("DREAMS.DRAIN").arg("TOWN.RECV").query(&mut con).unwrap();
    let text = format!("{docs:?}");
    for word in ["COUNT", "ACK", "SUCCESS", "FAILURE", "TRIGGER", "message-id"] {
        assert!(text.contains(word), "COMMAND DOCS mention {word}: {text}");
    }
}

/// The one-trip drain skips opening the deferred set its key check found
/// absent (while nothing in the call has opened it since): a set that is
/// there is still read, and one the drain itself fills (a quiet-hours
/// deferral) is read back as a single drain reads it. Both checked against
/// the two-call loop on a twin organization.
#[test]
fn one_trip_drain_sees_the_deferred_set_as_the_two_call_loop_does() {
    let server = Server::start();
    let mut con = server.connect();
    let quiet = window(&mut con, 0, 2);
    let (one, two) = (tenant("onetrip-deferred-one"), tenant("onetrip-deferred-two"));
    // A due deferral present at the check, nothing ready: promoted and drained.
    let mut firsts = Vec::new();
    for org in [&one, &two] {
        let mut dreams = Dreams::new(&mut con, org);
        dreams.fire("a", 1, &[]);
        dreams.fire("b", 1, &[]);
        let first = dreams.drain("0.05", &["NOQUIET"]).expect("a payload");
        let second = dreams.drain("0.05", &["NOQUIET"]).expect("a payload");
        // Moved back by hand as a due deferral (score 0).
        let processing = format!("exocortex:dreams:{{{org}}}:processing");
        let deferred = format!("exocortex:dreams:{{{org}}}:deferred");
        let _: i64 = redis::cmd("LREM").arg(&processing).arg(1).arg(&second).query(&mut con).unwrap();
        let _: i64 = redis::cmd("ZADD").arg(&deferred).arg(0).arg(&second).query(&mut con).unwrap();
        firsts.push((first, second));
    }
    let (first, second) = firsts[0].clone();
    let (acked, next) = halves(one_trip(&mut con, &one, "0.05", &["NOQUIET"], &first, "SUCCESS").unwrap());
    assert_eq!(counted(&acked).0, "acknowledged");
    assert_eq!(bulk(&next), Some(second.clone()), "the due deferral is promoted and drained");
    let (first, second) = firsts[1].clone();
    let mut dreams = Dreams::new(&mut con, &two);
    assert_eq!(dreams.ack(&first, "SUCCESS", &[]).0, "acknowledged");
    assert_eq!(dreams.drain("0.05", &["NOQUIET"]), Some(second.clone()));
    // No deferred set at the check; inside the quiet window the drain defers
    // what it pops (filling the set) and goes on as a single drain does.
    let mut lasts = Vec::new();
    for org in [&one, &two] {
        let mut dreams = Dreams::new(&mut con, org);
        for project in ["c", "d", "e"] {
            dreams.fire(project, 1, &[]);
        }
        let deferred = format!("exocortex:dreams:{{{org}}}:deferred");
        let exists: i64 = redis::cmd("EXISTS").arg(&deferred).query(&mut con).unwrap();
        assert_eq!(exists, 0);
        let in_flight = lrange(&mut con, &format!("exocortex:dreams:{{{org}}}:processing"));
        lasts.push(in_flight.last().cloned().expect("an item in flight"));
    }
    let (acked, from_one) = halves(one_trip(&mut con, &one, "0.05", &["QUIET", &quiet], &lasts[0], "SUCCESS").unwrap());
    assert_eq!(counted(&acked).0, "acknowledged");
    let mut dreams = Dreams::new(&mut con, &two);
    assert_eq!(dreams.ack(&lasts[1], "SUCCESS", &[]).0, "acknowledged");
    let from_two = dreams.drain("0.05", &["QUIET", &quiet]);
    let shape = |payload: Option<Vec<u8>>| {
        payload.map(|p| {
            let message = SeedFireMessage::parse(&p);
            (message.region.project.clone(), message.quiet_deferred)
        })
    };
    assert_eq!(shape(bulk(&from_one)), shape(from_two));
    let len_one = Dreams::new(&mut con, &one).len();
    assert_eq!(len_one, Dreams::new(&mut con, &two).len());
    let deferred_of = |con: &mut Connection, org: &str| -> Vec<String> {
        let members: Vec<Vec<u8>> =
            redis::cmd("ZRANGE").arg(format!("exocortex:dreams:{{{org}}}:deferred")).arg(0).arg(-1).query(con).unwrap();
        members.iter().map(|m| SeedFireMessage::parse(m).region.project.clone()).collect()
    };
    assert_eq!(deferred_of(&mut con, &one), deferred_of(&mut con, &two));
    assert!(info(&mut con)["quiet_deferred"] >= 2, "the window reordered in both loops");
}
