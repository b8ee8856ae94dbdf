//! Every refusal of the DREAMS.* commands is an error reply that changed
//! nothing: keys of the wrong type (WRONGTYPE), counter fields that are not
//! integers, foreign payloads, and every documented argument validation.
//! "Nothing changed" is checked with `DEBUG DIGEST` before and after, on a
//! queue that holds real work (ready, in flight, counted), so a command
//! that wrote before failing would show.

use crate::common;
use crate::dreams_support;

use common::{tenant, Server};
use dreams_support::*;
use redis::Connection;

/// Run `args` and require an error starting with `prefix`, with the dataset
/// unchanged.
fn refused(con: &mut Connection, args: &[&[u8]], prefix: &str) {
    let before = digest(con);
    match call_bytes(con, args) {
        Ok(value) => panic!("{:?} should fail with {prefix}, replied {value:?}", printable(args)),
        Err(error) => assert!(error.starts_with(prefix), "{:?}: expected {prefix}..., got {error}", printable(args)),
    }
    assert_eq!(digest(con), before, "{:?} changed the dataset", printable(args));
}

fn refused_str(con: &mut Connection, args: &[&str], prefix: &str) {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    refused(con, &bytes, prefix);
}

fn printable(args: &[&[u8]]) -> Vec<String> {
    args.iter().map(|a| String::from_utf8_lossy(&a[..a.len().min(80)]).into_owned()).collect()
}

/// An organization with work everywhere: a counted fire of region `p`/1 in
/// flight (returned), an explicit fire ready, and an event counted.
fn busy(con: &mut Connection, org: &str) -> Vec<u8> {
    let mut dreams = Dreams::new(con, org);
    let mut extra = vec!["EVENT", "e-1", "GENERATION", "1"];
    let t = trigger(3, 100, 0, NEVER_SECS);
    extra.extend(strs(&t));
    assert_eq!(dreams.record("p", 1, 3, 0, &extra).0, "queued");
    let payload = dreams.take_one();
    dreams.fire("q", 1, &[]);
    dreams.record("p", 1, 1, 0, &strs(&t));
    assert_eq!(dreams.len(), (1, 0, 1));
    payload
}

/// One call of every command that touches region `p`/1 or the queue.
fn every_command<'a>(org: &'a str, payload: &'a [u8]) -> Vec<(&'static str, Vec<&'a [u8]>)> {
    let o = org.as_bytes();
    vec![
        ("fire", vec![b"DREAMS.FIRE", o, b"p", b"1"]),
        // Region p/1 has a pending fire: this record only accumulates.
        ("record", vec![b"DREAMS.RECORD", o, b"p", b"1", b"5", b"5", b"TRIGGER", b"1", b"1", b"0", b"0"]),
        // ... and this one also counts an event identity (the event set).
        ("record-event", vec![b"DREAMS.RECORD", o, b"p", b"1", b"5", b"5", b"EVENT", b"e-new", b"GENERATION", b"9"]),
        // Region r/1 is fresh: this record is due to fire (the queue).
        ("record-fire", vec![b"DREAMS.RECORD", o, b"r", b"1", b"5", b"5", b"TRIGGER", b"1", b"1", b"0", b"0"]),
        ("settle", vec![b"DREAMS.SETTLE", o, b"p", b"1", b"e-1", b"9"]),
        ("drain", vec![b"DREAMS.DRAIN", o, b"0.01", b"NOQUIET"]),
        ("ack", vec![b"DREAMS.ACK", o, payload, b"FAILURE"]),
        ("recover", vec![b"DREAMS.RECOVER", o]),
        ("len", vec![b"DREAMS.LEN", o]),
        ("counters", vec![b"DREAMS.COUNTERS", o, b"p", b"1"]),
    ]
}

/// Replace `key` with a value of another type (keeping the old one aside
/// would change the digest, so it is simply replaced).
fn retype(con: &mut Connection, key: &str, kind: &str) {
    let _: () = redis::cmd("DEL").arg(key).query(con).unwrap();
    let _: () = match kind {
        "string" => redis::cmd("SET").arg(key).arg("x").query(con).unwrap(),
        "list" => redis::cmd("RPUSH").arg(key).arg("x").query(con).unwrap(),
        "hash" => redis::cmd("HSET").arg(key).arg("f").arg("v").query(con).unwrap(),
        "set" => redis::cmd("SADD").arg(key).arg("x").query(con).unwrap(),
        "zset" => redis::cmd("ZADD").arg(key).arg(1).arg("x").query(con).unwrap(),
        other => panic!("{other}"),
    };
}

