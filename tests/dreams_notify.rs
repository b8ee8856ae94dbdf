//! Keyspace notifications: every key a DREAMS.* command changes fires the
//! events the plain Redis command for the same change fires (`rpush`,
//! `lpop`, `lrem`, `hset`, `hdel`, `sadd`, `srem`, `zadd`, `zrem`, `del`,
//! including the `del` of a list, set or hash a command empties), so
//! subscribers and WATCH see the module's writes like anyone else's.
//!
//! A subscriber collects events until a sentinel PUBLISH that follows the
//! command on the same server: pub/sub delivers in order, so everything
//! the command fired arrives before it, with no waiting on time.

use crate::common;
use crate::dreams_support;

use std::time::Duration;

use common::{tenant, Server};
use dreams_support::*;
use redis::Connection;

const SENTINEL: &str = "dreams-notify-sentinel";

struct Subscriber {
    con: Connection,
    prefix: String,
}

impl Subscriber {
    fn new(server: &Server, org: &str) -> Self {
        let mut admin = server.connect();
        ok(&mut admin, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
        let mut con = server.connect();
        con.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let prefix = format!("__keyspace@0__:exocortex:dreams:{{{org}}}:");
        let _: () = redis::cmd("PSUBSCRIBE").arg(format!("{prefix}*")).query(&mut con).unwrap();
        let _: () = redis::cmd("SUBSCRIBE").arg(SENTINEL).query(&mut con).unwrap();
        Self { con, prefix }
    }

    /// The `(key suffix, event)` pairs fired since the last call, in order.
    fn events(&mut self, publisher: &mut Connection) -> Vec<(String, String)> {
        let _: i64 = redis::cmd("PUBLISH").arg(SENTINEL).arg("done").query(publisher).unwrap();
        let mut events = Vec::new();
        loop {
            let message: redis::Value = self.con.recv_response().expect("a pub/sub message");
            let parts: Vec<String> = match message {
                redis::Value::Array(items) | redis::Value::Push { data: items, .. } => items
                    .iter()
                    .map(|item| match item {
                        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                        other => format!("{other:?}"),
                    })
                    .collect(),
                other => panic!("unexpected {other:?}"),
            };
            match parts.first().map(String::as_str) {
                Some("message") if parts.get(1).map(String::as_str) == Some(SENTINEL) => return events,
                Some("pmessage") => {
                    let key = parts[2].strip_prefix(&self.prefix).expect("our key").to_owned();
                    events.push((key, parts[3].clone()));
                }
                _ => {}
            }
        }
    }
}

fn pairs_of(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected.iter().map(|(k, e)| (k.to_string(), e.to_string())).collect()
}

#[test]
fn every_changed_key_fires_the_event_of_the_equivalent_command() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("notify");
    let mut subscriber = Subscriber::new(&server, &org);
    let mut dreams = Dreams::new(&mut con, &org);
    let t = trigger(3, 100, 0, NEVER_SECS);
    let mut once = vec!["EVENT", "e", "GENERATION", "1"];
    once.extend(strs(&t));

    dreams.record("p", 1, 1, 0, &once);
    assert_eq!(subscriber.events(dreams.con), pairs_of(&[("events:1:p", "sadd"), ("counters:1:p", "hset")]));

    dreams.record("p", 1, 1, 0, &once);
    assert_eq!(subscriber.events(dreams.con), [], "a replay changes nothing and fires nothing");

    dreams.record("p", 1, 2, 0, &strs(&t));
    assert_eq!(
        subscriber.events(dreams.con),
        pairs_of(&[("counters:1:p", "hset"), ("counters:1:p", "hset"), ("queue", "rpush")])
    );

    // As LMOVE fires them: the push, then the pop (tests/native_events.rs
    // compares the two in one run).
    let payload = dreams.take_one();
    assert_eq!(
        subscriber.events(dreams.con),
        pairs_of(&[("processing", "rpush"), ("queue", "lpop"), ("queue", "del")])
    );

    dreams.ack(&payload, "FAILURE", &[]);
    assert_eq!(
        subscriber.events(dreams.con),
        pairs_of(&[
            ("processing", "lrem"),
            ("processing", "del"),
            ("counters:1:p", "hdel"),
            ("counters:1:p", "hset"),
            ("queue", "rpush"),
        ])
    );

    let payload = dreams.take_one();
    subscriber.events(dreams.con);
    dreams.ack(&payload, "SUCCESS", &strs(&trigger(1, 1, 1, NEVER_SECS)));
    assert_eq!(
        subscriber.events(dreams.con),
        pairs_of(&[("processing", "lrem"), ("processing", "del"), ("counters:1:p", "hset"), ("counters:1:p", "hdel")])
    );

    dreams.settle("p", 1, "e", 1, &[]);
    assert_eq!(
        subscriber.events(dreams.con),
        pairs_of(&[("counters:1:p", "hset"), ("events:1:p", "srem"), ("events:1:p", "del")])
    );

    dreams.fire("f", 1, &[]);
    assert_eq!(subscriber.events(dreams.con), pairs_of(&[("queue", "rpush")]));
    dreams.take_one();
    subscriber.events(dreams.con);
    assert_eq!(dreams.recover(), 1);
    assert_eq!(subscriber.events(dreams.con), pairs_of(&[("processing", "del"), ("queue", "rpush")]));
}

#[test]
fn quiet_hours_and_dead_letters_fire_their_events() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("notify-quiet");
    let covering = window(&mut con, 0, 2);
    let mut subscriber = Subscriber::new(&server, &org);
    let mut dreams = Dreams::new(&mut con, &org);
    dreams.fire("a", 1, &[]);
    dreams.fire("b", 1, &[]);
    subscriber.events(dreams.con);
    dreams.drain("1", &["QUIET", &covering]).unwrap();
    assert_eq!(
        subscriber.events(dreams.con),
        pairs_of(&[
            ("queue", "lpop"),
            ("deferred", "zadd"),
            ("deferred", "zrem"),
            ("deferred", "del"),
            ("queue", "rpush"),
            ("queue", "lpop"),
            ("deferred", "zadd"),
            ("deferred", "zrem"),
            ("deferred", "del"),
            ("queue", "rpush"),
            ("processing", "rpush"),
            ("queue", "lpop"),
        ])
    );
    dreams.take_one();
    let keys = Keys::new(&org);
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg("junk").query(dreams.con).unwrap();
    subscriber.events(dreams.con);
    assert_eq!(dreams.take(), None);
    assert_eq!(subscriber.events(dreams.con), pairs_of(&[("queue", "lpop"), ("queue", "del"), ("dead", "rpush")]));
}
