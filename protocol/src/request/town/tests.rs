//! The law of the town requests on argv that reach every option (random
//! argv from `request::tests` seldom combine them all), and the errors
//! their parse steps keep.

use crate::request::round_trip;

/// `words` then `args` split on spaces, through [`round_trip`]; whether
/// the parse accepted it.
fn accepted(words: &[&str], args: &str) -> bool {
    let argv: Vec<&[u8]> = args.split(' ').map(str::as_bytes).collect();
    match round_trip(words, &argv) {
        Some(Ok(accepted)) => accepted,
        Some(Err(broken)) => panic!("{broken}"),
        None => panic!("{words:?} has no request type"),
    }
}

#[test]
fn every_option_encodes_back_to_itself() {
    let cases: &[(&str, &str)] = &[
        ("TOWN.SEND", "t {\"to\":\"a\"} urgent"),
        ("TOWN.RECV", "t a block 2.007 count 3 urgent reliable lease 2.5 ack m-1"),
        ("TOWN.RECV", "t a ACK ACK RELIABLE BLOCK 1e3 LEASE 0.001"),
        ("TOWN.RECV", "t a BLOCK 9.223e15 COUNT 9223372036854775807"),
        ("TOWN.ACK", "t a m-1 m-2 m-1"),
        ("TOWN.REQUEUE", "t a"),
        ("TOWN.EXTEND", "t a m-1 0.1"),
        ("TOWN.LEN", "t a"),
        ("TOWN.PEEK", "t a 9223372036854775807"),
        ("TOWN.RECLAIM", "t a b"),
        ("TOWN.BROADCAST", "t {}"),
        ("TOWN.RESET", "t agents"),
        ("TOWN.RESET", "t"),
        ("TOWN.STATS", "t"),
        ("TOWN.STATS", "t a"),
    ];
    for (command, args) in cases {
        assert!(accepted(&[command], args), "{command} {args}");
    }
}

#[test]
fn refused_as_before() {
    let cases: &[(&str, &str)] = &[
        ("TOWN.RECV", "t a ACK m"),
        ("TOWN.RECV", "t a LEASE 5"),
        ("TOWN.RECV", "t a COUNT 0"),
        ("TOWN.RECV", "t a BLOCK 1 BLOCK 1"),
        ("TOWN.RECV", "t  a"),
        ("TOWN.SEND", "t m URGENT x"),
        ("TOWN.RECLAIM", "t a a"),
        ("TOWN.RESET", "t AGENTS x"),
        ("TOWN.STATS", "t a b"),
        ("TOWN.EXTEND", "t a m 0"),
        ("TOWN.ACK", "t a"),
    ];
    for (command, args) in cases {
        assert!(!accepted(&[command], args), "{command} {args}");
    }
}