#[test]
fn wrong_type_keys_are_refused_by_every_command_that_opens_them() {
    let server = Server::start();
    let mut con = server.connect();
    // (key, a wrong type for it, the commands that open it). A RECORD
    // checks the keys of the path it takes (docs/bench.md): the queue
    // only when it fires, the event set only with EVENT.
    type Case = (fn(&Keys) -> String, &'static str, &'static [&'static str]);
    let cases: Vec<Case> = vec![
        (|k| k.ready.clone(), "string", &["fire", "record-fire", "drain", "ack", "recover", "len"]),
        (|k| k.ready.clone(), "zset", &["fire", "record-fire", "drain", "ack", "recover", "len"]),
        (|k| k.deferred.clone(), "list", &["fire", "record-fire", "drain", "ack", "recover", "len"]),
        (|k| k.processing.clone(), "hash", &["fire", "record-fire", "drain", "ack", "recover", "len"]),
        (|k| k.dead.clone(), "set", &["drain"]),
        (|k| k.counters("p", 1), "list", &["record", "record-event", "settle", "ack", "counters"]),
        (|k| k.events("p", 1), "zset", &["record-event", "settle", "counters"]),
        (|k| k.events("p", 1), "string", &["record-event", "settle", "counters"]),
    ];
    for (key_of, kind, commands) in cases {
        let org = tenant("wrongtype");
        let keys = Keys::new(&org);
        let payload = busy(&mut con, &org);
        let key = key_of(&keys);
        retype(&mut con, &key, kind);
        for (name, args) in every_command(&org, &payload) {
            if commands.contains(&name) {
                refused(&mut con, &args, "WRONGTYPE");
            }
        }
    }
}

/// The other side of the path rule: a RECORD that neither fires nor counts
/// an event identity does not look at the queue or the event set, so their
/// wrong types do not refuse it (the seed's script would: a documented
/// difference), and it counts exactly as it would with them intact.
#[test]
fn an_accumulating_record_ignores_the_queue_and_event_set_it_does_not_touch() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("untouched");
    let keys = Keys::new(&org);
    let _payload = busy(&mut con, &org);
    for key in [&keys.ready, &keys.deferred, &keys.processing, &keys.events("p", 1)] {
        retype(&mut con, key, "string");
    }
    let record = |con: &mut Connection, extra: &[&str]| {
        let mut args = vec!["DREAMS.RECORD", org.as_str(), "p", "1", "2", "3"];
        args.extend(extra);
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        call_bytes(con, &bytes)
    };
    let before: Vec<String> =
        redis::cmd("HMGET").arg(keys.counters("p", 1)).arg("memories").arg("edges").query(&mut con).unwrap();
    let reply = record(&mut con, &["TRIGGER", "1", "1", "0", "0"]).expect("an accumulating record succeeds");
    let after: Vec<i64> =
        redis::cmd("HMGET").arg(keys.counters("p", 1)).arg("memories").arg("edges").query(&mut con).unwrap();
    let before: Vec<i64> = before.iter().map(|v| v.parse().unwrap()).collect();
    assert_eq!(after, vec![before[0] + 2, before[1] + 3], "{reply:?}");
    // With EVENT it writes the event set, whose type it then refuses, changing nothing.
    let digest_before = digest(&mut con);
    let refused = record(&mut con, &["EVENT", "e-x", "GENERATION", "9"]).expect_err("event set is a string");
    assert!(refused.starts_with("WRONGTYPE"), "{refused}");
    assert_eq!(digest(&mut con), digest_before);
}

/// The path rule for ACK: an acknowledgement that queues no fire again
/// uses only the in-flight list, the region's counters and the lease set,
/// so a wrong-typed ready list or deferred set does not refuse it (the
/// seed's script would: a documented difference) and is left as it was.
/// One that requeues (a failure), or one of an organization that has
/// leases (a fire may be back in ready), refuses them, nothing changed.
#[test]
fn an_ack_checks_the_ready_list_and_deferred_set_only_on_the_paths_that_use_them() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-path");
    let keys = Keys::new(&org);
    let payload = busy(&mut con, &org);
    retype(&mut con, &keys.ready, "string");
    retype(&mut con, &keys.deferred, "list");
    let failure: Vec<&[u8]> = vec![b"DREAMS.ACK", org.as_bytes(), &payload, b"FAILURE"];
    refused(&mut con, &failure, "WRONGTYPE");
    // A success with nothing further due (the default trigger's hour has
    // not passed): acknowledged; the two keys as they were.
    let success: Vec<&[u8]> = vec![b"DREAMS.ACK", org.as_bytes(), &payload, b"SUCCESS"];
    let reply = call_bytes(&mut con, &success).expect("no requeue: the ready list and deferred set are not used");
    assert_eq!(counted(&reply).0, "acknowledged", "{reply:?}");
    let ready: String = redis::cmd("GET").arg(&keys.ready).query(&mut con).unwrap();
    let deferred: Vec<String> = redis::cmd("LRANGE").arg(&keys.deferred).arg(0).arg(-1).query(&mut con).unwrap();
    assert_eq!((ready.as_str(), deferred), ("x", vec!["x".to_owned()]));
    assert_eq!(Dreams::new(&mut con, &org).processing(), Vec::<Vec<u8>>::new(), "the fire left flight");

    // Where leases exist, the same success checks them.
    let org = tenant("ack-path-leased");
    let keys = Keys::new(&org);
    let payload = busy(&mut con, &org);
    assert!(Dreams::new(&mut con, &org).drain("1", &["NOQUIET", "LEASE", "60"]).is_some(), "the explicit fire, leased");
    retype(&mut con, &keys.ready, "string");
    let success: Vec<&[u8]> = vec![b"DREAMS.ACK", org.as_bytes(), &payload, b"SUCCESS"];
    refused(&mut con, &success, "WRONGTYPE");
}

