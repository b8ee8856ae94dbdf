//! Leases on reliably received Town messages (`TOWN.RECV ... RELIABLE
//! LEASE`, `TOWN.EXTEND`, config `dreamtown.town-lease`): a message not
//! acknowledged in time goes back to the head of the agent's inbox by
//! itself and wakes a blocked receiver; `TOWN.ACK` removes it wherever it
//! is; deadlines replicate, persist and are expired by a promoted replica.

use crate::common;
use crate::town_support;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{tenant, wait_until, Server, DEADLINE};
use town_support::*;

fn recv(con: &mut redis::Connection, town: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["TOWN.RECV", town, "w"];
    args.extend_from_slice(extra);
    ok(con, &args)
}

fn pending(con: &mut redis::Connection, town: &str) -> Vec<String> {
    list(con, &format!("tt:{{{town}}}:pending:w"))
}

fn digest(con: &mut redis::Connection) -> String {
    ok(con, &["DEBUG", "DIGEST"])
}

#[test]
fn an_expired_message_goes_back_to_the_inbox_head_alone_and_ack_still_removes_it() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("town-lease");
    let (a, b, c) = (message("a", "w", "normal"), message("b", "w", "normal"), message("c", "w", "normal"));
    for m in [&a, &b, &c] {
        ok::<i64>(&mut con, &["TOWN.SEND", &town, m]);
    }
    let before = info_field(&mut con, "messages_lease_expired");
    assert_eq!(recv(&mut con, &town, &["RELIABLE", "LEASE", "0.3"]), vec![a.clone()]);
    assert_eq!(recv(&mut con, &town, &["RELIABLE"]), vec![b.clone()]);
    wait_until("the leased message is back", || inbox(&mut con, &town, "w").len() == 2);
    assert_eq!(inbox(&mut con, &town, "w"), vec![a.clone(), c.clone()], "at the head");
    assert_eq!(pending(&mut con, &town), vec![b.clone()], "nothing else moved");
    assert_eq!(info_field(&mut con, "messages_lease_expired"), before + 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.EXTEND", &town, "w", "a", "5"]), 0, "leased to no one");
    // A late ACK of the expired message removes it from the inbox, once.
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "w", "a"]), 1);
    assert_eq!(inbox(&mut con, &town, "w"), vec![c.clone()]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "w", "a"]), 0);
    // b was not leased: it stays pending.
    thread::sleep(Duration::from_millis(300));
    assert_eq!(pending(&mut con, &town), vec![b]);
}

#[test]
fn a_re_received_message_is_acked_once_and_the_second_holders_ack_finds_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("town-lease-again");
    let a = message("a", "w", "normal");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &a]);
    recv(&mut con, &town, &["RELIABLE", "LEASE", "0.2"]);
    wait_until("expired", || inbox(&mut con, &town, "w").len() == 1);
    assert_eq!(recv(&mut con, &town, &["RELIABLE", "LEASE", "60"]), vec![a.clone()]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "w", "a"]), 1, "the first holder's late ACK");
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "w", "a"]), 0, "the second holder's");
    assert_eq!(lengths(&mut con, &town, "w"), vec![0, 0, 0]);
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", &format!("tt:{{{town}}}:leases:w")]), 0);
}

#[test]
fn an_expired_message_wakes_a_blocked_receiver_and_extend_holds_it() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("town-lease-wake");
    let a = message("a", "w", "normal");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &a]);
    recv(&mut con, &town, &["RELIABLE", "LEASE", "0.4"]);
    let until = Instant::now() + Duration::from_millis(1_200);
    while Instant::now() < until {
        assert_eq!(ok::<i64>(&mut con, &["TOWN.EXTEND", &town, "w", "a", "0.4"]), 1);
        assert_eq!(pending(&mut con, &town), vec![a.clone()], "held while extended");
        thread::sleep(Duration::from_millis(100));
    }
    let (sender, receiver) = mpsc::channel();
    let mut waiter = server.connect();
    let waiting_town = town.clone();
    let handle = thread::spawn(move || {
        let got: Vec<String> = ok(&mut waiter, &["TOWN.RECV", &waiting_town, "w", "BLOCK", "0"]);
        sender.send(got).unwrap();
    });
    wait_blocked(&mut con, 1);
    assert_eq!(receiver.recv_timeout(DEADLINE).expect("woken"), vec![a]);
    handle.join().unwrap();
}

