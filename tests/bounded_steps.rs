//! No single step of the module grows with what is due or piled up
//! (issue 32, point 8 and point 2), asserted through the counts the module
//! exposes, never through time:
//!
//! * 20,000 leases of one organization (and of one agent) expiring
//!   together are handled at most 1,000 per timer tick
//!   (`INFO dreamtown`: `lease_max_tick_expired`), all of them, each
//!   once;
//! * one `DREAMS.DRAIN` dead-letters at most 256 garbage items; a blocked
//!   drain goes on by itself until it reaches the fire behind them;
//! * `TOWN.ACK` of 20,000 ids over 1,000 pending messages reads each
//!   pending message once (`ack_messages_scanned`), not once per id.

use crate::common;
use crate::town_support;

use common::{tenant, wait_until, Server};
use town_support::*;

fn queue_key(org: &str, which: &str) -> String {
    format!("exocortex:dreams:{{{org}}}:{which}")
}

fn llen(con: &mut redis::Connection, key: &str) -> i64 {
    ok(con, &["LLEN", key])
}

#[test]
fn leases_of_one_organization_expire_a_bounded_number_per_tick() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("bounded-dreams");
    ok::<()>(&mut con, &["CONFIG", "SET", "dreamtown.queue-max", "1000000"]);
    let n = 20_000;
    let mut pipe = redis::pipe();
    for i in 0..n {
        pipe.cmd("DREAMS.FIRE").arg(&org).arg(format!("p{i:05}")).arg(1).ignore();
    }
    let () = pipe.query(&mut con).expect("fires");
    // Leased within a few ms of each other: they fall due together.
    let mut pipe = redis::pipe();
    for _ in 0..n / 1_000 {
        pipe.cmd("DREAMS.DRAIN").arg(&org).arg("1").arg("NOQUIET").arg("COUNT").arg(1_000).arg("LEASE").arg("2");
    }
    let batches: Vec<Vec<Vec<u8>>> = pipe.query(&mut con).expect("drains");
    assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), n);
    let mut expected: Vec<Vec<u8>> = batches.concat();
    expected.sort();
    let ready = queue_key(&org, "queue");
    wait_until("every lease expired", || llen(&mut con, &ready) == n as i64);
    assert_eq!(llen(&mut con, &queue_key(&org, "processing")), 0);
    let mut back: Vec<Vec<u8>> = redis::cmd("LRANGE").arg(&ready).arg(0).arg(-1).query(&mut con).expect("lrange");
    back.sort();
    assert_eq!(back, expected, "each item back once");
    let most = info_field(&mut con, "lease_max_tick_expired");
    assert!((1..=1_000).contains(&most), "one tick handled {most} leases");
}

#[test]
fn leases_of_one_agent_expire_a_bounded_number_per_tick() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("bounded-town");
    let n = 20_000;
    let sent: Vec<String> = (0..n).map(|i| message(&format!("m{i:05}"), "a", "normal")).collect();
    let mut pipe = redis::pipe();
    for message in &sent {
        pipe.cmd("TOWN.SEND").arg(&town).arg(message).ignore();
    }
    let () = pipe.query(&mut con).expect("sends");
    let got: Vec<String> =
        ok(&mut con, &["TOWN.RECV", &town, "a", "COUNT", &n.to_string(), "RELIABLE", "LEASE", "0.2"]);
    assert_eq!(got.len(), n);
    wait_until("every lease expired", || lengths(&mut con, &town, "a") == vec![n as i64, 0, 0]);
    let mut back = inbox(&mut con, &town, "a");
    back.sort();
    let mut expected = sent.clone();
    expected.sort();
    assert_eq!(back, expected, "each message back once");
    let most = info_field(&mut con, "lease_max_tick_expired");
    assert!((1..=1_000).contains(&most), "one tick handled {most} leases");
}

#[test]
fn one_drain_dead_letters_a_bounded_number_and_a_blocked_drain_goes_on() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("bounded-drain");
    let ready = queue_key(&org, "queue");
    let garbage = 2_000;
    let mut pipe = redis::pipe();
    for i in 0..garbage {
        pipe.cmd("RPUSH").arg(&ready).arg(format!("garbage {i}")).ignore();
    }
    let () = pipe.query(&mut con).expect("garbage");
    // Garbage counts toward the ceiling as the seed's LLEN does.
    ok::<()>(&mut con, &["CONFIG", "SET", "dreamtown.queue-max", "1000000"]);
    ok::<String>(&mut con, &["DREAMS.FIRE", &org, "p", "1"]);
    let before = info_field(&mut con, "dead_lettered");
    // Inside MULTI a drain never blocks: exactly one call's work.
    let (reply,): (Option<Vec<u8>>,) =
        redis::pipe().atomic().cmd("DREAMS.DRAIN").arg(&org).arg("0").arg("NOQUIET").query(&mut con).expect("drain");
    assert_eq!(reply, None, "only garbage within the bound");
    assert_eq!(info_field(&mut con, "dead_lettered") - before, 256);
    assert_eq!(llen(&mut con, &ready), garbage - 256 + 1);
    // A blocking drain goes on, a bounded step per turn, to the fire.
    let fire: Option<Vec<u8>> =
        redis::cmd("DREAMS.DRAIN").arg(&org).arg("30").arg("NOQUIET").query(&mut con).expect("drain");
    let fire = String::from_utf8(fire.expect("the fire behind the garbage")).expect("utf-8");
    assert!(fire.contains("\"project\":\"p\""), "{fire}");
    assert_eq!(llen(&mut con, &queue_key(&org, "dead")), garbage);
    assert_eq!(llen(&mut con, &ready), 0);
}