/// The seed's ACKNOWLEDGE never names the counted-event set, and neither
/// does DREAMS.ACK: a wrong-typed event set does not refuse it, and the
/// set is left as it was.
#[test]
fn an_ack_ignores_the_event_set_as_the_seed_does() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-events");
    let keys = Keys::new(&org);
    let payload = busy(&mut con, &org);
    retype(&mut con, &keys.events("p", 1), "string");
    let ack: Vec<&[u8]> = vec![b"DREAMS.ACK", org.as_bytes(), &payload, b"SUCCESS"];
    let reply = call_bytes(&mut con, &ack).expect("the ACK does not look at the event set");
    let (outcome, _, _): (String, i64, i64) = redis::from_redis_value(reply.clone()).unwrap();
    assert!(outcome == "acknowledged" || outcome == "requeued", "{reply:?}");
    let events: String = redis::cmd("GET").arg(keys.events("p", 1)).query(&mut con).unwrap();
    assert_eq!(events, "x");
    assert_eq!(Dreams::new(&mut con, &org).len().2, 0, "the fire left flight");
}

#[test]
fn a_drain_refused_for_a_wrong_type_dead_list_moves_nothing_even_with_garbage_ready() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("wrongtype-dead");
    let keys = Keys::new(&org);
    let _: () = redis::cmd("RPUSH").arg(&keys.ready).arg("garbage").query(&mut con).unwrap();
    retype(&mut con, &keys.dead, "string");
    refused_str(&mut con, &["DREAMS.DRAIN", &org, "0", "NOQUIET"], "WRONGTYPE");
}

#[test]
fn non_numeric_counter_fields_are_refused() {
    let server = Server::start();
    let mut con = server.connect();
    for field in ["memories", "edges", "last_success", "settled_generation"] {
        for bad in ["abc", "", "12x", "1.5", " 7", "99999999999999999999"] {
            let org = tenant("not-numeric");
            let keys = Keys::new(&org);
            let payload = busy(&mut con, &org);
            let _: () = redis::cmd("HSET").arg(keys.counters("p", 1)).arg(field).arg(bad).query(&mut con).unwrap();
            for (name, args) in every_command(&org, &payload) {
                if ["record", "settle", "ack", "counters"].contains(&name) {
                    refused(&mut con, &args, "ERR Dreams counter metadata is not numeric");
                }
            }
            // Commands that do not read the region still work.
            assert_eq!(Dreams::new(&mut con, &org).len(), (1, 0, 1));
        }
    }
}

#[test]
fn a_pending_field_may_hold_any_bytes() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("pending-bytes");
    let keys = Keys::new(&org);
    let _: () = redis::cmd("HSET")
        .arg(keys.counters("p", 1))
        .arg("pending")
        .arg(b"\xff\x00junk".as_slice())
        .query(&mut con)
        .unwrap();
    // The pending fire is somewhere in the organization's queue (here in
    // flight): with every queue key gone, RECORD would take the mark for
    // one whose queue was evicted, clear it and fire (dreams_eviction.rs).
    let _: () =
        redis::cmd("RPUSH").arg(&keys.processing).arg("the pending fire, being worked on").query(&mut con).unwrap();
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.record("p", 1, 9, 9, &strs(&trigger(1, 1, 0, 0))).0, "accumulated", "a fire is pending");
}

