//! One waiter per item (issue 9): blocked `DREAMS.DRAIN` and `TOWN.RECV ...
//! BLOCK` are served first blocked, first served; an item wakes one waiter
//! (asserted on `INFO dreamtown`'s `empty_wakeups`, not on timing); a send
//! to one agent wakes nobody else; every path that brings work wakes a
//! waiter at once; waiters that leave (disconnect, timeout, CLIENT UNBLOCK)
//! leave nothing behind; a replica stays digest-equal.
//!
//! Order is forced: each waiter is started only once the previous one is
//! seen blocked (the `waiters` gauge), and each item is sent only once the
//! previous reply arrived.

use crate::common;
use crate::dreams_support;

use std::io::Write;
use std::net::TcpStream;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::{blocked_clients, tenant, wait_until, Server, DEADLINE};
use dreams_support::*;
use redis::Value;

type Reply = mpsc::Receiver<Result<Value, String>>;

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

fn gauge(con: &mut redis::Connection, field: &str) -> u64 {
    info(con).get(field).copied().unwrap_or_else(|| panic!("INFO dreamtown has no {field}"))
}

/// Start waiters one at a time, each seen blocked before the next.
fn start_in_order(server: &Server, con: &mut redis::Connection, commands: &[Vec<String>]) -> Vec<Reply> {
    let base = gauge(con, "waiters");
    commands
        .iter()
        .enumerate()
        .map(|(i, args)| {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let reply = in_thread(server, &refs);
            wait_until("the waiter blocks", || gauge(con, "waiters") == base + i as u64 + 1);
            reply
        })
        .collect()
}

fn payload(reply: &Reply) -> Vec<u8> {
    match reply.recv_timeout(DEADLINE).expect("a reply in time") {
        Ok(Value::BulkString(bytes)) => bytes,
        other => panic!("expected a payload, got {other:?}"),
    }
}

fn project_of(payload: &[u8]) -> String {
    SeedFireMessage::parse(payload).region.project
}

fn town_message(id: &str, to: &str) -> String {
    format!(
        r#"{{"id":"{id}","from":"lead","to":"{to}","type":"task","description":"do {id}","priority":"normal","created_at":"2025-01-01T00:00:00Z","correlation_id":null}}"#
    )
}

fn messages(reply: &Reply) -> Vec<String> {
    match reply.recv_timeout(DEADLINE).expect("a reply in time") {
        Ok(Value::Array(items)) => items.iter().map(text).collect(),
        other => panic!("expected messages, got {other:?}"),
    }
}

fn drain_args(org: &str, timeout: &str) -> Vec<String> {
    ["DREAMS.DRAIN", org, timeout, "NOQUIET"].map(String::from).to_vec()
}

#[test]
fn drainers_of_one_organization_are_served_first_blocked_first_served() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("fifo");
    let commands: Vec<Vec<String>> = (0..5).map(|_| drain_args(&org, "0")).collect();
    let replies = start_in_order(&server, &mut con, &commands);
    for (i, reply) in replies.iter().enumerate() {
        Dreams::new(&mut con, &org).fire(&format!("p{i}"), 1, &[]);
        assert_eq!(project_of(&payload(reply)), format!("p{i}"), "waiter {i} is served item {i}");
        for later in &replies[i + 1..] {
            assert!(later.try_recv().is_err(), "a later waiter was not served");
        }
    }
    assert_eq!(gauge(&mut con, "empty_wakeups"), 0);
    assert_eq!(gauge(&mut con, "waiters"), 0);
}

#[test]
fn receivers_of_one_agent_are_served_first_blocked_first_served() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("fifo-town");
    let commands: Vec<Vec<String>> =
        (0..4).map(|_| ["TOWN.RECV", &town, "a", "BLOCK", "0"].map(String::from).to_vec()).collect();
    let replies = start_in_order(&server, &mut con, &commands);
    for (i, reply) in replies.iter().enumerate() {
        let sent = town_message(&format!("m{i}"), "a");
        let urgent = if i % 2 == 0 { "URGENT" } else { "" };
        let mut args = vec!["TOWN.SEND", &town, &sent];
        if !urgent.is_empty() {
            args.push(urgent);
        }
        ok(&mut con, &args);
        assert_eq!(messages(reply), [sent], "receiver {i} gets message {i}");
    }
    assert_eq!(gauge(&mut con, "empty_wakeups"), 0);
    assert_eq!(gauge(&mut con, "waiters"), 0);
}

