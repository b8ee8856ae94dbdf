//! Reply types as the native analogues reply, read through a raw RESP
//! reader (`common::RawConnection`: a client library folds `$-1`, `*-1`
//! and `_` into one nil, and a map into what it likes), each compared
//! with the native command in the same run, in RESP2 and RESP3 (issue 43):
//!
//! * field/value replies (`DREAMS.COUNTERS`, `TOWN.AGENT GET/BYNAME/LIST`,
//!   `TOWN.TASK GET/LIST`, `DREAMS.STATS`, `TOWN.STATS`) are what
//!   `HGETALL` / `CONFIG GET` are: a map in RESP3, a flat array in RESP2;
//! * the nil of a timeout, or of a blocking call inside `MULTI`, is the
//!   analogue's: `DREAMS.DRAIN` (one item) as `BLMOVE`, `DREAMS.DRAIN ...
//!   COUNT` as `BLMPOP`, `TOWN.RECV ... BLOCK` as `BLPOP` (and
//!   `XREADGROUP`). In RESP2 every one of them times out with `*-1`, and
//!   inside `MULTI` `BLMOVE` alone answers `$-1` (Redis 7.0 to 8.2,
//!   Valkey 8 and 9 alike).
//! * a range error states one range, the same whatever the bad value.

use crate::common;
use crate::town_support;

use common::{tenant, Frame, RawConnection, Server};
use town_support::message;

/// The shape of `args`' reply (types only, see `Frame::shape`).
fn shape(con: &mut RawConnection, args: &[&str]) -> String {
    let reply = con.call(args);
    assert!(!matches!(reply, Frame::Error(_)), "{args:?}: {reply:?}");
    reply.shape()
}

/// The map (RESP3) or flat array (RESP2) shape of `n` bulk pairs, and of
/// one pair.
fn record_shape(protocol: u8, n: usize) -> String {
    let pairs = vec!["$:$"; n].join(",");
    let flat = vec!["$,$"; n].join(",");
    match protocol {
        3 => format!("%{{{pairs}}}"),
        _ => format!("*[{flat}]"),
    }
}

#[test]
fn field_value_replies_are_maps_in_resp3_and_flat_arrays_in_resp2() {
    let server = Server::start();
    let town = tenant("maps");
    let org = tenant("maps-org");
    let mut setup = RawConnection::connect(server.port);
    let agent_fields = ["name", "w", "state", "idle"];
    let mut agent = vec!["TOWN.AGENT", "SET", &town, "a1"];
    agent.extend(agent_fields);
    setup.call(&agent);
    setup.call(&["TOWN.TASK", "SET", &town, "t1", "state", "open", "title", "x"]);
    setup.call(&["HSET", "native-hash", "name", "w", "state", "idle"]);
    setup.call(&["DREAMS.RECORD", &org, "p", "1", "1", "1"]);
    for protocol in [2u8, 3] {
        let mut con = RawConnection::with_protocol(server.port, protocol);
        // The native analogues, in this protocol.
        let hgetall = shape(&mut con, &["HGETALL", "native-hash"]);
        assert_eq!(hgetall, record_shape(protocol, 2), "HGETALL in RESP{protocol}");
        let missing = shape(&mut con, &["HGETALL", "no-such-hash"]);
        let config_get = con.call(&["CONFIG", "GET", "maxmemory"]).shape();
        assert_eq!(config_get, record_shape(protocol, 1), "CONFIG GET in RESP{protocol}");

        for args in [
            vec!["TOWN.AGENT", "GET", &town, "a1"],
            vec!["TOWN.AGENT", "BYNAME", &town, "w"],
            vec!["TOWN.TASK", "GET", &town, "t1"],
        ] {
            assert_eq!(shape(&mut con, &args), hgetall, "{args:?} in RESP{protocol}");
        }
        // Nothing there: what HGETALL of a missing key replies.
        for args in [
            vec!["TOWN.AGENT", "GET", &town, "nobody"],
            vec!["TOWN.AGENT", "BYNAME", &town, "nobody"],
            vec!["TOWN.TASK", "GET", &town, "nothing"],
            vec!["DREAMS.COUNTERS", "other-org", "p", "1"],
        ] {
            assert_eq!(shape(&mut con, &args), missing, "{args:?} in RESP{protocol}");
        }
        // The LIST forms: an array of records, each as GET replies it.
        assert_eq!(shape(&mut con, &["TOWN.AGENT", "LIST", &town]), format!("*[{hgetall}]"));
        assert_eq!(shape(&mut con, &["TOWN.TASK", "LIST", &town]), format!("*[{hgetall}]"));
        // Counters and STATS: field/value pairs of any values, the
        // container as CONFIG GET's.
        for args in [
            vec!["DREAMS.COUNTERS", &org, "p", "1"],
            vec!["DREAMS.STATS", &org],
            vec!["TOWN.STATS", &town],
            vec!["TOWN.STATS", &town, "a1"],
        ] {
            let reply = con.call(&args);
            let container = &reply.shape()[..1];
            assert_eq!(container, &config_get[..1], "{args:?} in RESP{protocol}: {reply:?}");
            assert!(reply.pairs().is_some_and(|pairs| !pairs.is_empty()), "{args:?}: {reply:?}");
        }
    }
}