#[test]
fn a_payload_of_another_organization_is_rejected_by_ack() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("foreign-ack");
    let keys = Keys::new(&org);
    busy(&mut con, &org);
    let foreign = r#"{"region":{"org":"other-org","project":"p","memory_type":1},"fired_by":"n","fired_at":{"memories_since_last_cycle":3,"edges_since_last_cycle":0,"seconds_since_last_cycle":0},"fire_id":"x"}"#;
    let _: () = redis::cmd("RPUSH").arg(&keys.processing).arg(foreign).query(&mut con).unwrap();
    for result in ["SUCCESS", "FAILURE"] {
        let args: Vec<&[u8]> = vec![b"DREAMS.ACK", org.as_bytes(), foreign.as_bytes(), result.as_bytes()];
        refused(&mut con, &args, "ERR Dreams queue for organization");
    }
    let error = error_of(&mut con, &["DREAMS.ACK", &org, foreign, "SUCCESS"]);
    assert!(error.contains("other-org"), "{error}");
}

#[test]
fn ack_refuses_payloads_that_are_not_fire_messages() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("ack-garbage");
    busy(&mut con, &org);
    let o = org.as_bytes();
    let nested = "[".repeat(10_000);
    let huge_number =
        format!(r#"{{"region":{{"org":"{org}","project":"p","memory_type":4294967296}},"fired_by":"n"}}"#);
    let negative = format!(r#"{{"region":{{"org":"{org}","project":"p","memory_type":-1}},"fired_by":"n"}}"#);
    let overflowing = format!(
        r#"{{"region":{{"org":"{org}","project":"p","memory_type":1}},"fired_by":"n","fired_at":{{"memories_since_last_cycle":4294967296,"edges_since_last_cycle":0,"seconds_since_last_cycle":0}},"fire_id":"x"}}"#
    );
    let payloads: Vec<&[u8]> = vec![
        b"not json",
        b"",
        b"{}",
        b"null",
        b"\xff\xfe",
        b"{\"region\":{\"org\":1}}",
        nested.as_bytes(),
        huge_number.as_bytes(),
        negative.as_bytes(),
        overflowing.as_bytes(),
    ];
    for payload in payloads {
        refused(&mut con, &[b"DREAMS.ACK", o, payload, b"SUCCESS"], "ERR payload is not a Dreams fire message");
    }
}

#[test]
fn bad_organizations_are_refused_by_every_command() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("bad-org");
    let payload = busy(&mut con, &org);
    for bad in [&b""[..], b"a{b", b"a}b", b"{x}", b"\xff\xfe"] {
        for (_, mut args) in every_command(&org, &payload) {
            args[1] = bad;
            refused(&mut con, &args, "ERR organization must");
        }
    }
}

#[test]
fn bad_fire_arguments() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("bad-fire");
    busy(&mut con, &org);
    let o = org.as_str();
    refused_str(&mut con, &["DREAMS.FIRE", o, "p"], "ERR wrong number of arguments");
    for memory_type in ["-1", "abc", "4294967296", "", "1.0", "+1"] {
        refused_str(&mut con, &["DREAMS.FIRE", o, "p", memory_type], "ERR memory type must be an integer");
    }
    refused(&mut con, &[b"DREAMS.FIRE", o.as_bytes(), b"\xff", b"1"], "ERR project must be valid UTF-8");
    refused_str(&mut con, &["DREAMS.FIRE", o, "p", "1", "FOO"], "ERR unknown option 'FOO'");
    refused_str(&mut con, &["DREAMS.FIRE", o, "p", "1", "NODE"], "ERR missing node id");
    refused_str(&mut con, &["DREAMS.FIRE", o, "p", "1", "NODE", "a", "NODE", "b"], "ERR NODE given more than once");
}

