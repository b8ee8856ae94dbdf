//! [`settles`](super::settles) over arbitrary values: every reply type
//! reads any value without panicking, and writes what it read back to a
//! value it reads the same (the fuzz target `replies` does the same from
//! fuzzed bytes).

use super::{settles, Value};
use crate::reply::law::{bytes, signed};
use crate::test_random::Random;

/// An arbitrary value, words and nesting among what replies hold.
fn value(random: &mut Random, depth: u32) -> Value {
    let words = ["OK", "queued", "accumulated", "stale", "acknowledged", "QUEUED"];
    let names = ["memories", "concurrency", "in_flight", "paused", "id", "ready"];
    let leaf = random.below(if depth >= 3 { 5 } else { 7 });
    match leaf {
        0 => Value::Status((*random.pick(&words)).into()),
        1 if random.percent(50) => Value::Bulk(random.pick(&names).as_bytes().to_vec()),
        1 => Value::Bulk(bytes(random)),
        2 => Value::Integer(match random.below(3) {
            0 => random.below(3) as i64 - 1,
            _ => signed(random),
        }),
        3 => Value::Nil,
        4 => Value::NilArray,
        5 => Value::Array((0..random.below(5)).map(|_| value(random, depth + 1)).collect()),
        _ => Value::Map((0..random.below(4)).map(|_| (value(random, depth + 1), value(random, depth + 1))).collect()),
    }
}

#[test]
fn every_reply_type_settles_on_arbitrary_values() {
    let mut random = Random::new(46);
    let mut read = 0;
    for _ in 0..20_000 {
        let value = value(&mut random, 0);
        read += settles(&value).unwrap_or_else(|broken| panic!("{broken}"));
    }
    // The generator reaches the types, not only their refusals.
    assert!(read > 5_000, "only {read} reads");
}

#[test]
fn the_shapes_replies_share_are_read_by_several_types() {
    assert!(settles(&Value::Integer(1)).unwrap() >= 3, "Flag, Count, AgentIncr, Recover");
    assert!(settles(&Value::Status("OK".into())).unwrap() >= 2, "Done, DryRun");
    assert_eq!(settles(&Value::Integer(-1)), Ok(1), "AgentIncr alone");
}