#[test]
fn bad_arguments_change_nothing_and_requeue_clears_leases() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("town-lease-errors");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("a", "w", "normal")]);
    for bad in [
        &["LEASE", "1"][..],
        &["RELIABLE", "LEASE"],
        &["RELIABLE", "LEASE", "0"],
        &["RELIABLE", "LEASE", "x"],
        &["RELIABLE", "LEASE", "1", "LEASE", "1"],
        &["RELIABLE", "LEASE", "-2"],
    ] {
        let mut args: Vec<&[u8]> = vec![b"TOWN.RECV", town.as_bytes(), b"w"];
        args.extend(bad.iter().map(|a| a.as_bytes()));
        assert!(fails(&mut con, &args).starts_with("ERR"), "{bad:?}");
    }
    for bad in [
        &["TOWN.EXTEND", &town, "w", "a"][..],
        &["TOWN.EXTEND", &town, "w", "a", "0"],
        &["TOWN.EXTEND", &town, "w", "a", "1", "x"],
    ] {
        let args: Vec<&[u8]> = bad.iter().map(|a| a.as_bytes()).collect();
        assert!(fails(&mut con, &args).starts_with("ERR"), "{bad:?}");
    }
    assert_eq!(lengths(&mut con, &town, "w"), vec![1, 0, 0]);
    ok::<()>(&mut con, &["SET", &format!("tt:{{{town}}}:leases:w"), "x"]);
    let error = fails(&mut con, &[b"TOWN.RECV", town.as_bytes(), b"w", b"RELIABLE", b"LEASE", b"5"]);
    assert!(error.starts_with("WRONGTYPE"), "{error}");
    assert_eq!(lengths(&mut con, &town, "w"), vec![1, 0, 0]);
    ok::<i64>(&mut con, &["DEL", &format!("tt:{{{town}}}:leases:w")]);
    recv(&mut con, &town, &["RELIABLE", "LEASE", "0.5"]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.REQUEUE", &town, "w"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", &format!("tt:{{{town}}}:leases:w")]), 0);
    // The config applies to RELIABLE receives without LEASE.
    ok::<()>(&mut con, &["CONFIG", "SET", "dreamtown.town-lease", "30"]);
    recv(&mut con, &town, &["RELIABLE"]);
    let deadline: Option<f64> = ok(&mut con, &["ZSCORE", &format!("tt:{{{town}}}:leases:w"), "a"]);
    assert!(deadline.is_some());
}

#[test]
fn a_promoted_replica_expires_town_leases_and_the_aof_keeps_them() {
    let master = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let replica = master.start_replica();
    let mut con = master.connect();
    let town = tenant("town-lease-failover");
    for id in ["a", "b"] {
        ok::<i64>(&mut con, &["TOWN.SEND", &town, &message(id, "w", "normal")]);
    }
    recv(&mut con, &town, &["RELIABLE", "LEASE", "0.2", "COUNT", "1"]);
    wait_until("expired on the master", || inbox(&mut con, &town, "w").len() == 2);
    let mut r = replica.connect();
    wait_until("replica digest equal", || digest(&mut con) == digest(&mut r));
    let before = digest(&mut con);
    ok::<()>(&mut con, &["DEBUG", "LOADAOF"]);
    assert_eq!(digest(&mut con), before, "the AOF replays the expiry");
    assert_eq!(recv(&mut con, &town, &["RELIABLE", "LEASE", "1.5", "COUNT", "2"]).len(), 2);
    wait_until("leases on the replica", || ok::<i64>(&mut r, &["ZCARD", &format!("tt:{{{town}}}:leases:w")]) == 2);
    drop(con);
    drop(master);
    ok::<()>(&mut r, &["REPLICAOF", "NO", "ONE"]);
    wait_until("the promoted replica expires them", || inbox(&mut r, &town, "w").len() == 2);
    assert!(pending(&mut r, &town).is_empty());
}

#[test]
fn deleting_an_agent_or_resetting_the_town_drops_its_leases() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("town-lease-del");
    for agent in ["w", "v"] {
        ok::<()>(&mut con, &["TOWN.AGENT", "SET", &town, agent, "name", agent]);
        ok::<i64>(&mut con, &["TOWN.SEND", &town, &message(&format!("m-{agent}"), agent, "normal")]);
        let _: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, agent, "RELIABLE", "LEASE", "60"]);
    }
    ok::<i64>(&mut con, &["TOWN.AGENT", "DEL", &town, "w"]);
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", &format!("tt:{{{town}}}:leases:w")]), 0);
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", &format!("tt:{{{town}}}:leases:v")]), 1);
    ok::<redis::Value>(&mut con, &["TOWN.RESET", &town]);
    assert_eq!(ok::<i64>(&mut con, &["EXISTS", &format!("tt:{{{town}}}:leases:v")]), 0);
}