#[test]
fn a_hundred_fires_to_a_hundred_drainers_wake_nobody_for_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("hundred");
    let replies: Vec<Reply> = (0..100)
        .map(|_| in_thread(&server, &drain_args(&org, "0").iter().map(String::as_str).collect::<Vec<_>>()))
        .collect();
    wait_until("100 drainers block", || gauge(&mut con, "waiters") == 100);
    let mut dreams = Dreams::new(&mut con, &org);
    for i in 0..100 {
        dreams.fire(&format!("p{i}"), 1, &[]);
    }
    let mut projects: Vec<String> = replies.iter().map(|r| project_of(&payload(r))).collect();
    projects.sort();
    projects.dedup();
    assert_eq!(projects.len(), 100, "every item went to exactly one drainer");
    let stats = info(&mut con);
    assert_eq!(stats["empty_wakeups"], 0, "{stats:?}");
    assert_eq!(stats["waiters_served"], 100);
    assert_eq!(stats["waiters"], 0);
    assert_eq!(stats["waiter_queues"], 0);
}

#[test]
fn a_send_to_one_agent_wakes_none_of_another_agents_receivers() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("agents");
    let b_args: Vec<Vec<String>> =
        (0..10).map(|_| ["TOWN.RECV", &town, "b", "BLOCK", "0"].map(String::from).to_vec()).collect();
    let b_replies = start_in_order(&server, &mut con, &b_args);
    let a_reply =
        start_in_order(&server, &mut con, &[["TOWN.RECV", &town, "a", "BLOCK", "0"].map(String::from).to_vec()]);
    for i in 0..20 {
        ok(&mut con, &["TOWN.SEND", &town, &town_message(&format!("x{i}"), "a")]);
    }
    assert_eq!(messages(&a_reply[0]).len(), 1);
    wait_until("a's receiver is gone", || gauge(&mut con, "waiters") == 10);
    assert_eq!(gauge(&mut con, "empty_wakeups"), 0);
    assert_eq!(gauge(&mut con, "waiters_served"), 1);
    assert!(b_replies.iter().all(|r| r.try_recv().is_err()));
    assert_eq!(blocked_clients(&mut con), 10);
}

#[test]
fn an_urgent_only_receiver_is_skipped_by_normal_messages_but_not_by_urgent_ones() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("urgent-only");
    let replies = start_in_order(
        &server,
        &mut con,
        &[
            ["TOWN.RECV", &town, "a", "URGENT", "BLOCK", "0"].map(String::from).to_vec(),
            ["TOWN.RECV", &town, "a", "BLOCK", "0"].map(String::from).to_vec(),
        ],
    );
    let normal = town_message("n", "a");
    ok(&mut con, &["TOWN.SEND", &town, &normal]);
    assert_eq!(messages(&replies[1]), [normal], "the normal receiver, though second");
    let urgent = town_message("u", "a");
    ok(&mut con, &["TOWN.SEND", &town, &urgent, "URGENT"]);
    assert_eq!(messages(&replies[0]), [urgent]);
    assert_eq!(gauge(&mut con, "empty_wakeups"), 0);
}

#[test]
fn native_pushes_onto_watched_lists_wake_one_waiter() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("native");
    let keys = Keys::new(&org);
    let replies = start_in_order(&server, &mut con, &[drain_args(&org, "0"), drain_args(&org, "0")]);
    let item = format!(r#"{{"region":{{"org":"{org}","project":"lmove","memory_type":1}},"fired_by":"legacy"}}"#);
    let _: () = redis::cmd("RPUSH").arg("elsewhere").arg(&item).query(&mut con).unwrap();
    let _: Value =
        redis::cmd("LMOVE").arg("elsewhere").arg(&keys.ready).arg("LEFT").arg("RIGHT").query(&mut con).unwrap();
    assert_eq!(project_of(&payload(&replies[0])), "lmove");
    let town = tenant("native-town");
    let inbox = format!("tt:{{{town}}}:inbox:a");
    let receiver =
        start_in_order(&server, &mut con, &[["TOWN.RECV", &town, "a", "BLOCK", "0"].map(String::from).to_vec()]);
    let sent = town_message("raw", "a");
    let _: () = redis::cmd("LPUSH").arg(&inbox).arg(&sent).query(&mut con).unwrap();
    assert_eq!(messages(&receiver[0]), [sent]);
    assert!(replies[1].try_recv().is_err(), "the second drainer still waits");
    assert_eq!(gauge(&mut con, "empty_wakeups"), 0);
}

#[test]
fn a_deferred_item_falling_due_wakes_a_drainer() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("due");
    let keys = Keys::new(&org);
    let now = server_time(&mut con);
    let item = format!(
        r#"{{"region":{{"org":"{org}","project":"later","memory_type":1}},"fired_by":"n","quiet_deferred":true}}"#
    );
    let _: () = redis::cmd("ZADD").arg(&keys.deferred).arg(now + 2).arg(&item).query(&mut con).unwrap();
    let reply = start_in_order(&server, &mut con, &[drain_args(&org, "0")]);
    assert_eq!(project_of(&payload(&reply[0])), "later");
    assert!(server_time(&mut con) >= now + 2, "not before it was due");
    // Also when the deferral arrives while the drainer already waits.
    let reply = start_in_order(&server, &mut con, &[drain_args(&org, "0")]);
    let now = server_time(&mut con);
    let _: () = redis::cmd("ZADD")
        .arg(&keys.deferred)
        .arg(now + 1)
        .arg(item.replace("later", "later2"))
        .query(&mut con)
        .unwrap();
    assert_eq!(project_of(&payload(&reply[0])), "later2");
    assert_eq!(gauge(&mut con, "waiters"), 0);
}

