//! The law of every `DREAMS.*` reply over generated values:
//! `decode(encode(x)) == x`, from RESP3's maps and RESP2's flat arrays.

use super::*;
use crate::reply::law::{bytes, count, holds, signed};
use crate::test_random::Random;

fn optional(random: &mut Random) -> Option<u64> {
    random.percent(50).then(|| count(random))
}

fn ack(random: &mut Random) -> Ack {
    Ack { outcome: *random.pick(&AckOutcome::ALL), memories: signed(random), edges: signed(random) }
}

fn drain(random: &mut Random) -> Drain<Vec<u8>> {
    match random.below(3) {
        0 => Drain::Fire(bytes(random)),
        1 => Drain::Nothing,
        _ => Drain::TimedOut,
    }
}

fn batch(random: &mut Random) -> DrainBatch<Vec<u8>> {
    DrainBatch { payloads: (0..random.below(5)).map(|_| bytes(random)).collect() }
}

#[test]
fn every_reply_decodes_to_what_was_encoded() {
    let mut random = Random::new(44);
    for _ in 0..2000 {
        let random = &mut random;
        holds::<Vec<u8>, _>(Record {
            outcome: *random.pick(&RecordOutcome::ALL),
            memories: signed(random),
            edges: signed(random),
        });
        holds::<Vec<u8>, _>(Fire(*random.pick(&FireOutcome::ALL)));
        holds::<Vec<u8>, _>(ack(random));
        holds(drain(random));
        holds(batch(random));
        holds(AckThenDrain { acked: ack(random), drained: drain(random) });
        holds(AckThenDrain { acked: ack(random), drained: batch(random) });
        holds::<Vec<u8>, _>(Flag(random.percent(50)));
        holds::<Vec<u8>, _>(Done);
        holds::<Vec<u8>, _>(Recover { moved: count(random) });
        holds::<Vec<u8>, _>(Len { ready: count(random), deferred: count(random), processing: count(random) });
        holds::<Vec<u8>, _>(Redrive { moved: count(random), kept: count(random), left: count(random) });
        let mut fields: Vec<_> = (0..random.below(6)).map(|_| (bytes(random), bytes(random))).collect();
        fields.sort();
        holds(Counters { fields });
        holds(LimitGet {
            concurrency: optional(random),
            rate_count: optional(random),
            rate_seconds: optional(random),
            in_flight: count(random),
            tokens_left: optional(random),
            paused: random.percent(50),
        });
        let items = (0..random.below(5)).map(|_| (bytes(random), random.percent(50).then(|| signed(random))));
        holds(Inflight { items: items.collect() });
        let fields = (0..random.below(8)).map(|i| {
            let name = format!("field_{i}_{}", random.below(100));
            (name.into(), random.percent(70).then(|| signed(random)))
        });
        holds(Stats { fields: fields.collect() });
    }
}

#[test]
fn replies_of_another_shape_are_refused() {
    let value = |v: Value| v;
    assert!(<Record as Reply<Vec<u8>>>::decode(&value(Value::Status("queued".into()))).is_err());
    let bad_word = Value::Array(vec![Value::Status("stale".into()), Value::Integer(0), Value::Integer(0)]);
    assert!(<Record as Reply<Vec<u8>>>::decode(&bad_word).is_err());
    assert!(<Ack as Reply<Vec<u8>>>::decode(&bad_word).is_ok());
    assert!(<Fire as Reply<Vec<u8>>>::decode(&value(Value::Bulk(b"queued".to_vec()))).is_err());
    assert!(<Flag as Reply<Vec<u8>>>::decode(&value(Value::Integer(2))).is_err());
    assert!(<Recover as Reply<Vec<u8>>>::decode(&value(Value::Integer(-1))).is_err());
    assert!(Drain::<Vec<u8>>::decode(&Value::Integer(0)).is_err());
    assert!(LimitGet::decode(&Value::Array(vec![])).is_err());
}

#[test]
fn the_outcome_words_match_their_c_strings() {
    for outcome in RecordOutcome::ALL {
        assert_eq!(outcome.as_c_str().to_str(), Ok(outcome.as_str()));
    }
    for outcome in FireOutcome::ALL {
        assert_eq!(outcome.as_c_str().to_str(), Ok(outcome.as_str()));
    }
    for outcome in AckOutcome::ALL {
        assert_eq!(outcome.as_c_str().to_str(), Ok(outcome.as_str()));
    }
}