#[test]
fn bad_record_arguments() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("bad-record");
    busy(&mut con, &org);
    let base = ["DREAMS.RECORD", org.as_str(), "p", "1"];
    let with = |tail: &[&'static str]| -> Vec<String> {
        base.iter().map(|s| s.to_string()).chain(tail.iter().map(|s| s.to_string())).collect()
    };
    let cases: Vec<(Vec<&'static str>, &str)> = vec![
        (vec!["-1", "0"], "ERR memories must be an integer"),
        (vec!["x", "0"], "ERR memories must be an integer"),
        (vec!["4294967296", "0"], "ERR memories must be an integer"),
        (vec!["0", "-1"], "ERR edges must be an integer"),
        (vec!["0", "1e3"], "ERR edges must be an integer"),
        (vec!["1", "1", "EVENT", "", "GENERATION", "1"], "ERR Dreams write event id must not be empty"),
        (vec!["1", "1", "EVENT", "e", "GENERATION", "0"], "ERR Dreams delivery generation must be positive"),
        (vec!["1", "1", "EVENT", "e"], "ERR EVENT <event-id> must be followed by GENERATION"),
        (vec!["1", "1", "EVENT", "e", "NODE", "n"], "ERR EVENT <event-id> must be followed by GENERATION"),
        (vec!["1", "1", "EVENT", "e", "GENERATION"], "ERR missing generation"),
        (
            vec!["1", "1", "EVENT", "e", "GENERATION", "-1"],
            "ERR Dreams delivery generation must be positive (an integer from 1 to 18446744073709551615)",
        ),
        (
            vec!["1", "1", "EVENT", "e", "GENERATION", "abc"],
            "ERR Dreams delivery generation must be positive (an integer from 1 to 18446744073709551615)",
        ),
        (
            vec!["1", "1", "EVENT", "e", "GENERATION", "18446744073709551616"],
            "ERR Dreams delivery generation must be positive (an integer from 1 to 18446744073709551615)",
        ),
        (vec!["1", "1", "GENERATION", "3"], "ERR GENERATION needs EVENT"),
        (
            vec!["1", "1", "EVENT", "e", "GENERATION", "1", "EVENT", "f", "GENERATION", "2"],
            "ERR EVENT given more than once",
        ),
        (vec!["1", "1", "TRIGGER", "1", "2", "3"], "ERR missing age floor"),
        (vec!["1", "1", "TRIGGER", "a", "2", "3", "4"], "ERR memory threshold must be an integer"),
        (vec!["1", "1", "TRIGGER", "1", "2", "-3", "4"], "ERR min interval (seconds) must be an integer"),
        (
            vec!["1", "1", "TRIGGER", "1", "2", "3", "18446744073709551616"],
            "ERR age floor (seconds) must be an integer",
        ),
        (vec!["1", "1", "TRIGGER", "1", "4294967296", "3", "4"], "ERR edge threshold must be an integer"),
        (
            vec!["1", "1", "TRIGGER", "1", "1", "1", "1", "TRIGGER", "1", "1", "1", "1"],
            "ERR TRIGGER given more than once",
        ),
        (vec!["1", "1", "FOO"], "ERR unknown option 'FOO'"),
        (vec!["1", "1", "NODE", "a", "NODE", "b"], "ERR NODE given more than once"),
    ];
    for (tail, prefix) in cases {
        let args = with(&tail);
        refused_str(&mut con, &strs(&args), prefix);
    }
    refused_str(&mut con, &["DREAMS.RECORD", &org, "p", "1", "1"], "ERR wrong number of arguments");
}

#[test]
fn bad_settle_arguments() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("bad-settle");
    busy(&mut con, &org);
    let o = org.as_str();
    refused_str(&mut con, &["DREAMS.SETTLE", o, "p", "1", "", "1"], "ERR Dreams write event id must not be empty");
    refused_str(
        &mut con,
        &["DREAMS.SETTLE", o, "p", "1", "e-1", "0"],
        "ERR Dreams delivery generation must be positive",
    );
    refused_str(
        &mut con,
        &["DREAMS.SETTLE", o, "p", "1", "e-1", "-2"],
        "ERR Dreams delivery generation must be positive (an integer from 1 to 18446744073709551615)",
    );
    refused_str(
        &mut con,
        &["DREAMS.SETTLE", o, "p", "1", "e-1", "x"],
        "ERR Dreams delivery generation must be positive (an integer from 1 to 18446744073709551615)",
    );
    refused_str(&mut con, &["DREAMS.SETTLE", o, "p", "1", "e-1", "2", "KEEP"], "ERR unknown option 'KEEP'");
    refused_str(&mut con, &["DREAMS.SETTLE", o, "p", "1", "e-1"], "ERR wrong number of arguments");
}

