//! The law of every request type over random arguments: what `parse`
//! accepts, `encode` writes back as the same request.

use super::round_trip;
use crate::commands::ALL;
use crate::test_random::Random;

/// Commands whose request type is still to be written (issue 44).
const NOT_YET: &[&str] = &[
    "TOWN.SEND",
    "TOWN.RECV",
    "TOWN.ACK",
    "TOWN.REQUEUE",
    "TOWN.EXTEND",
    "TOWN.LEN",
    "TOWN.PEEK",
    "TOWN.RECLAIM",
    "TOWN.BROADCAST",
    "TOWN.RESET",
    "TOWN.STATS",
    "TOWN.AGENT SET",
    "TOWN.AGENT GET",
    "TOWN.AGENT DEL",
    "TOWN.AGENT LIST",
    "TOWN.AGENT BYNAME",
    "TOWN.AGENT INCR",
    "TOWN.AGENT HEARTBEAT",
    "TOWN.TASK SET",
    "TOWN.TASK GET",
    "TOWN.TASK DEL",
    "TOWN.TASK LIST",
    "TOWN.ACTIVITY LOG",
    "TOWN.ACTIVITY GET",
    "TOWN.BACKLOG PUSH",
    "TOWN.BACKLOG POP",
    "TOWN.BACKLOG LIST",
    "TOWN.BACKLOG LEN",
    "TOWN.BACKLOG REMOVE",
    "TOWN.STOP REQUEST",
    "TOWN.STOP CHECK",
    "TOWN.STOP CLEAR",
];

/// The words of every command and subcommand in the name table.
fn every_command() -> Vec<Vec<&'static str>> {
    let mut all = Vec::new();
    for command in ALL {
        if command.subcommands.is_empty() {
            all.push(vec![command.name]);
        }
        for sub in command.subcommands {
            all.push(vec![command.name, *sub]);
        }
    }
    all
}

/// Arguments that commands take: the words of their options, numbers at
/// and around the edges of their ranges, names with and without the
/// characters tenants refuse.
const ATOMS: &[&[u8]] = &[
    b"org",
    b"town",
    b"agent-1",
    b"p",
    b"",
    b"{x}",
    b"\xff",
    b"0",
    b"1",
    b"7",
    b"42",
    b"-1",
    b"4294967295",
    b"4294967296",
    b"9223372036854775807",
    b"9223372036854775808",
    b"18446744073709551615",
    b"0.5",
    b"1e3",
    b"2.5",
    b"NODE",
    b"EVENT",
    b"GENERATION",
    b"TRIGGER",
    b"COUNT",
    b"LEASE",
    b"ACK",
    b"NOQUIET",
    b"BLOCK",
    b"node",
    b"event",
    b"count",
    b"lease",
    b"FORCE",
    b"ALL",
    b"URGENT",
    b"PRIORITY",
    b"high",
    b"low",
    b"normal",
    b"WITHSCORES",
    b"LIMIT",
    b"SET",
    b"GET",
    b"CLEAR",
    b"MATCH",
    b"DRYRUN",
    b"REQUEUE",
    b"SUCCESS",
    b"FAILURE",
    b"QUIET",
    b"OFFSET",
    b"22-06",
    b"-60",
    b"RETAIN",
    b"CONCURRENCY",
    b"RATE",
    b"NONE",
];

#[test]
fn every_accepted_request_encodes_back_to_itself() {
    let mut random = Random::new(0x44);
    let mut accepted = vec![0usize; every_command().len()];
    for (index, words) in every_command().iter().enumerate() {
        let name = words.join(" ");
        if NOT_YET.contains(&name.as_str()) {
            assert!(round_trip(words, &[]).is_none(), "{name} has a request type: take it off NOT_YET");
            continue;
        }
        assert!(round_trip(words, &[]).is_some(), "{name} has no request type");
        for _ in 0..20_000 {
            let len = random.below(9);
            let argv: Vec<&[u8]> = (0..len).map(|_| ATOMS[random.below(ATOMS.len())]).collect();
            match round_trip(words, &argv) {
                Some(Ok(true)) => accepted[index] += 1,
                Some(Ok(false)) => {}
                Some(Err(broken)) => panic!("{broken}"),
                None => unreachable!(),
            }
        }
    }
    // Random words must reach the accepting paths, or the law is untested.
    for (words, accepted) in every_command().iter().zip(&accepted) {
        let name = words.join(" ");
        if !NOT_YET.contains(&name.as_str()) {
            assert!(*accepted > 0, "{name}: no random argv was accepted");
        }
    }
}
