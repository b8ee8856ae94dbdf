//! The round-trip law on arguments that reach each option of the
//! `DREAMS.*` requests (random argv rarely reach the longer ones: a rate,
//! an `ACK` clause with a trigger, quiet hours with an offset).

use crate::request::round_trip;

#[test]
fn every_option_encodes_back_to_itself() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["DREAMS.FIRE"], &["acme", "web", "3", "node", "n-1"]),
        (&["DREAMS.ACK"], &["acme", "payload", "failure", "TRIGGER", "1", "2", "3", "4", "NODE", "n"]),
        (&["DREAMS.DRAIN"], &["acme", "1.5", "QUIET", "22-06", "OFFSET", "-60", "LEASE", "2.5", "COUNT", "7"]),
        (
            &["DREAMS.DRAIN"],
            &["acme", "0", "noquiet", "ACK", "p", "SUCCESS", "NODE", "n", "TRIGGER", "1", "2", "3", "4"],
        ),
        (&["DREAMS.DRAIN"], &["acme", "0.0071", "OFFSET", "30"]),
        (&["DREAMS.SETTLE"], &["acme", "web", "3", "e-1", "18446744073709551615", "retain"]),
        (&["DREAMS.COUNTERS"], &["acme", "web", "3"]),
        (&["DREAMS.EXTEND"], &["acme", "payload", "0.000001"]),
        (&["DREAMS.INFLIGHT"], &["acme", "limit", "5", "9223372036854775807"]),
        (&["DREAMS.REDRIVE"], &["acme", "COUNT", "10000"]),
        (&["DREAMS.RECOVER"], &["acme"]),
        (&["DREAMS.LEN"], &["acme"]),
        (&["DREAMS.STATS"], &["acme"]),
        (&["DREAMS.PAUSE"], &["acme"]),
        (&["DREAMS.RESUME"], &["acme"]),
        (&["DREAMS.LIMIT", "SET"], &["acme", "RATE", "30", "3600", "CONCURRENCY", "2"]),
        (&["DREAMS.LIMIT", "SET"], &["acme", "CONCURRENCY", "none", "RATE", "NONE"]),
        (&["DREAMS.LIMIT", "GET"], &["acme"]),
        (&["DREAMS.LIMIT", "CLEAR"], &["acme"]),
        (&["DREAMTOWN.DRYRUN"], &["alice", "DREAMS.FIRE", "acme", "web", "3"]),
    ];
    for (words, argv) in cases {
        let argv: Vec<&[u8]> = argv.iter().map(|arg| arg.as_bytes()).collect();
        assert_eq!(round_trip(words, &argv), Some(Ok(true)), "{words:?} {argv:?}");
    }
}
