//! TOWN.SEND / RECV / ACK / REQUEUE / LEN / PEEK against a real server:
//! priority placement, urgent-first, blocking receive woken from another
//! connection, timeouts, never blocking in MULTI or Lua, reliable receive,
//! and nothing ever dropped.

use crate::common;
use crate::town_support;

use std::io::Write;
use std::net::TcpStream;

use common::{tenant, Server};
use town_support::*;

#[test]
fn priority_decides_the_place_in_the_inbox() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("prio");
    let sends = [
        message("n1", "b", "normal"),
        message("l1", "b", "low"),
        message("h1", "b", "high"),
        message("u1", "b", "urgent"),
        message("n2", "b", "normal"),
        r#"{"id":"none","to":"b"}"#.to_string(),
        message("H2", "b", "HiGh"),
    ];
    for (at, sent) in sends.iter().enumerate() {
        let length: i64 = ok(&mut con, &["TOWN.SEND", &town, sent]);
        assert_eq!(length, at as i64 + 1);
    }
    let expected = vec![
        sends[6].clone(),
        sends[3].clone(),
        sends[2].clone(),
        sends[0].clone(),
        sends[1].clone(),
        sends[4].clone(),
        sends[5].clone(),
    ];
    assert_eq!(inbox(&mut con, &town, "b"), expected);
    assert_eq!(lengths(&mut con, &town, "b"), vec![7, 0, 0]);
    let received: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b", "COUNT", "100"]);
    assert_eq!(received, expected);
    assert_eq!(lengths(&mut con, &town, "b"), vec![0, 0, 0]);
}

#[test]
fn urgent_inbox_is_read_first() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("urgent");
    let normal = message("a", "b", "normal");
    let first = message("u1", "b", "low");
    let second = message("u2", "b", "normal");
    assert_eq!(ok::<i64>(&mut con, &["TOWN.SEND", &town, &normal]), 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.SEND", &town, &first, "URGENT"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.SEND", &town, &second, "urgent"]), 2);
    assert_eq!(lengths(&mut con, &town, "b"), vec![1, 2, 0]);
    // Urgent messages are pushed at the head: newest first.
    assert_eq!(list(&mut con, &format!("tt:{{{town}}}:urgent:b")), vec![second.clone(), first.clone()]);
    let one: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b"]);
    assert_eq!(one, vec![second.clone()]);
    let rest: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b", "COUNT", "5"]);
    assert_eq!(rest, vec![first.clone(), normal.clone()]);

    // URGENT reads only the urgent inbox, all of it by default.
    for id in ["x1", "x2", "x3"] {
        ok::<i64>(&mut con, &["TOWN.SEND", &town, &message(id, "b", "normal"), "URGENT"]);
    }
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &normal]);
    let urgent: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b", "URGENT"]);
    assert_eq!(urgent.len(), 3);
    assert!(urgent[0].contains("\"x3\"") && urgent[2].contains("\"x1\""), "{urgent:?}");
    let none: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b", "URGENT"]);
    assert!(none.is_empty());
    assert_eq!(lengths(&mut con, &town, "b"), vec![1, 0, 0]);
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("x4", "b", "normal"), "URGENT"]);
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("x5", "b", "normal"), "URGENT"]);
    let counted: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b", "URGENT", "COUNT", "1"]);
    assert_eq!(counted.len(), 1);
    assert!(counted[0].contains("\"x5\""));
}

#[test]
fn without_block_an_empty_inbox_gives_an_empty_array_and_block_times_out_with_nil() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("timeout");
    let empty: redis::Value = ok(&mut con, &["TOWN.RECV", &town, "b"]);
    assert_eq!(empty, redis::Value::Array(vec![]));
    let started = std::time::Instant::now();
    let timed_out: redis::Value = ok(&mut con, &["TOWN.RECV", &town, "b", "BLOCK", "0.2"]);
    assert_eq!(timed_out, redis::Value::Nil);
    assert!(started.elapsed() >= std::time::Duration::from_millis(150), "{:?}", started.elapsed());
    assert_eq!(blocked_clients(&mut con), 0);
}

#[test]
fn blocking_receive_is_woken_by_a_send_from_another_connection() {
    let server = Server::start();
    let town = tenant("block");
    let mut waiter = server.connect();
    let town_for_waiter = town.clone();
    let receiver = std::thread::spawn(move || {
        let got: Option<Vec<String>> =
            ok(&mut waiter, &["TOWN.RECV", &town_for_waiter, "b", "BLOCK", "30", "RELIABLE"]);
        got
    });
    let mut con = server.connect();
    wait_blocked(&mut con, 1);
    let sent = message("woken", "b", "normal");
    assert_eq!(ok::<i64>(&mut con, &["TOWN.SEND", &town, &sent]), 1);
    let got = receiver.join().expect("receiver thread");
    assert_eq!(got, Some(vec![sent.clone()]));
    // RELIABLE kept it pending.
    assert_eq!(lengths(&mut con, &town, "b"), vec![0, 0, 1]);
    assert_eq!(list(&mut con, &format!("tt:{{{town}}}:pending:b")), vec![sent]);
}

