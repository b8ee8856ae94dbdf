//! `DREAMS.REDRIVE` (dead letters back to ready) and `DREAMS.INFLIGHT ...
//! LIMIT` (a page of the in-flight list), the two commands an operator's
//! console pages and acts with: what they move and list, held against the
//! native commands that would do the same by hand (`LMOVE`, `LRANGE`,
//! `ZSCORE`); their replication, keyspace events, wake-ups, refusals.

use crate::common;
use crate::dreams_support;

use std::time::Duration;

use common::{tenant, wait_until, Server};
use dreams_support::*;
use redis::{Connection, Value};

fn fire_of(org: &str, project: &str) -> String {
    format!(
        r#"{{"region":{{"org":"{org}","project":"{project}","memory_type":3}},"fired_by":"ops","fire_id":"id-{project}"}}"#
    )
}

fn list(con: &mut Connection, key: &str) -> Vec<String> {
    redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query(con).unwrap()
}

fn ints(value: &Value) -> Vec<i64> {
    match value {
        Value::Array(items) => items.iter().map(int).collect(),
        other => panic!("an array, not {other:?}"),
    }
}

#[test]
fn fires_of_the_organization_go_back_in_order_and_the_rest_stays_dead() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("redrive");
    let keys = Keys::new(&org);
    ok(&mut con, &["DREAMS.FIRE", &org, "queued", "3"]);
    let dead = [
        "garbage".to_owned(),
        fire_of(&org, "a"),
        fire_of("someone-else", "b"),
        fire_of(&org, "c"),
        "more garbage".to_owned(),
    ];
    for item in &dead {
        ok(&mut con, &["RPUSH", &keys.dead, item]);
    }
    let ready_before = list(&mut con, &keys.ready);
    // COUNT 3 looks at the first three: one fire goes back, two rotate.
    assert_eq!(ints(&ok(&mut con, &["DREAMS.REDRIVE", &org, "COUNT", "3"])), vec![1, 2, 4]);
    let mut ready = ready_before.clone();
    ready.push(fire_of(&org, "a"));
    assert_eq!(list(&mut con, &keys.ready), ready);
    assert_eq!(
        list(&mut con, &keys.dead),
        vec![fire_of(&org, "c"), "more garbage".into(), "garbage".into(), fire_of("someone-else", "b")]
    );
    // The default count looks at every one left, once.
    assert_eq!(ints(&ok(&mut con, &["DREAMS.REDRIVE", &org])), vec![1, 3, 3]);
    ready.push(fire_of(&org, "c"));
    assert_eq!(list(&mut con, &keys.ready), ready);
    assert_eq!(
        list(&mut con, &keys.dead),
        vec!["more garbage".to_owned(), "garbage".into(), fire_of("someone-else", "b")]
    );
    // The moved fires are drained as any other.
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.take_one();
    assert_eq!(dreams.take_one(), fire_of(&org, "a").into_bytes());
    assert_eq!(dreams.take_one(), fire_of(&org, "c").into_bytes());
    // A lone item that stays is left alone; an organization with no dead letters moves nothing.
    let lone = tenant("redrive-lone");
    ok(&mut con, &["RPUSH", &Keys::new(&lone).dead, "x"]);
    assert_eq!(ints(&ok(&mut con, &["DREAMS.REDRIVE", &lone])), vec![0, 1, 1]);
    assert_eq!(list(&mut con, &Keys::new(&lone).dead), vec!["x".to_owned()]);
    assert_eq!(ints(&ok(&mut con, &["DREAMS.REDRIVE", &tenant("redrive-none")])), vec![0, 0, 0]);
}

#[test]
fn it_stops_at_the_queue_ceiling() {
    let server = Server::start_with_module_args(&[], &["queue-max", "3"]);
    let mut con = server.connect();
    let org = tenant("redrive-ceiling");
    let keys = Keys::new(&org);
    ok(&mut con, &["DREAMS.FIRE", &org, "queued", "3"]);
    for project in ["a", "b", "c"] {
        ok(&mut con, &["RPUSH", &keys.dead, &fire_of(&org, project)]);
    }
    assert_eq!(ints(&ok(&mut con, &["DREAMS.REDRIVE", &org])), vec![2, 0, 1]);
    assert_eq!(list(&mut con, &keys.dead), vec![fire_of(&org, "c")]);
    assert_eq!(ints(&ok(&mut con, &["DREAMS.REDRIVE", &org])), vec![0, 0, 1], "full: nothing looked at");
}

