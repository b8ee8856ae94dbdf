//! The law of every `TOWN.*` reply over generated values:
//! `decode(encode(x)) == x`, from RESP3's maps and RESP2's flat arrays.

use super::*;
use crate::reply::law::{bytes, count, holds};
use crate::test_random::Random;

fn bulks(random: &mut Random) -> Vec<Vec<u8>> {
    (0..random.below(5)).map(|_| bytes(random)).collect()
}

fn recv(random: &mut Random) -> Recv<Vec<u8>> {
    match random.below(3) {
        0 => Recv::TimedOut,
        _ => Recv::Messages(bulks(random)),
    }
}

fn record(random: &mut Random) -> Record<Vec<u8>> {
    Record { fields: (0..random.below(6)).map(|_| (bytes(random), bytes(random))).collect() }
}

#[test]
fn every_reply_decodes_to_what_was_encoded() {
    let mut random = Random::new(45);
    for _ in 0..2000 {
        let random = &mut random;
        holds::<Vec<u8>, _>(Count(count(random)));
        holds::<Vec<u8>, _>(AgentIncr(random.next() as i64));
        holds::<Vec<u8>, _>(Flag(random.percent(50)));
        holds::<Vec<u8>, _>(Done);
        holds(Bulks { items: bulks(random) });
        holds(MaybeBulk(random.percent(50).then(|| bytes(random))));
        holds::<Vec<u8>, _>(Len { inbox: count(random), urgent: count(random), pending: count(random) });
        holds(recv(random));
        holds(AckThenRecv { acked: Flag(random.percent(50)), received: recv(random) });
        holds(record(random));
        holds(Records { records: (0..random.below(4)).map(|_| record(random)).collect() });
        let fields = (0..random.below(8)).map(|i| (format!("field_{i}").into(), random.percent(70).then_some(7)));
        holds(Stats { fields: fields.collect() });
    }
}

#[test]
fn replies_of_another_shape_are_refused() {
    assert!(<Count as Reply<Vec<u8>>>::decode(&Value::Integer(-1)).is_err());
    assert!(<Count as Reply<Vec<u8>>>::decode(&Value::Status("OK".into())).is_err());
    assert!(<Done as Reply<Vec<u8>>>::decode(&Value::Status("QUEUED".into())).is_err());
    assert!(Bulks::<Vec<u8>>::decode(&Value::Array(vec![Value::Integer(1)])).is_err());
    assert!(Recv::<Vec<u8>>::decode(&Value::Integer(0)).is_err());
    assert!(MaybeBulk::<Vec<u8>>::decode(&Value::NilArray).is_err());
    assert!(Record::<Vec<u8>>::decode(&Value::Array(vec![Value::Bulk(b"odd".to_vec())])).is_err());
    assert!(<Len as Reply<Vec<u8>>>::decode(&Value::Array(vec![Value::Integer(1), Value::Integer(2)])).is_err());
}

#[test]
fn a_timed_out_receive_reads_from_either_null() {
    assert_eq!(Recv::<Vec<u8>>::decode(&Value::Nil), Ok(Recv::TimedOut));
    assert_eq!(Recv::<Vec<u8>>::decode(&Value::NilArray), Ok(Recv::TimedOut));
    assert_eq!(Recv::<Vec<u8>>::decode(&Value::Array(vec![])), Ok(Recv::Messages(vec![])));
}
