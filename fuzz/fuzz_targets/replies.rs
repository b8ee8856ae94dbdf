//! The law of every reply type (`dreamtown_protocol::reply::settles`):
//! any value a server could send reads without panicking, and what a type
//! reads it writes back to a value it reads the same. Input: the value,
//! one node at a time: a tag byte (status, bulk, integer, nil, null array,
//! array, map), then a length byte and that many bytes for a string, eight
//! for an integer, a count byte and the items for an array or a map.
#![no_main]

use dreamtown_protocol::reply::{settles, Value};
use libfuzzer_sys::fuzz_target;

/// The next byte, if any.
fn byte(data: &mut &[u8]) -> Option<u8> {
    let (&first, rest) = data.split_first()?;
    *data = rest;
    Some(first)
}

/// A length byte, then that many bytes (fewer at the end of the input).
fn string(data: &mut &[u8]) -> Vec<u8> {
    let len = usize::from(byte(data).unwrap_or(0)).min(data.len());
    let (taken, rest) = data.split_at(len);
    *data = rest;
    taken.to_vec()
}

fn value(data: &mut &[u8], depth: u32) -> Value {
    let Some(tag) = byte(data) else { return Value::Nil };
    let count = |data: &mut &[u8]| if depth >= 4 { 0 } else { usize::from(byte(data).unwrap_or(0) % 8) };
    match tag % 7 {
        0 => Value::Status(String::from_utf8_lossy(&string(data)).into_owned().into()),
        1 => Value::Bulk(string(data)),
        2 => {
            let mut bytes = [0u8; 8];
            for slot in &mut bytes {
                *slot = byte(data).unwrap_or(0);
            }
            Value::Integer(i64::from_le_bytes(bytes))
        }
        3 => Value::Nil,
        4 => Value::NilArray,
        5 => {
            let n = count(data);
            Value::Array((0..n).map(|_| value(data, depth + 1)).collect())
        }
        _ => {
            let n = count(data);
            Value::Map((0..n).map(|_| (value(data, depth + 1), value(data, depth + 1))).collect())
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let value = value(&mut data, 0);
    if let Err(broken) = settles(&value) {
        panic!("{broken}");
    }
});