/// One move is one `LMOVE dead queue LEFT RIGHT` (a rotation `LMOVE dead
/// dead LEFT RIGHT`): the replica and a native server that ran those
/// commands end with the same keyspace.
#[test]
fn moves_replicate_as_lmove() {
    let server = Server::start();
    let replica = server.start_replica();
    let plain = Server::start();
    let mut con = server.connect();
    let mut native = plain.connect();
    let org = tenant("redrive-repl");
    let keys = Keys::new(&org);
    let items = ["junk".to_owned(), fire_of(&org, "a"), fire_of(&org, "b")];
    for item in &items {
        ok(&mut con, &["RPUSH", &keys.dead, item]);
        ok(&mut native, &["RPUSH", &keys.dead, item]);
    }
    assert_eq!(ints(&ok(&mut con, &["DREAMS.REDRIVE", &org])), vec![2, 1, 1]);
    ok(&mut native, &["LMOVE", &keys.dead, &keys.dead, "LEFT", "RIGHT"]);
    ok(&mut native, &["LMOVE", &keys.dead, &keys.ready, "LEFT", "RIGHT"]);
    ok(&mut native, &["LMOVE", &keys.dead, &keys.ready, "LEFT", "RIGHT"]);
    let _: () = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).map(|_: i64| ()).unwrap();
    assert_eq!(replica.digest(), server.digest());
    assert_eq!(plain.digest(), server.digest(), "the same keyspace as the native moves");
}

fn events(server: &Server, org: &str, run: impl FnOnce(&mut Connection)) -> Vec<(String, String)> {
    let mut admin = server.connect();
    ok(&mut admin, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = server.connect();
    sub.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let prefix = format!("__keyspace@0__:exocortex:dreams:{{{org}}}:");
    let _: () = redis::cmd("PSUBSCRIBE").arg(format!("{prefix}*")).query(&mut sub).unwrap();
    let _: () = redis::cmd("SUBSCRIBE").arg("redrive-sentinel").query(&mut sub).unwrap();
    run(&mut admin);
    let _: i64 = redis::cmd("PUBLISH").arg("redrive-sentinel").arg("done").query(&mut admin).unwrap();
    let mut found = Vec::new();
    loop {
        let message: Value = sub.recv_response().expect("a message");
        let parts: Vec<String> = match message {
            Value::Array(items) | Value::Push { data: items, .. } => items.iter().map(text).collect(),
            other => panic!("unexpected {other:?}"),
        };
        match parts.first().map(String::as_str) {
            Some("message") => return found,
            Some("pmessage") => found.push((parts[2].strip_prefix(&prefix).unwrap().to_owned(), parts[3].clone())),
            _ => {}
        }
    }
}

#[test]
fn events_are_lmoves_and_a_blocked_drain_is_served() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("redrive-events");
    let native_org = tenant("redrive-native");
    for (o, item) in [
        (&org, "junk".to_owned()),
        (&org, fire_of(&org, "a")),
        (&native_org, "junk".into()),
        (&native_org, fire_of(&native_org, "a")),
    ] {
        ok(&mut con, &["RPUSH", &Keys::new(o).dead, &item]);
    }
    let module = events(&server, &org, |con| {
        ok(con, &["DREAMS.REDRIVE", &org]);
    });
    let keys = Keys::new(&native_org);
    let native = events(&server, &native_org, |con| {
        ok(con, &["LMOVE", &keys.dead, &keys.dead, "LEFT", "RIGHT"]);
        ok(con, &["LMOVE", &keys.dead, &keys.ready, "LEFT", "RIGHT"]);
    });
    // In LMOVE's order: the push, then the pop.
    assert_eq!(module, native);

    // A drain blocked on the organization gets the fire a redrive moves.
    let blocked_org = tenant("redrive-blocked");
    ok(&mut con, &["RPUSH", &Keys::new(&blocked_org).dead, &fire_of(&blocked_org, "w")]);
    let mut waiter = server.connect();
    let waiting = std::thread::spawn({
        let org = blocked_org.clone();
        move || call(&mut waiter, &["DREAMS.DRAIN", &org, "20", "NOQUIET"])
    });
    wait_until("the drain blocks", || common::blocked_clients(&mut con) == 1);
    ok(&mut con, &["DREAMS.REDRIVE", &blocked_org]);
    let served = waiting.join().unwrap().expect("served");
    assert_eq!(text(&served), fire_of(&blocked_org, "w"));
}