#[test]
fn blocking_urgent_receive_ignores_the_normal_inbox() {
    let server = Server::start();
    let town = tenant("block-urgent");
    let mut waiter = server.connect();
    let town_for_waiter = town.clone();
    let receiver = std::thread::spawn(move || {
        let got: Option<Vec<String>> = ok(&mut waiter, &["TOWN.RECV", &town_for_waiter, "b", "URGENT", "BLOCK", "30"]);
        got
    });
    let mut con = server.connect();
    wait_blocked(&mut con, 1);
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("normal", "b", "high")]);
    // The send's reply comes after the server tried to serve blocked
    // clients on the key it wrote: the urgent receiver is still waiting.
    assert_eq!(blocked_clients(&mut con), 1);
    let urgent = message("urgent", "b", "normal");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &urgent, "URGENT"]);
    assert_eq!(receiver.join().expect("receiver"), Some(vec![urgent]));
    assert_eq!(lengths(&mut con, &town, "b"), vec![1, 0, 0]);
}

#[test]
fn two_blocked_receivers_share_messages_one_each() {
    let server = Server::start();
    let town = tenant("two");
    let spawn = |town: String| {
        let mut waiter = server.connect();
        std::thread::spawn(move || {
            let got: Option<Vec<String>> = ok(&mut waiter, &["TOWN.RECV", &town, "b", "BLOCK", "30"]);
            got
        })
    };
    let first = spawn(town.clone());
    let mut con = server.connect();
    wait_blocked(&mut con, 1);
    let second = spawn(town.clone());
    wait_blocked(&mut con, 2);
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("m1", "b", "normal")]);
    wait_blocked(&mut con, 1);
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("m2", "b", "normal")]);
    let mut got: Vec<String> =
        [first, second].into_iter().flat_map(|t| t.join().expect("receiver").expect("a message")).collect();
    got.sort();
    assert_eq!(got.len(), 2);
    assert!(got[0].contains("\"m1\"") && got[1].contains("\"m2\""), "{got:?}");
}

#[test]
fn a_client_that_disconnects_while_blocked_loses_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("gone");
    let mut raw = TcpStream::connect(("127.0.0.1", server.port)).expect("raw connection");
    let args = ["TOWN.RECV", town.as_str(), "b", "BLOCK", "0", "RELIABLE"];
    let mut resp = format!("*{}\r\n", args.len());
    for arg in args {
        resp.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    raw.write_all(resp.as_bytes()).expect("send RECV");
    wait_blocked(&mut con, 1);
    drop(raw);
    wait_blocked(&mut con, 0);
    let sent = message("kept", "b", "normal");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &sent]);
    assert_eq!(lengths(&mut con, &town, "b"), vec![1, 0, 0]);
    assert_eq!(inbox(&mut con, &town, "b"), vec![sent]);
}

#[test]
fn never_blocks_inside_multi_or_lua() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("multi");
    let replies: Vec<redis::Value> = redis::pipe()
        .atomic()
        .cmd("TOWN.RECV")
        .arg(&town)
        .arg("b")
        .arg("BLOCK")
        .arg("0")
        .query(&mut con)
        .expect("MULTI/EXEC");
    // Timed out at once, as BLPOP there (tests/native_replies.rs compares
    // the exact nil).
    assert_eq!(replies, vec![redis::Value::Nil]);
    let script: redis::Value =
        ok(&mut con, &["EVAL", "return redis.call('TOWN.RECV', ARGV[1], 'b', 'BLOCK', '0')", "0", &town]);
    assert_eq!(script, redis::Value::Nil);
    // And inside MULTI a message that is there is still received.
    let sent = message("m", "b", "normal");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &sent]);
    let replies: Vec<Vec<String>> = redis::pipe()
        .atomic()
        .cmd("TOWN.RECV")
        .arg(&town)
        .arg("b")
        .arg("BLOCK")
        .arg("0")
        .query(&mut con)
        .expect("MULTI/EXEC");
    assert_eq!(replies, vec![vec![sent]]);
    assert_eq!(blocked_clients(&mut con), 0);
}

#[test]
fn reliable_receive_ack_and_requeue_hand_back_in_order() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("reliable");
    let sent: Vec<String> = (1..=4).map(|n| message(&format!("m{n}"), "b", "normal")).collect();
    for message in &sent[..3] {
        ok::<i64>(&mut con, &["TOWN.SEND", &town, message]);
    }
    let got: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b", "COUNT", "3", "RELIABLE"]);
    assert_eq!(got, sent[..3].to_vec());
    assert_eq!(lengths(&mut con, &town, "b"), vec![0, 0, 3]);
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &sent[3]]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "b", "m2"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "b", "m2"]), 0);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "b", "nope"]), 0);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "other", "m1"]), 0);
    assert_eq!(lengths(&mut con, &town, "b"), vec![1, 0, 2]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.REQUEUE", &town, "b"]), 2);
    assert_eq!(inbox(&mut con, &town, "b"), vec![sent[0].clone(), sent[2].clone(), sent[3].clone()]);
    assert_eq!(lengths(&mut con, &town, "b"), vec![3, 0, 0]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.REQUEUE", &town, "b"]), 0);
    // Urgent messages received reliably are pending too.
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("u", "b", "normal"), "URGENT"]);
    let got: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b", "RELIABLE"]);
    assert!(got[0].contains("\"u\""));
    assert_eq!(lengths(&mut con, &town, "b"), vec![3, 0, 1]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "b", "u"]), 1);
    assert_eq!(lengths(&mut con, &town, "b"), vec![3, 0, 0]);
    assert!(info_field(&mut con, "messages_acked") >= 2);
    assert!(info_field(&mut con, "messages_requeued") >= 2);
}