/// The nil `args` answer on a short timeout (or inside MULTI when
/// `in_multi`), as a shape.
fn nil_of(con: &mut RawConnection, args: &[&str], in_multi: bool) -> String {
    if !in_multi {
        return shape(con, args);
    }
    assert_eq!(con.call(&["MULTI"]), Frame::Simple("OK".into()));
    assert_eq!(con.call(args), Frame::Simple("QUEUED".into()), "{args:?}");
    match con.call(&["EXEC"]) {
        Frame::Array(mut replies) if replies.len() == 1 => replies.remove(0).shape(),
        other => panic!("EXEC of {args:?}: {other:?}"),
    }
}

#[test]
fn timeouts_answer_the_nil_of_their_native_analogue() {
    let server = Server::start();
    let org = tenant("nil-org");
    let town = tenant("nil-town");
    let mut setup = RawConnection::connect(server.port);
    setup.call(&["XGROUP", "CREATE", "native-stream", "g", "$", "MKSTREAM"]);
    let timeout = "0.05";
    for protocol in [2u8, 3] {
        let mut con = RawConnection::with_protocol(server.port, protocol);
        for in_multi in [false, true] {
            let blmove = nil_of(&mut con, &["BLMOVE", "native-a", "native-b", "LEFT", "RIGHT", timeout], in_multi);
            let blmpop = nil_of(&mut con, &["BLMPOP", timeout, "1", "native-a", "LEFT", "COUNT", "2"], in_multi);
            let blpop = nil_of(&mut con, &["BLPOP", "native-a", timeout], in_multi);
            let case = format!("RESP{protocol}, in MULTI: {in_multi}");
            assert_eq!(nil_of(&mut con, &["DREAMS.DRAIN", &org, timeout, "NOQUIET"], in_multi), blmove, "{case}");
            assert_eq!(
                nil_of(&mut con, &["DREAMS.DRAIN", &org, timeout, "NOQUIET", "COUNT", "2"], in_multi),
                blmpop,
                "{case}"
            );
            assert_eq!(nil_of(&mut con, &["TOWN.RECV", &town, "a1", "BLOCK", timeout], in_multi), blpop, "{case}");
            assert_eq!(
                nil_of(&mut con, &["TOWN.RECV", &town, "a1", "BLOCK", timeout, "COUNT", "5", "RELIABLE"], in_multi),
                blpop,
                "{case}"
            );
            if !in_multi {
                let ms = "50";
                let xread = shape(
                    &mut con,
                    &["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "BLOCK", ms, "STREAMS", "native-stream", ">"],
                );
                assert_eq!(xread, blpop, "XREADGROUP, {case}");
            }
            if !in_multi {
                // A one-trip call's timeout: the acknowledgement's reply,
                // then the nil of the half that timed out.
                setup.call(&["DREAMS.FIRE", &org, "p", "1"]);
                let payload = setup.call(&["DREAMS.DRAIN", &org, "0", "NOQUIET"]).text().expect("a drained fire");
                let drain_ack = con.call(&["DREAMS.DRAIN", &org, timeout, "NOQUIET", "ACK", &payload, "SUCCESS"]);
                match drain_ack {
                    Frame::Array(items) if items.len() == 2 => assert_eq!(items[1].shape(), blmove, "{case}"),
                    other => panic!("DRAIN ... ACK: {other:?}"),
                }
                let recv_ack = con.call(&["TOWN.RECV", &town, "a1", "BLOCK", timeout, "RELIABLE", "ACK", "gone"]);
                match recv_ack {
                    Frame::Array(items) if items.len() == 2 => assert_eq!(items[1].shape(), blpop, "{case}"),
                    other => panic!("RECV ... ACK: {other:?}"),
                }
            }
        }
        // Without BLOCK a receive with nothing replies an empty array, and
        // a non-blocking drain with work replies as before.
        assert_eq!(shape(&mut con, &["TOWN.RECV", &town, "a1"]), "*[]");
        setup.call(&["TOWN.SEND", &town, &message("m1", "a1", "normal")]);
        assert_eq!(shape(&mut con, &["TOWN.RECV", &town, "a1", "BLOCK", timeout]), "*[$]");
    }
}

/// The error `args` answer (the text after `ERR`).
fn error(con: &mut RawConnection, args: &[&str]) -> String {
    match con.call(args) {
        Frame::Error(text) => text,
        other => panic!("{args:?} should fail: {other:?}"),
    }
}

#[test]
fn a_range_error_states_one_range_whatever_the_bad_value() {
    let server = Server::start();
    let mut con = RawConnection::connect(server.port);
    let org = tenant("ranges");
    let town = tenant("ranges-town");
    let too_big = "18446744073709551616";
    // (name, the call with `{}` where the bad value goes, bad values).
    let cases: [(&str, Vec<&str>, &[&str]); 6] = [
        ("DRAIN COUNT", vec!["DREAMS.DRAIN", &org, "0", "COUNT", "{}"], &["0", "1001", "-1", "x", too_big]),
        ("DRAIN OFFSET", vec!["DREAMS.DRAIN", &org, "0", "QUIET", "01-02", "OFFSET", "{}"], &["-1440", "1440", "x"]),
        ("RECV COUNT", vec!["TOWN.RECV", &town, "a", "COUNT", "{}"], &["0", "-1", "x", "9223372036854775808"]),
        ("STOP TTL", vec!["TOWN.STOP", "REQUEST", &town, "a", "TTL", "{}"], &["0", "-1", "x", "99999999999999"]),
        (
            "RECORD GENERATION",
            vec!["DREAMS.RECORD", &org, "p", "1", "1", "1", "EVENT", "e", "GENERATION", "{}"],
            &["0", "-1", "x", too_big],
        ),
        ("SETTLE generation", vec!["DREAMS.SETTLE", &org, "p", "1", "e", "{}"], &["0", "-1", "x", too_big]),
    ];
    for (name, call, bad) in cases {
        let errors: Vec<String> = bad
            .iter()
            .map(|value| {
                let args: Vec<&str> = call.iter().map(|arg| if *arg == "{}" { *value } else { *arg }).collect();
                error(&mut con, &args)
            })
            .collect();
        assert!(errors.iter().all(|e| *e == errors[0]), "{name}: one message for every bad value: {errors:?}");
        let ranges = errors[0].matches(" from ").count();
        assert_eq!(ranges, 1, "{name}: one range stated: {}", errors[0]);
    }
}
