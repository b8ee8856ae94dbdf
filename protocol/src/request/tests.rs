//! The law of every request type over random arguments: what `parse`
//! accepts, `encode` writes back as the same request.

use super::round_trip;
use crate::commands::ALL;
use crate::test_random::Random;

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
    b"RELIABLE",
    b"ROUNDS",
    b"TTL",
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
    for (index, words) in every_command().iter().enumerate() {
        let name = words.join(" ");
        assert!(round_trip(words, &[]).is_some(), "{name} has no request type");
        // A stream of its own per command (adding a command or a word
        // shifts no other command's argv), 20,000 argv, and more (up to
        // 400,000) until one is accepted: a command of five numbers and
        // names (DREAMS.RECORD) takes about one in 10,000.
        let mut random = Random::new(0x44 + index as u64);
        let mut accepted = 0;
        for tried in 0..400_000 {
            if tried >= 20_000 && accepted > 0 {
                break;
            }
            let len = random.below(9);
            let argv: Vec<&[u8]> = (0..len).map(|_| ATOMS[random.below(ATOMS.len())]).collect();
            match round_trip(words, &argv) {
                Some(Ok(true)) => accepted += 1,
                Some(Ok(false)) => {}
                Some(Err(broken)) => panic!("{broken}"),
                None => unreachable!(),
            }
        }
        // Random words must reach the accepting paths, or the law is untested.
        assert!(accepted > 0, "{name}: no random argv was accepted");
    }
}