#[test]
fn one_ack_of_several_ids_acknowledges_each_as_its_own_ack_would() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("multiack");
    let sent: Vec<String> = (1..=6).map(|n| message(&format!("m{n}"), "b", "normal")).collect();
    for message in &sent {
        ok::<i64>(&mut con, &["TOWN.SEND", &town, message]);
    }
    let got: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b", "COUNT", "5", "RELIABLE"]);
    assert_eq!(got, sent[..5].to_vec());
    let acked_before = info_field(&mut con, "messages_acked");
    // In order: m2, m4, then m2 again (gone by then), an unknown id, and m6
    // (still in the inbox, never received: not acknowledged).
    let removed: i64 = ok(&mut con, &["TOWN.ACK", &town, "b", "m2", "m4", "m2", "nope", "m6"]);
    assert_eq!(removed, 2);
    assert_eq!(info_field(&mut con, "messages_acked") - acked_before, 2);
    assert_eq!(lengths(&mut con, &town, "b"), vec![1, 0, 3]);
    // What is left pending is exactly what was not acknowledged, in order.
    assert_eq!(ok::<i64>(&mut con, &["TOWN.REQUEUE", &town, "b"]), 3);
    assert_eq!(inbox(&mut con, &town, "b"), vec![sent[0].clone(), sent[2].clone(), sent[4].clone(), sent[5].clone()]);
    let again: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b", "COUNT", "4", "RELIABLE"]);
    assert_eq!(again.len(), 4);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "b", "m1", "m3", "m5", "m6"]), 4);
    assert_eq!(lengths(&mut con, &town, "b"), vec![0, 0, 0]);
    // A key of the wrong type refuses the whole call before any write.
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("m7", "c", "normal")]);
    ok::<Vec<String>>(&mut con, &["TOWN.RECV", &town, "c", "RELIABLE"]);
    let leases = format!("tt:{{{town}}}:leases:c");
    ok::<i64>(&mut con, &["DEL", &leases]);
    ok::<()>(&mut con, &["SET", &leases, "not a zset"]);
    let error = fails(&mut con, &[b"TOWN.ACK", town.as_bytes(), b"c", b"m7", b"m8"]);
    assert!(error.starts_with("WRONGTYPE"), "{error}");
    assert_eq!(lengths(&mut con, &town, "c"), vec![0, 0, 1]);
}

#[test]
fn stored_messages_that_no_longer_parse_are_never_dropped() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("garbage");
    let key = format!("tt:{{{town}}}:inbox:b");
    let good = message("g", "b", "normal");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &good]);
    ok::<i64>(&mut con, &["RPUSH", &key, "not json at all", "{\"to\":7}"]);
    assert_eq!(inbox(&mut con, &town, "b"), vec![good.clone(), "not json at all".into(), "{\"to\":7}".into()]);
    let two: Vec<String> = ok(&mut con, &["TOWN.PEEK", &town, "b", "2"]);
    assert_eq!(two, vec![good.clone(), "not json at all".to_string()]);
    let none: Vec<String> = ok(&mut con, &["TOWN.PEEK", &town, "b", "0"]);
    assert!(none.is_empty());
    let got: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "b", "COUNT", "10", "RELIABLE"]);
    assert_eq!(got, vec![good, "not json at all".into(), "{\"to\":7}".into()]);
    assert_eq!(lengths(&mut con, &town, "b"), vec![0, 0, 3]);
    // An unparseable pending message can't be acknowledged by id, but is handed back.
    assert_eq!(ok::<i64>(&mut con, &["TOWN.ACK", &town, "b", "g"]), 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.REQUEUE", &town, "b"]), 2);
    assert_eq!(inbox(&mut con, &town, "b"), vec!["not json at all".to_string(), "{\"to\":7}".into()]);
}

#[test]
fn sent_bytes_are_stored_exactly() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("exact");
    let odd = "{ \"to\" : \"b\",\n \"n\": 1.50e3, \"s\": \"\\u00e9\\n\", \"priority\": \"Normal\" }";
    ok::<i64>(&mut con, &["TOWN.SEND", &town, odd]);
    assert_eq!(inbox(&mut con, &town, "b"), vec![odd.to_string()]);
    assert!(info_field(&mut con, "messages_sent") >= 1);
}
