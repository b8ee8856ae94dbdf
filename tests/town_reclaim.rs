//! TOWN.RECLAIM against a real server: a dead agent's mixed mail (urgent,
//! high, normal, low, pending, and stored messages that no longer parse)
//! moves to another agent in one step, nothing lost, `to` rewritten and
//! every other byte kept.

use crate::common;
use crate::town_support;

use common::{tenant, Server};
use town_support::*;

#[test]
fn reclaim_moves_a_mixed_mailbox_with_nothing_lost() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("reclaim");
    let key = |kind: &str, agent: &str| format!("tt:{{{town}}}:{kind}:{agent}");

    // The heir already has mail of its own.
    let own = message("own", "heir", "normal");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &own]);

    // One message received reliably and never acknowledged.
    let pending = message("p1", "dead", "low");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &pending]);
    let got: Vec<String> = ok(&mut con, &["TOWN.RECV", &town, "dead", "RELIABLE"]);
    assert_eq!(got, vec![pending.clone()]);

    let u1 = message("u1", "dead", "normal");
    let u2 = message("u2", "dead", "high");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &u1, "URGENT"]);
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &u2, "URGENT"]);
    let high = message("h1", "dead", "high");
    let normal = message("n1", "dead", "normal");
    let low = message("l1", "dead", "low");
    for sent in [&normal, &high, &low] {
        ok::<i64>(&mut con, &["TOWN.SEND", &town, sent]);
    }
    // Stored messages that no longer parse (written by something else).
    ok::<i64>(&mut con, &["RPUSH", &key("inbox", "dead"), "not json {"]);
    ok::<i64>(&mut con, &["LPUSH", &key("urgent", "dead"), "[\"urgent\",\"garbage\"]"]);
    assert_eq!(lengths(&mut con, &town, "dead"), vec![4, 3, 1]);

    let moved: i64 = ok(&mut con, &["TOWN.RECLAIM", &town, "dead", "heir"]);
    assert_eq!(moved, 8);
    assert_eq!(lengths(&mut con, &town, "dead"), vec![0, 0, 0]);
    let exists: i64 = ok(&mut con, &["EXISTS", &key("inbox", "dead"), &key("urgent", "dead"), &key("pending", "dead")]);
    assert_eq!(exists, 0);

    // Each message re-sent head first: urgent ones to the urgent head...
    assert_eq!(
        list(&mut con, &key("urgent", "heir")),
        vec![
            readdressed(&u1, "dead", "heir"),
            readdressed(&u2, "dead", "heir"),
            "[\"urgent\",\"garbage\"]".to_string(),
        ]
    );
    // ...then pending and inbox by priority (high to the head, others to
    // the tail); the unparseable one unchanged at the tail.
    assert_eq!(
        inbox(&mut con, &town, "heir"),
        vec![
            readdressed(&high, "dead", "heir"),
            own,
            readdressed(&pending, "dead", "heir"),
            readdressed(&normal, "dead", "heir"),
            readdressed(&low, "dead", "heir"),
            "not json {".to_string(),
        ]
    );
    assert_eq!(lengths(&mut con, &town, "heir"), vec![6, 3, 0]);
    assert!(info_field(&mut con, "messages_reclaimed") >= 8);
    assert!(info_field(&mut con, "messages_reclaimed_unparsed") >= 2);

    // Nothing left to move: 0, and no writes.
    assert_eq!(ok::<i64>(&mut con, &["TOWN.RECLAIM", &town, "dead", "heir"]), 0);
}

#[test]
fn reclaim_keeps_every_other_byte_of_a_message() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("reclaim-bytes");
    let odd = "{\"n\": 1.50e3 ,\"to\" : \"dead\", \"s\":\"\\u00e9\", \"nested\": {\"to\": \"dead\"}, \"priority\":\"URGENT\"}";
    ok::<i64>(&mut con, &["TOWN.SEND", &town, odd]);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.RECLAIM", &town, "dead", "we\"ird"]), 1);
    let expected = "{\"n\": 1.50e3 ,\"to\" : \"we\\\"ird\", \"s\":\"\\u00e9\", \"nested\": {\"to\": \"dead\"}, \"priority\":\"URGENT\"}";
    assert_eq!(inbox(&mut con, &town, "we\"ird"), vec![expected.to_string()]);
}

#[test]
fn reclaim_wakes_a_receiver_blocked_on_the_heir() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("reclaim-wake");
    let sent = message("m", "dead", "normal");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &sent]);
    let mut waiter = server.connect();
    let town_for_waiter = town.clone();
    let receiver = std::thread::spawn(move || {
        let got: Option<Vec<String>> = ok(&mut waiter, &["TOWN.RECV", &town_for_waiter, "heir", "BLOCK", "30"]);
        got
    });
    wait_blocked(&mut con, 1);
    assert_eq!(ok::<i64>(&mut con, &["TOWN.RECLAIM", &town, "dead", "heir"]), 1);
    assert_eq!(receiver.join().expect("receiver"), Some(vec![readdressed(&sent, "dead", "heir")]));
}

#[test]
fn reclaim_refuses_to_move_mail_to_the_same_agent() {
    let server = Server::start();
    let mut con = server.connect();
    let town = tenant("reclaim-self");
    ok::<i64>(&mut con, &["TOWN.SEND", &town, &message("m", "a", "normal")]);
    let error = fails(&mut con, &[b"TOWN.RECLAIM", town.as_bytes(), b"a", b"a"]);
    assert!(error.contains("itself"), "{error}");
    assert_eq!(lengths(&mut con, &town, "a"), vec![1, 0, 0]);
}