#[test]
fn refusals_change_nothing() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("redrive-refused");
    let keys = Keys::new(&org);
    ok(&mut con, &["RPUSH", &keys.dead, &fire_of(&org, "a")]);
    let before = server.digest();
    for (args, error) in [
        (vec!["DREAMS.REDRIVE", &org, "COUNT", "0"], "ERR count must be from 1 to 10000"),
        (vec!["DREAMS.REDRIVE", &org, "COUNT", "10001"], "ERR count must be an integer from 0 to 10000"),
        (vec!["DREAMS.REDRIVE", &org, "COUNT"], "ERR missing count"),
        (vec!["DREAMS.REDRIVE", &org, "LIMIT", "1"], "ERR syntax error"),
        (vec!["DREAMS.REDRIVE", "a{b"], "ERR organization must not contain '{' or '}'"),
    ] {
        assert_eq!(error_of(&mut con, &args), error, "{args:?}");
    }
    // A ready list of another type: WRONGTYPE before anything moves.
    let other = tenant("redrive-wrongtype");
    ok(&mut con, &["RPUSH", &Keys::new(&other).dead, &fire_of(&other, "a")]);
    ok(&mut con, &["SET", &Keys::new(&other).ready, "x"]);
    let before_wrongtype = server.digest();
    assert!(error_of(&mut con, &["DREAMS.REDRIVE", &other]).starts_with("WRONGTYPE"));
    assert_eq!(server.digest(), before_wrongtype);
    ok(&mut con, &["DEL", &Keys::new(&other).ready, &Keys::new(&other).dead]);
    assert_eq!(server.digest(), before);
    // Adding work back is refused when memory is full (deny-oom, as LMOVE).
    ok(&mut con, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "1"]);
    assert!(error_of(&mut con, &["DREAMS.REDRIVE", &org]).starts_with("OOM"));
    ok(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(server.digest(), before);
    // And a replica refuses it.
    let replica = server.start_replica();
    assert!(error_of(&mut replica.connect(), &["DREAMS.REDRIVE", &org]).starts_with("READONLY"));
}

#[test]
fn inflight_pages_are_slices_of_the_whole_listing() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("inflight-pages");
    {
        let mut dreams = Dreams::new(&mut con, &org);
        for i in 0..7 {
            dreams.fire(&format!("p{i}"), 3, &[]);
        }
        for i in 0..7 {
            let lease: &[&str] = if i % 2 == 0 { &["LEASE", "60"] } else { &[] };
            dreams.drain("1", &[&["NOQUIET"][..], lease].concat()).expect("an item");
        }
    }
    let whole = ok(&mut con, &["DREAMS.INFLIGHT", &org]);
    let Value::Array(whole) = whole else { panic!("an array") };
    assert_eq!(whole.len(), 7);
    // Each entry's deadline is the lease set's score, or nil when not leased.
    for entry in &whole {
        let Value::Array(pair) = entry else { panic!("a pair") };
        let score: Option<i64> = redis::cmd("ZSCORE")
            .arg(format!("exocortex:dreams:{{{org}}}:leases"))
            .arg(text(&pair[0]))
            .query(&mut con)
            .unwrap();
        assert_eq!(pair[1], score.map_or(Value::Nil, Value::Int));
    }
    let items: Vec<String> = list(&mut con, &Keys::new(&org).processing);
    for (offset, count) in [(0, 3), (3, 3), (6, 3), (7, 3), (2, 0), (100, 1)] {
        let page = ok(&mut con, &["DREAMS.INFLIGHT", &org, "LIMIT", &offset.to_string(), &count.to_string()]);
        let Value::Array(page) = page else { panic!("an array") };
        let expected: Vec<Value> = whole.iter().skip(offset).take(count).cloned().collect();
        assert_eq!(page, expected, "LIMIT {offset} {count}");
        let payloads: Vec<String> = items.iter().skip(offset).take(count).cloned().collect();
        let listed: Vec<String> = page
            .iter()
            .map(|e| match e {
                Value::Array(p) => text(&p[0]),
                _ => panic!(),
            })
            .collect();
        assert_eq!(listed, payloads, "as LRANGE {offset} {}", offset + count);
    }
    assert_eq!(error_of(&mut con, &["DREAMS.INFLIGHT", &org, "LIMIT", "1"]), "ERR missing count");
    assert_eq!(
        error_of(&mut con, &["DREAMS.INFLIGHT", &org, "LIMIT", "-1", "2"]),
        "ERR offset must be an integer from 0 to 9223372036854775807"
    );
    assert_eq!(error_of(&mut con, &["DREAMS.INFLIGHT", &org, "LIMIT", "1", "2", "3"]), "ERR syntax error");
    assert_eq!(error_of(&mut con, &["DREAMS.INFLIGHT", &org, "COUNT", "2"]), "ERR syntax error");
}