#[test]
fn bad_drain_arguments() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("bad-drain");
    busy(&mut con, &org);
    let o = org.as_str();
    for timeout in ["-1", "-0.5", "abc", "nan", "inf", "", "1e300", "0x10", "1,5"] {
        refused_str(&mut con, &["DREAMS.DRAIN", o, timeout], "ERR timeout");
    }
    for window in ["2-06", "24-06", "02-24", "02-02", "0206", "ab-cd", "02-6", "02-06-08", "-1-06", "+1-06", ""] {
        refused_str(&mut con, &["DREAMS.DRAIN", o, "0", "QUIET", window], "ERR invalid quiet window");
    }
    for offset in ["1440", "-1440", "abc", "1.5", "99999999999999999999"] {
        refused_str(&mut con, &["DREAMS.DRAIN", o, "0", "QUIET", "02-06", "OFFSET", offset], "ERR UTC offset");
    }
    refused_str(&mut con, &["DREAMS.DRAIN", o, "0", "QUIET"], "ERR missing quiet window");
    refused_str(&mut con, &["DREAMS.DRAIN", o, "0", "QUIET", "02-06", "OFFSET"], "ERR missing UTC offset");
    refused_str(
        &mut con,
        &["DREAMS.DRAIN", o, "0", "QUIET", "02-06", "QUIET", "03-06"],
        "ERR QUIET given more than once",
    );
    refused_str(&mut con, &["DREAMS.DRAIN", o, "0", "OFFSET", "1", "OFFSET", "2"], "ERR OFFSET given more than once");
    refused_str(&mut con, &["DREAMS.DRAIN", o, "0", "NOQUIET", "QUIET", "02-06"], "ERR NOQUIET cannot be combined");
    refused_str(&mut con, &["DREAMS.DRAIN", o, "0", "QUIET", "02-06", "NOQUIET"], "ERR NOQUIET cannot be combined");
    refused_str(&mut con, &["DREAMS.DRAIN", o, "0", "NOQUIET", "OFFSET", "60"], "ERR NOQUIET cannot be combined");
    refused_str(&mut con, &["DREAMS.DRAIN", o, "0", "BLOCK"], "ERR unknown option 'BLOCK'");
    refused_str(&mut con, &["DREAMS.DRAIN", o], "ERR wrong number of arguments");
    // The edges of the ranges are accepted.
    let mut dreams = Dreams::new(&mut con, &org);
    assert!(dreams.drain("0.01", &["QUIET", "23-00", "OFFSET", "1439"]).is_some());
    assert!(dreams.drain("0.01", &["QUIET", "00-23", "OFFSET", "-1439"]).is_none());
}

#[test]
fn bad_ack_arguments() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("bad-ack");
    let payload = busy(&mut con, &org);
    let o = org.as_bytes();
    let p = payload.as_slice();
    refused(&mut con, &[b"DREAMS.ACK", o, p, b"MAYBE"], "ERR the result must be SUCCESS or FAILURE");
    refused(&mut con, &[b"DREAMS.ACK", o, p, b"SUCCESS", b"FOO"], "ERR unknown option 'FOO'");
    refused(&mut con, &[b"DREAMS.ACK", o, p, b"SUCCESS", b"TRIGGER", b"1"], "ERR missing edge threshold");
    refused(&mut con, &[b"DREAMS.ACK", o, p, b"SUCCESS", b"NODE"], "ERR missing node id");
    refused(
        &mut con,
        &[b"DREAMS.ACK", o, p, b"SUCCESS", b"NODE", b"a", b"NODE", b"b"],
        "ERR NODE given more than once",
    );
    refused(&mut con, &[b"DREAMS.ACK", o, p], "ERR wrong number of arguments");
    // Options are case-insensitive, and the result word too.
    let mut dreams = Dreams::new(&mut con, &org);
    assert_eq!(dreams.ack(&payload, "failure", &["node", "x"]).0, "requeued");
}

#[test]
fn extra_arguments_to_len_recover_and_counters_are_refused() {
    let server = Server::start();
    let mut con = server.connect();
    let org = tenant("bad-extra");
    busy(&mut con, &org);
    refused_str(&mut con, &["DREAMS.LEN", &org, "x"], "ERR wrong number of arguments");
    refused_str(&mut con, &["DREAMS.RECOVER", &org, "x"], "ERR wrong number of arguments");
    refused_str(&mut con, &["DREAMS.COUNTERS", &org, "p", "1", "x"], "ERR wrong number of arguments");
    refused_str(&mut con, &["DREAMS.COUNTERS", &org, "p", "x"], "ERR memory type must be an integer");
}
