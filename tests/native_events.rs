//! Keyspace events of the Town commands that set a TTL are those their
//! native analogues fire (issue 32, point 10): `TOWN.STOP REQUEST ...`
//! fires `set` then `expire` on the flag, as `SET ... PX` does;
//! `TOWN.ACTIVITY LOG` fires `lpush`, `ltrim`, `expire`, as tinytown's
//! `LPUSH` + `LTRIM` + `EXPIRE` do, whether or not the trim removed
//! anything. Each is compared with the native commands run on the same
//! server, on a key of the same type.
//!
//! And those of the moves (issue 43): a `TOWN.RECV` that empties an inbox
//! fires `lpop` then `del`, as `LPOP` (plain, `COUNT`, `RELIABLE`, urgent,
//! served while blocked as `BLPOP` is); a `DREAMS.DRAIN` fires what
//! `LMOVE` fires (`rpush` on the in-flight list, then `lpop`, and `del`
//! when ready empties), on the master and on a replica applying it, and
//! served while blocked as `BLMOVE` is.
//!
//! A subscriber collects events until a sentinel `PUBLISH` that follows
//! the command on the same server: pub/sub delivers in order, so
//! everything the command fired arrives first, with no waiting on time.

use crate::common;
use crate::town_support;

use std::time::Duration;

use common::{tenant, Server};
use redis::Connection;
use town_support::ok;

const SENTINEL: &str = "native-events-sentinel";

struct Subscriber {
    con: Connection,
    /// Its own sentinel channel: a master's `PUBLISH` reaches its
    /// replicas' subscribers too, so each subscriber waits for its own.
    sentinel: String,
}

