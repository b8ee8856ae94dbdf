//! A real server's replies read with the protocol's reply types
//! (`dreamtown_protocol::reply`), through the raw RESP reader: what the
//! `*_replies` tests check every command's reply with.

use dreamtown_protocol::reply::{Reply, Value};
use dreamtown_test_support::{Frame, RawConnection};

/// A frame as the protocol's value (an error reply fails the test).
pub fn value(frame: Frame) -> Value {
    match frame {
        Frame::Simple(word) => Value::Status(word.into()),
        Frame::Integer(n) => Value::Integer(n),
        Frame::Bulk(bytes) => Value::Bulk(bytes),
        Frame::NullBulk | Frame::Null => Value::Nil,
        Frame::NullArray => Value::NilArray,
        Frame::Array(items) => Value::Array(items.into_iter().map(value).collect()),
        Frame::Map(pairs) => Value::Map(pairs.into_iter().map(|(field, item)| (value(field), value(item))).collect()),
        other => panic!("not a reply a dreamtown command sends: {other:?}"),
    }
}

/// `args`' reply, read with `R`.
pub fn call<R: Reply<Vec<u8>>>(con: &mut RawConnection, args: &[&str]) -> R {
    let reply = value(con.call(args));
    R::decode(&reply).unwrap_or_else(|error| panic!("{args:?}: {error} in {reply:?}"))
}
