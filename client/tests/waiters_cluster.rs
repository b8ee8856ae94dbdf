//! A blocked `DREAMS.DRAIN` / `TOWN.RECV ... BLOCK` whose slot moves to
//! another node is redirected (`MOVED`) and leaves its node's waiter queue
//! (issue 9): each waiter is blocked on a never-created key with the
//! tenant's hash tag, so the cluster's check of blocked clients sees it.
//! The slot is reassigned (CLUSTER SETSLOT ... NODE) only once the waiter
//! is seen blocked.

use crate::common;

use std::sync::mpsc;
use std::thread;

use common::{Cluster, tenant, wait_until};

fn dreamtown_info(con: &mut redis::Connection, field: &str) -> u64 {
    let text: String = redis::cmd("INFO").arg("dreamtown").query(con).expect("INFO dreamtown");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("dreamtown_{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no dreamtown_{field}"))
}

fn moved_when_the_slot_moves(key: &str, blocking: Vec<String>) {
    let cluster = Cluster::start(3);
    let mut any = cluster.nodes[0].connect();
    let slot: u16 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(&mut any).unwrap();
    let owner = cluster.owner_of_slot(slot);
    let other = (owner + 1) % 3;
    let mut owner_con = cluster.nodes[owner].connect();
    let mut waiter = cluster.nodes[owner].connect();
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let mut cmd = redis::Cmd::new();
        for arg in &blocking {
            cmd.arg(arg);
        }
        let _ = sender.send(cmd.query::<redis::Value>(&mut waiter).map_err(|e| e.to_string()));
    });
    wait_until("the waiter blocks", || dreamtown_info(&mut owner_con, "waiters") == 1);
    let mut other_con = cluster.nodes[other].connect();
    let other_id: String = redis::cmd("CLUSTER").arg("MYID").query(&mut other_con).unwrap();
    for con in [&mut other_con, &mut owner_con] {
        let _: () = redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("NODE").arg(&other_id).query(con).unwrap();
    }
    let reply = receiver.recv_timeout(common::DEADLINE).expect("the waiter is answered");
    let error = reply.expect_err("redirected, not served");
    let port = cluster.nodes[other].port;
    assert!(
        error.to_uppercase().contains(&format!("MOVED: {slot} 127.0.0.1:{port}"))
            || error.contains(&format!("MOVED {slot} 127.0.0.1:{port}")),
        "{error}"
    );
    wait_until("the waiter left its queue", || dreamtown_info(&mut owner_con, "waiters") == 0);
    assert_eq!(dreamtown_info(&mut owner_con, "waiter_queues"), 0);
    assert_eq!(dreamtown_info(&mut owner_con, "waiters_gone"), 1);
}

#[test]
fn a_blocked_drainer_whose_slot_moves_is_redirected() {
    let org = tenant("moved");
    moved_when_the_slot_moves(
        &format!("exocortex:dreams:{{{org}}}:queue"),
        ["DREAMS.DRAIN", &org, "0", "NOQUIET"].map(String::from).to_vec(),
    );
}

#[test]
fn a_blocked_receiver_whose_slot_moves_is_redirected() {
    let town = tenant("moved-town");
    moved_when_the_slot_moves(
        &format!("tt:{{{town}}}:inbox:a"),
        ["TOWN.RECV", &town, "a", "BLOCK", "0"].map(String::from).to_vec(),
    );
}

/// A waiter whose organization's slot starts migrating is not served on the
/// source, even when work falls due there: a deferred item scored 3 s ahead
/// is in the source's deferred set when the drainer blocks; the slot is
/// set MIGRATING before it is due; when the waiter pass runs for it, the
/// migration guard refuses and the drainer gets `-TRYAGAIN`, with the item
/// still deferred and nothing in flight (serving it would have changed a
/// migrating tenant on the source).
#[test]
fn a_waiter_on_a_migrating_source_is_answered_tryagain_not_served() {
    let cluster = Cluster::start(3);
    let org = tenant("migrating-waiter");
    let deferred = format!("exocortex:dreams:{{{org}}}:deferred");
    let mut any = cluster.nodes[0].connect();
    let slot: u16 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(&deferred).query(&mut any).unwrap();
    let owner = cluster.owner_of_slot(slot);
    let other = (owner + 1) % 3;
    let mut owner_con = cluster.nodes[owner].connect();
    let mut other_con = cluster.nodes[other].connect();
    let (now, _): (i64, i64) = redis::cmd("TIME").query(&mut owner_con).unwrap();
    let item = format!(
        r#"{{"region":{{"org":"{org}","project":"later","memory_type":1}},"fired_by":"n","quiet_deferred":true}}"#
    );
    let _: () = redis::cmd("ZADD").arg(&deferred).arg(now + 3).arg(&item).query(&mut owner_con).unwrap();
    let mut waiter = cluster.nodes[owner].connect();
    let (sender, receiver) = mpsc::channel();
    let drain = org.clone();
    thread::spawn(move || {
        let reply = redis::cmd("DREAMS.DRAIN").arg(&drain).arg("0").arg("NOQUIET").query::<redis::Value>(&mut waiter);
        let _ = sender.send(reply.map_err(|e| e.to_string()));
    });
    wait_until("the waiter blocks", || dreamtown_info(&mut owner_con, "waiters") == 1);
    let owner_id: String = redis::cmd("CLUSTER").arg("MYID").query(&mut owner_con).unwrap();
    let other_id: String = redis::cmd("CLUSTER").arg("MYID").query(&mut other_con).unwrap();
    let _: () =
        redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("IMPORTING").arg(&owner_id).query(&mut other_con).unwrap();
    let _: () =
        redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("MIGRATING").arg(&other_id).query(&mut owner_con).unwrap();
    let (set_at, _): (i64, i64) = redis::cmd("TIME").query(&mut owner_con).unwrap();
    assert!(set_at < now + 3, "the slot must be migrating before the item falls due (took {}s)", set_at - now);
    let reply = receiver.recv_timeout(common::DEADLINE).expect("the waiter is answered once the item is due");
    let error = reply.expect_err("refused, not served");
    assert!(error.to_uppercase().contains("TRYAGAIN"), "{error}");
    // SCAN is not routed: it lists what the source holds. Only the deferred
    // set, with its one item: nothing was promoted, nothing is in flight.
    let (_, here): (String, Vec<String>) = redis::cmd("SCAN")
        .arg(0)
        .arg("MATCH")
        .arg(format!("*{{{org}}}*"))
        .arg("COUNT")
        .arg(1000)
        .query(&mut owner_con)
        .unwrap();
    assert_eq!(here, [deferred.as_str()], "nothing moved on the migrating source");
    let still_deferred: i64 = redis::cmd("ZCARD").arg(&deferred).query(&mut owner_con).unwrap();
    assert_eq!(still_deferred, 1);
    wait_until("the waiter left its queue", || dreamtown_info(&mut owner_con, "waiters") == 0);
}