impl Subscriber {
    fn new(server: &Server) -> Self {
        let mut admin = server.connect();
        ok::<()>(&mut admin, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
        let mut con = server.connect();
        con.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _: () = redis::cmd("PSUBSCRIBE").arg("__keyspace@0__:*").query(&mut con).unwrap();
        let sentinel = tenant(SENTINEL);
        let _: () = redis::cmd("SUBSCRIBE").arg(&sentinel).query(&mut con).unwrap();
        Self { con, sentinel }
    }

    /// The events fired on `key` since the last call, in order.
    fn events_of(&mut self, publisher: &mut Connection, key: &str) -> Vec<String> {
        self.events_on(publisher, &[key]).into_iter().map(|(_, event)| event).collect()
    }

    /// The events fired on any of `keys` since the last call, in the order
    /// they fired, each with the index of its key in `keys`.
    fn events_on(&mut self, publisher: &mut Connection, keys: &[&str]) -> Vec<(usize, String)> {
        let _: i64 = redis::cmd("PUBLISH").arg(&self.sentinel).arg("done").query(publisher).unwrap();
        let channels: Vec<String> = keys.iter().map(|key| format!("__keyspace@0__:{key}")).collect();
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
                Some("message") if parts.get(1) == Some(&self.sentinel) => return events,
                Some("pmessage") => {
                    if let Some(at) = channels.iter().position(|channel| parts.get(2) == Some(channel)) {
                        events.push((at, parts[3].clone()));
                    }
                }
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

/// Run `args` on a new connection in a thread; its reply when it comes.
fn in_thread(server: &Server, args: &[&str]) -> std::thread::JoinHandle<redis::Value> {
    let mut con = server.connect();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    std::thread::spawn(move || redis::cmd(&args[0]).arg(&args[1..]).query(&mut con).expect("the blocked call"))
}

/// Wait until `n` clients are blocked.
fn wait_blocked(con: &mut Connection, n: u64) {
    common::wait_until("clients blocked", || common::blocked_clients(con) == n);
}

#[test]
fn a_receive_that_empties_an_inbox_fires_what_lpop_fires() {
    let server = Server::start();
    let mut sub = Subscriber::new(&server);
    let mut con = server.connect();
    let town = tenant("recv-events");
    let native = format!("native-{town}");
    let inbox = format!("tt:{{{town}}}:inbox:w1");
    let urgent = format!("tt:{{{town}}}:urgent:w1");
    let send = |con: &mut Connection, id: &str, urgent: bool| {
        let message = town_support::message(id, "w1", "normal");
        let mut args = vec!["TOWN.SEND", town.as_str(), message.as_str()];
        if urgent {
            args.push("URGENT");
        }
        ok::<i64>(con, &args);
    };
    // (what is in the list, the native pop, the receive): one message of
    // two taken, the last one taken, two taken of two (COUNT), RELIABLE.
    let cases: [(usize, &[&str], &[&str], &str); 5] = [
        (2, &["LPOP"], &[], "inbox"),
        (1, &["LPOP"], &[], "inbox"),
        (2, &["LPOP", "3"], &["COUNT", "3"], "inbox"),
        (1, &["LPOP"], &["RELIABLE"], "inbox"),
        (1, &["LPOP"], &["URGENT"], "urgent"),
    ];
    for (round, (held, pop, options, list)) in cases.into_iter().enumerate() {
        for i in 0..held {
            ok::<i64>(&mut con, &["RPUSH", &native, &format!("m{i}")]);
            send(&mut con, &format!("r{round}-{i}"), list == "urgent");
        }
        let key = if list == "urgent" { &urgent } else { &inbox };
        sub.events_of(&mut con, &native);
        let mut native_pop = pop.to_vec();
        native_pop.insert(1, &native);
        call(&mut con, &native_pop.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let expected = sub.events_of(&mut con, &native);
        sub.events_of(&mut con, key);
        let mut recv = vec!["TOWN.RECV", &town, "w1"];
        recv.extend(options);
        call(&mut con, &recv.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let fired = sub.events_of(&mut con, key);
        assert_eq!(fired, expected, "case {round}: {pop:?} against {options:?} on {held} held");
        // Drain what a case left, for the next.
        ok::<redis::Value>(&mut con, &["DEL", &native, &inbox, &urgent]);
    }
    let emptied = ["lpop", "del"];
    // Served while blocked: BLPOP against RECV ... BLOCK, a push waking each.
    let native_waiter = in_thread(&server, &["BLPOP", &native, "0"]);
    wait_blocked(&mut con, 1);
    sub.events_of(&mut con, &native);
    ok::<i64>(&mut con, &["RPUSH", &native, "m"]);
    native_waiter.join().expect("BLPOP");
    let expected = sub.events_of(&mut con, &native);
    assert_eq!(expected, ["rpush", emptied[0], emptied[1]]);
    for options in [&["BLOCK", "0"][..], &["BLOCK", "0", "RELIABLE", "COUNT", "5"]] {
        let mut recv = vec!["TOWN.RECV", town.as_str(), "w1"];
        recv.extend(options);
        let waiter = in_thread(&server, &recv);
        wait_blocked(&mut con, 1);
        sub.events_of(&mut con, &inbox);
        send(&mut con, "served", false);
        waiter.join().expect("RECV");
        assert_eq!(sub.events_of(&mut con, &inbox), expected, "{options:?}");
        ok::<redis::Value>(&mut con, &["DEL", &format!("tt:{{{town}}}:pending:w1")]);
    }
}

/// The events on `[source, destination]` since the last look, on the
/// master and (once it has applied everything) on its replica.
fn moved_events(
    subs: &mut [Subscriber; 2],
    master: &mut Connection,
    replica: &mut Connection,
    keys: [&str; 2],
) -> [Vec<(usize, String)>; 2] {
    let _: i64 = redis::cmd("WAIT").arg(1).arg(0).query(master).expect("WAIT");
    let [on_master, on_replica] = subs;
    [on_master.events_on(master, &keys), on_replica.events_on(replica, &keys)]
}

#[test]
fn a_drain_fires_what_lmove_fires_on_master_and_replica() {
    let server = Server::start();
    let replica = server.start_replica();
    let mut subs = [Subscriber::new(&server), Subscriber::new(&replica)];
    let mut con = server.connect();
    let mut on_replica = replica.connect();
    let org = tenant("drain-events");
    let native = [format!("native-src-{org}"), format!("native-dst-{org}")];
    let native_keys = [native[0].as_str(), native[1].as_str()];
    let queue = [format!("exocortex:dreams:{{{org}}}:queue"), format!("exocortex:dreams:{{{org}}}:processing")];
    let queue_keys = [queue[0].as_str(), queue[1].as_str()];
    let lmove = ["LMOVE", native_keys[0], native_keys[1], "LEFT", "RIGHT"];
    // Two held (the move leaves one), then one (the move empties it).
    for held in [2, 1] {
        for i in 0..held {
            ok::<i64>(&mut con, &["RPUSH", native_keys[0], &format!("p{i}")]);
            ok::<String>(&mut con, &["DREAMS.FIRE", &org, &format!("p{held}-{i}"), "1"]);
        }
        moved_events(&mut subs, &mut con, &mut on_replica, native_keys);
        moved_events(&mut subs, &mut con, &mut on_replica, queue_keys);
        ok::<redis::Value>(&mut con, &lmove);
        let expected = moved_events(&mut subs, &mut con, &mut on_replica, native_keys);
        assert_eq!(expected[0], expected[1], "LMOVE on master and replica");
        ok::<redis::Value>(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]);
        let fired = moved_events(&mut subs, &mut con, &mut on_replica, queue_keys);
        assert_eq!(fired, expected, "{held} held");
    }
    // Served while blocked: BLMOVE against DRAIN, a push waking each.
    ok::<redis::Value>(&mut con, &["DEL", native_keys[0], native_keys[1], queue_keys[0], queue_keys[1]]);
    let mut blmove = lmove.to_vec();
    blmove[0] = "BLMOVE";
    blmove.push("0");
    let waiter = in_thread(&server, &blmove);
    wait_blocked(&mut con, 1);
    moved_events(&mut subs, &mut con, &mut on_replica, native_keys);
    ok::<i64>(&mut con, &["RPUSH", native_keys[0], "p"]);
    waiter.join().expect("BLMOVE");
    let expected = moved_events(&mut subs, &mut con, &mut on_replica, native_keys);
    let names: Vec<&str> = expected[0].iter().map(|(_, event)| event.as_str()).collect();
    assert_eq!(names, ["rpush", "rpush", "lpop", "del"]);
    let waiter = in_thread(&server, &["DREAMS.DRAIN", &org, "0", "NOQUIET"]);
    wait_blocked(&mut con, 1);
    moved_events(&mut subs, &mut con, &mut on_replica, queue_keys);
    ok::<String>(&mut con, &["DREAMS.FIRE", &org, "p", "1"]);
    waiter.join().expect("DRAIN");
    assert_eq!(moved_events(&mut subs, &mut con, &mut on_replica, queue_keys), expected, "served while blocked");
}