#[test]
fn requeue_and_reclaim_wake_a_receiver() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("requeue");
    let sent = town_message("r", "a");
    ok(&mut con, &["TOWN.SEND", &town, &sent]);
    let got: Value = ok(&mut con, &["TOWN.RECV", &town, "a", "RELIABLE"]);
    assert!(matches!(got, Value::Array(ref items) if items.len() == 1));
    let receiver =
        start_in_order(&server, &mut con, &[["TOWN.RECV", &town, "a", "BLOCK", "0"].map(String::from).to_vec()]);
    ok(&mut con, &["TOWN.REQUEUE", &town, "a"]);
    assert_eq!(messages(&receiver[0]), [sent.as_str()]);
    // RECLAIM moves a's inbox to b's.
    ok(&mut con, &["TOWN.SEND", &town, &town_message("c", "a")]);
    let receiver =
        start_in_order(&server, &mut con, &[["TOWN.RECV", &town, "b", "BLOCK", "0"].map(String::from).to_vec()]);
    let reclaimed = call(&mut con, &["TOWN.RECLAIM", &town, "a", "b"]);
    assert!(reclaimed.is_ok(), "{reclaimed:?}");
    assert_eq!(messages(&receiver[0]).len(), 1);
    assert_eq!(gauge(&mut con, "empty_wakeups"), 0);
}

#[test]
fn timeouts_and_client_unblock_leave_no_waiter() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("timeout");
    assert_eq!(call(&mut con, &["DREAMS.DRAIN", &org, "0.1", "NOQUIET"]), Ok(Value::Nil));
    let town = tenant("timeout-town");
    assert_eq!(call(&mut con, &["TOWN.RECV", &town, "a", "BLOCK", "0.1"]), Ok(Value::Nil));
    assert_eq!(gauge(&mut con, "waiters_timed_out"), 2);
    let mut drainer = server.connect();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut drainer).unwrap();
    let (sender, receiver) = mpsc::channel();
    let org2 = org.clone();
    thread::spawn(move || {
        let _ = sender.send(call(&mut drainer, &["DREAMS.DRAIN", &org2, "0", "NOQUIET"]));
    });
    wait_until("blocked", || gauge(&mut con, "waiters") == 1);
    let _: i64 = redis::cmd("CLIENT").arg("UNBLOCK").arg(id).query(&mut con).unwrap();
    assert_eq!(receiver.recv_timeout(DEADLINE).unwrap(), Ok(Value::Nil), "unblocked as on a timeout");
    assert_eq!(gauge(&mut con, "waiters"), 0);
    assert_eq!(gauge(&mut con, "waiter_queues"), 0);
    // CLIENT UNBLOCK ... ERROR: an error reply, and the waiter is gone too.
    let mut receiver = server.connect();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut receiver).unwrap();
    let (sender, errored) = mpsc::channel();
    let town2 = town.clone();
    thread::spawn(move || {
        let _ = sender.send(call(&mut receiver, &["TOWN.RECV", &town2, "a", "BLOCK", "0"]));
    });
    wait_until("blocked", || gauge(&mut con, "waiters") == 1);
    let _: i64 = redis::cmd("CLIENT").arg("UNBLOCK").arg(id).arg("ERROR").query(&mut con).unwrap();
    let reply = errored.recv_timeout(DEADLINE).unwrap();
    assert!(matches!(&reply, Err(e) if e.contains("UNBLOCKED")), "{reply:?}");
    assert_eq!(gauge(&mut con, "waiters"), 0);
    assert_eq!(gauge(&mut con, "waiters_gone"), 1);
    assert_eq!(gauge(&mut con, "waiters_timed_out"), 3);
    // Inside MULTI nothing blocks and nobody waits.
    let (nil,): (Value,) =
        redis::pipe().atomic().cmd("DREAMS.DRAIN").arg(&org).arg("0").arg("NOQUIET").query(&mut con).unwrap();
    assert_eq!(nil, Value::Nil);
    assert_eq!(gauge(&mut con, "waiters"), 0);
    // Work that arrives afterwards is simply there.
    Dreams::new(&mut con, &org).fire("kept", 1, &[]);
    assert_eq!(Dreams::new(&mut con, &org).len(), (1, 0, 0));
}