#[test]
fn an_ack_of_many_ids_reads_each_pending_message_once() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("bounded-ack");
    let pending = 1_000;
    let mut pipe = redis::pipe();
    for i in 0..pending {
        pipe.cmd("TOWN.SEND").arg(&town).arg(message(&format!("m{i}"), "a", "normal")).ignore();
    }
    let () = pipe.query(&mut con).expect("sends");
    let got: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "a", "COUNT", "1000", "RELIABLE"]);
    assert_eq!(got.len(), pending);
    let before = info_field(&mut con, "ack_messages_scanned");
    let mut ack = redis::cmd("TOWN.ACK");
    ack.arg(&town).arg("a");
    for i in 0..20_000 {
        ack.arg(format!("absent-{i}"));
    }
    let removed: i64 = ack.query(&mut con).expect("ack");
    assert_eq!(removed, 0);
    let scanned = info_field(&mut con, "ack_messages_scanned") - before;
    assert!(scanned <= pending as u64, "read {scanned} messages for 20,000 ids over {pending} pending");
    // All of them, newest first, each twice: every one removed once.
    let mut ack = redis::cmd("TOWN.ACK");
    ack.arg(&town).arg("a");
    for i in (0..pending).rev() {
        ack.arg(format!("m{i}")).arg(format!("m{i}"));
    }
    let before = info_field(&mut con, "ack_messages_scanned");
    let removed: i64 = ack.query(&mut con).expect("ack");
    assert_eq!(removed, pending as i64);
    assert!(info_field(&mut con, "ack_messages_scanned") - before <= pending as u64);
    assert_eq!(lengths(&mut con, &town, "a"), vec![0, 0, 0]);
}

#[test]
fn an_ack_of_many_ids_does_what_one_ack_per_id_does() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("batch-ack");
    // Two agents in the same state: 60 pending messages (ids repeat), of
    // which the first 20 were leased and went back to the inbox.
    for agent in ["a", "b"] {
        for i in 0..60 {
            ok::<i64>(&mut con, &["TOWN.SEND", &town, &message(&format!("m{}", i % 45), agent, "normal")]);
        }
        let got: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, agent, "COUNT", "20", "RELIABLE", "LEASE", "0.05"]);
        assert_eq!(got.len(), 20);
        let got: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, agent, "COUNT", "40", "RELIABLE"]);
        assert_eq!(got.len(), 40);
    }
    wait_until("the leases ran out", || {
        lengths(&mut con, &town, "a")[0] == 20 && lengths(&mut con, &town, "b")[0] == 20
    });
    // Shuffled, with repeats and unknown ids: more than the small-batch path takes.
    let ids: Vec<String> =
        (0..90).map(|i| format!("m{}", (i * 37 + 11) % 50)).chain(["none".to_string(), "m3".to_string()]).collect();
    let mut batch = redis::cmd("TOWN.ACK");
    batch.arg(&town).arg("a").arg(&ids);
    let scanned = info_field(&mut con, "ack_messages_scanned");
    let removed: i64 = batch.query(&mut con).expect("ack");
    // One pass over the 40 pending, one over the 20 in the inbox at most.
    assert!(info_field(&mut con, "ack_messages_scanned") - scanned <= 60);
    let one_by_one: i64 = ids.iter().map(|id| ok::<i64>(&mut con, &["TOWN.ACK", &town, "b", id])).sum();
    assert_eq!(removed, one_by_one);
    assert!(removed > 20, "{removed}");
    for key in ["inbox", "pending"] {
        let a = list(&mut con, &format!("tt:{{{town}}}:{key}:a"));
        let b = list(&mut con, &format!("tt:{{{town}}}:{key}:b"));
        let readdressed: Vec<String> = b.iter().map(|m| m.replace(r#""to":"b""#, r#""to":"a""#)).collect();
        assert_eq!(a, readdressed, "{key}");
    }
    let a: Vec<String> = ok(&mut con, &["ZRANGE", &format!("tt:{{{town}}}:leases:a"), "0", "-1"]);
    let b: Vec<String> = ok(&mut con, &["ZRANGE", &format!("tt:{{{town}}}:leases:b"), "0", "-1"]);
    assert_eq!(a, b);
}
