//! Keyspace events of the Town commands that set a TTL are those their
//! native analogues fire (issue 32, point 10): `TOWN.STOP REQUEST ...`
//! fires `set` then `expire` on the flag, as `SET ... PX` does;
//! `TOWN.ACTIVITY LOG` fires `lpush`, `ltrim`, `expire`, as tinytown's
//! `LPUSH` + `LTRIM` + `EXPIRE` do, whether or not the trim removed
//! anything. Each is compared with the native commands run on the same
//! server, on a key of the same type.
//!
//! A subscriber collects events until a sentinel `PUBLISH` that follows
//! the command on the same server: pub/sub delivers in order, so
//! everything the command fired arrives first, with no waiting on time.

mod common;
mod town_support;

use std::time::Duration;

use common::{tenant, Server};
use redis::Connection;
use town_support::ok;

const SENTINEL: &str = "native-events-sentinel";

struct Subscriber {
    con: Connection,
}

impl Subscriber {
    fn new(server: &Server) -> Self {
        let mut admin = server.connect();
        ok::<()>(&mut admin, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
        let mut con = server.connect();
        con.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _: () = redis::cmd("PSUBSCRIBE").arg("__keyspace@0__:*").query(&mut con).unwrap();
        let _: () = redis::cmd("SUBSCRIBE").arg(SENTINEL).query(&mut con).unwrap();
        Self { con }
    }

    /// The events fired on `key` since the last call, in order.
    fn events_of(&mut self, publisher: &mut Connection, key: &str) -> Vec<String> {
        let _: i64 = redis::cmd("PUBLISH").arg(SENTINEL).arg("done").query(publisher).unwrap();
        let channel = format!("__keyspace@0__:{key}");
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
                Some("pmessage") if parts.get(2) == Some(&channel) => events.push(parts[3].clone()),
                _ => {}
            }
        }
    }
}

/// `TOWN.STOP`'s request of a stop flag for `agent` (with a TTL, if given):
/// the one place that knows the command's syntax.
fn stop_request(town: &str, agent: &str, ttl: Option<&str>) -> Vec<String> {
    let mut args: Vec<String> = ["TOWN.STOP", "REQUEST", town, agent].iter().map(|s| s.to_string()).collect();
    if let Some(ttl) = ttl {
        args.extend(["TTL".to_string(), ttl.to_string()]);
    }
    args
}

fn call(con: &mut Connection, args: &[String]) {
    let _: redis::Value = redis::cmd(&args[0]).arg(&args[1..]).query(con).expect("the command");
}

#[test]
fn a_stop_request_fires_what_set_with_px_fires() {
    let server = Server::start();
    let mut sub = Subscriber::new(&server);
    let mut con = server.connect();
    let town = tenant("stop-events");
    let native = format!("native-{town}");
    ok::<()>(&mut con, &["SET", &native, "1", "PX", "3600000"]);
    let expected = sub.events_of(&mut con, &native);
    assert_eq!(expected, ["set", "expire"]);
    let flag = format!("tt:{{{town}}}:stop:w1");
    for ttl in [None, Some("60")] {
        call(&mut con, &stop_request(&town, "w1", ttl));
        assert_eq!(sub.events_of(&mut con, &flag), expected, "TTL {ttl:?}");
    }
}

#[test]
fn an_activity_log_fires_what_lpush_ltrim_expire_fire() {
    let server = Server::start();
    let mut sub = Subscriber::new(&server);
    let mut con = server.connect();
    let town = tenant("activity-events");
    let native = format!("native-{town}");
    let log = format!("tt:{{{town}}}:activity:w1");
    // A fresh log (nothing to trim), then a full one (the oldest trimmed).
    for round in 0..12 {
        ok::<i64>(&mut con, &["LPUSH", &native, "entry"]);
        ok::<()>(&mut con, &["LTRIM", &native, "0", "9"]);
        ok::<i64>(&mut con, &["EXPIRE", &native, "86400"]);
        let expected = sub.events_of(&mut con, &native);
        assert_eq!(expected, ["lpush", "ltrim", "expire"]);
        ok::<()>(&mut con, &["TOWN.ACTIVITY", "LOG", &town, "w1", "entry"]);
        assert_eq!(sub.events_of(&mut con, &log), expected, "round {round}");
    }
}