fn used_memory(con: &mut redis::Connection) -> i64 {
    let text: String = redis::cmd("INFO").arg("memory").query(con).unwrap();
    text.lines().find_map(|l| l.strip_prefix("used_memory:")).and_then(|v| v.trim().parse().ok()).unwrap()
}

#[test]
fn thousands_of_block_and_disconnect_cycles_leave_nothing_behind() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("cycles");
    let town = tenant("cycles-town");
    let drain = format!("*4\r\n$12\r\nDREAMS.DRAIN\r\n${}\r\n{org}\r\n$1\r\n0\r\n$7\r\nNOQUIET\r\n", org.len());
    let recv = format!("*5\r\n$9\r\nTOWN.RECV\r\n${}\r\n{town}\r\n$1\r\na\r\n$5\r\nBLOCK\r\n$1\r\n0\r\n", town.len());
    let mut baseline = 0;
    let (batches, per_batch) = (20, 100);
    for batch in 0..batches {
        let sockets: Vec<TcpStream> = (0..per_batch)
            .map(|i| {
                let mut socket = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
                socket.write_all(if i % 2 == 0 { drain.as_bytes() } else { recv.as_bytes() }).unwrap();
                socket
            })
            .collect();
        wait_until("the batch blocks", || gauge(&mut con, "waiters") == per_batch as u64);
        drop(sockets);
        wait_until("the batch is gone", || gauge(&mut con, "waiters") == 0 && blocked_clients(&mut con) == 0);
        if batch == 1 {
            baseline = used_memory(&mut con);
        }
    }
    let stats = info(&mut con);
    assert_eq!(stats["waiters_gone"], (batches * per_batch) as u64);
    assert_eq!(stats["waiter_queues"], 0);
    let grown = used_memory(&mut con) - baseline;
    assert!(grown < 256 * 1024, "used_memory grew by {grown} bytes over {} cycles", (batches - 2) * per_batch);
    // And the queue still works.
    let reply = start_in_order(&server, &mut con, &[drain_args(&org, "0")]);
    Dreams::new(&mut con, &org).fire("after", 1, &[]);
    assert_eq!(project_of(&payload(&reply[0])), "after");
}

#[test]
fn a_replica_stays_digest_equal_after_a_blocked_workload() {
    let server = Server::start();
    let replica = server.start_replica();
    let mut con = server.connect();
    let org = tenant("replica");
    let town = tenant("replica-town");
    let drains: Vec<Reply> = (0..20).map(|_| in_thread(&server, &["DREAMS.DRAIN", &org, "0", "NOQUIET"])).collect();
    let receives: Vec<Reply> =
        (0..10).map(|_| in_thread(&server, &["TOWN.RECV", &town, "a", "BLOCK", "0", "RELIABLE"])).collect();
    wait_until("all block", || gauge(&mut con, "waiters") == 30);
    let keys = Keys::new(&org);
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg("garbage").query(&mut con).unwrap();
    for i in 0..20 {
        Dreams::new(&mut con, &org).fire(&format!("p{i}"), 1, &[]);
    }
    for i in 0..10 {
        ok(&mut con, &["TOWN.SEND", &town, &town_message(&format!("m{i}"), "a")]);
    }
    for reply in &drains {
        payload(reply);
    }
    for reply in &receives {
        assert_eq!(messages(reply).len(), 1);
    }
    assert_eq!(Dreams::new(&mut con, &org).dead(), [b"garbage".to_vec()]);
    let _: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    wait_until("the replica catches up", || replica.digest() == server.digest());
    assert_eq!(gauge(&mut replica.connect(), "waiters"), 0);
}

#[test]
fn a_blocked_drainer_survives_a_slow_batch_of_other_clients() {
    // Work pushed and taken by a non-blocking call before the pass runs
    // leaves the waiter waiting (and counts no empty wake-up: it is not run).
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("steal");
    let reply = start_in_order(&server, &mut con, &[drain_args(&org, "0")]);
    let (fired, stolen): (Value, Value) = redis::pipe()
        .atomic()
        .cmd("DREAMS.FIRE")
        .arg(&org)
        .arg("p")
        .arg(1)
        .cmd("DREAMS.DRAIN")
        .arg(&org)
        .arg(0)
        .arg("NOQUIET")
        .query(&mut con)
        .unwrap();
    assert_eq!(text(&fired), "queued");
    assert!(matches!(stolen, Value::BulkString(_)), "the MULTI took its own item");
    thread::sleep(Duration::from_millis(50));
    assert!(reply[0].try_recv().is_err());
    assert_eq!(gauge(&mut con, "empty_wakeups"), 0);
    Dreams::new(&mut con, &org).fire("q", 1, &[]);
    assert_eq!(project_of(&payload(&reply[0])), "q");
}
