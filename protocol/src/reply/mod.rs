//! Replies: one type per command (or subcommand) that both writes the
//! reply (the module, [`Reply::encode`]) and reads it (the client,
//! [`Reply::decode`]), so the wire shape of each reply is defined once,
//! as [`crate::request`] defines each command's arguments.
//!
//! A reply encodes into any [`Wire`]: the protocol's own RESP value
//! ([`Value`], what the client decodes from and the tests check), or the
//! module's reply (which sends it to the client as it is, without building
//! a `Value` first: the hot replies cost nothing more than before). A
//! reply that carries bytes is generic over their holder `B`.
//!
//! Every type keeps one law, checked by the unit tests of each family:
//! `decode(&encode(x)) == x`; and a map reply decodes the same from RESP2's
//! flat array as from RESP3's map.

pub mod dreams;
pub mod dryrun;
pub mod town;

use std::borrow::Cow;
use std::ffi::CStr;

/// A RESP value, as the module sends it and a client reads it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value<B = Vec<u8>> {
    /// A status reply (`+OK`, `+queued`).
    Status(Cow<'static, str>),
    /// A bulk string.
    Bulk(B),
    /// An integer.
    Integer(i64),
    /// The null of one item: `$-1` in RESP2, `_` in RESP3.
    Nil,
    /// The null array: `*-1` in RESP2, `_` in RESP3.
    NilArray,
    /// An array.
    Array(Vec<Value<B>>),
    /// Field/value pairs: a map in RESP3, the flat array `[field, value,
    /// ...]` in RESP2 (a client reading RESP2 sees an [`Value::Array`]).
    Map(Vec<(Value<B>, Value<B>)>),
}

/// What a reply is written into: [`Value`], or the module's reply type.
pub trait Wire<B>: Sized {
    /// A status word.
    fn status(word: &'static CStr) -> Self;
    /// A bulk string.
    fn bulk(bytes: B) -> Self;
    /// An integer.
    fn integer(value: i64) -> Self;
    /// The null of one item.
    fn nil() -> Self;
    /// The null array.
    fn nil_array() -> Self;
    /// An array.
    fn array(items: Vec<Self>) -> Self;
    /// Field/value pairs.
    fn map(pairs: Vec<(Self, Self)>) -> Self;
    /// The array `[status, integer, integer]` (a hot reply's shape: a
    /// writer may send it without building a `Vec`).
    fn counted(word: &'static CStr, first: i64, second: i64) -> Self {
        Self::array(vec![Self::status(word), Self::integer(first), Self::integer(second)])
    }
    /// An unsigned count (past `i64::MAX`, `i64::MAX`).
    fn count(value: u64) -> Self {
        Self::integer(i64::try_from(value).unwrap_or(i64::MAX))
    }
    /// An array of bulk strings (a writer may send its strings as they
    /// are, without a value per item).
    fn bulks(items: Vec<B>) -> Self {
        Self::array(items.into_iter().map(Self::bulk).collect())
    }
}

impl<B> Wire<B> for Value<B> {
    fn status(word: &'static CStr) -> Self {
        Value::Status(word.to_string_lossy())
    }

    fn bulk(bytes: B) -> Self {
        Value::Bulk(bytes)
    }

    fn integer(value: i64) -> Self {
        Value::Integer(value)
    }

    fn nil() -> Self {
        Value::Nil
    }

    fn nil_array() -> Self {
        Value::NilArray
    }

    fn array(items: Vec<Self>) -> Self {
        Value::Array(items)
    }

    fn map(pairs: Vec<(Self, Self)>) -> Self {
        Value::Map(pairs)
    }
}

/// A command's reply, written and read in one place.
pub trait Reply<B>: Sized {
    /// Write the reply, as the module sends it.
    fn encode<W: Wire<B>>(self) -> W;

    /// Read the reply a client received.
    fn decode(value: &Value<B>) -> Result<Self, Unexpected>;
}

/// A reply that is not what the command answers: what was expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unexpected(pub &'static str);

impl std::fmt::Display for Unexpected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "expected {}", self.0)
    }
}

impl std::error::Error for Unexpected {}

/// `[<the reply of what ran first>, <the reply of what ran then>]`: a
/// command that acknowledges before it takes more (`DREAMS.DRAIN ... ACK`,
/// `TOWN.RECV ... ACK`), of both halves written already (the module keeps
/// the first while the second runs, or waits).
pub fn acked_then<B, W: Wire<B>>(acked: W, then: W) -> W {
    W::array(vec![acked, then])
}

/// An integer 1 or 0: whether the command found what it acts on (the
/// families name each use: `dreams::Extend`, `town::StopCheck`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag(pub bool);

impl<B> Reply<B> for Flag {
    fn encode<W: Wire<B>>(self) -> W {
        W::integer(i64::from(self.0))
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        read::flag(value, "1 or 0").map(Self)
    }
}

/// `OK` (the families name each use: `dreams::Settle`, `town::AgentSet`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done;

impl<B> Reply<B> for Done {
    fn encode<W: Wire<B>>(self) -> W {
        W::status(c"OK")
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        match read::status(value, "OK")? {
            "OK" => Ok(Self),
            _ => Err(Unexpected("OK")),
        }
    }
}

/// A hash's fields and values as `HGETALL` replies them (a map in RESP3, a
/// flat array in RESP2; empty when there is no such hash): an agent's or a
/// task's record (`town::AgentGet`, ...), a region's counters
/// (`dreams::Counters`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hash<B> {
    /// Field/value pairs, in the order the module writes them.
    pub fields: Vec<(B, B)>,
}

impl<B: AsRef<[u8]>> Hash<B> {
    /// The value of `field`, if stored.
    pub fn get(&self, field: &str) -> Option<&[u8]> {
        self.fields.iter().find(|(name, _)| name.as_ref() == field.as_bytes()).map(|(_, value)| value.as_ref())
    }
}

impl<B: Clone> Reply<B> for Hash<B> {
    fn encode<W: Wire<B>>(self) -> W {
        W::map(self.fields.into_iter().map(|(field, value)| (W::bulk(field), W::bulk(value))).collect())
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        const HASH: &str = "field/value pairs";
        let pairs = read::pairs(value, HASH)?;
        let fields = pairs
            .into_iter()
            .map(|(field, value)| Ok((read::bulk(field, HASH)?.clone(), read::bulk(value, HASH)?.clone())));
        Ok(Self { fields: fields.collect::<Result<_, _>>()? })
    }
}

/// `DREAMS.STATS` and `TOWN.STATS`: a tenant at a glance, field/value
/// pairs (a map in RESP3, a flat array in RESP2) whose values are integers
/// or nil; the fields and what they mean are the schemas of
/// [`crate::stats`] (and the counted totals of the module's events table),
/// in the order the module writes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Each field's name and value (nil: `None`).
    pub fields: Vec<(Cow<'static, str>, Option<i64>)>,
}

impl Stats {
    /// The value of `field`: `None` if absent, `Some(None)` if nil.
    pub fn get(&self, field: &str) -> Option<Option<i64>> {
        self.fields.iter().find(|(name, _)| name == field).map(|(_, value)| *value)
    }
}

impl Reply<Vec<u8>> for Stats {
    fn encode<W: Wire<Vec<u8>>>(self) -> W {
        let field = |(name, value): (Cow<'static, str>, Option<i64>)| {
            (W::bulk(name.as_bytes().to_vec()), value.map_or_else(W::nil, W::integer))
        };
        W::map(self.fields.into_iter().map(field).collect())
    }

    fn decode(value: &Value<Vec<u8>>) -> Result<Self, Unexpected> {
        const STATS: &str = "field/value pairs of integers or nil";
        let field = |(name, value): read::Pair<'_, Vec<u8>>| {
            let name = String::from_utf8(read::bulk(name, STATS)?.clone()).map_err(|_| Unexpected(STATS))?;
            let value = match value {
                Value::Nil => None,
                other => Some(read::integer(other, STATS)?),
            };
            Ok((Cow::Owned(name), value))
        };
        Ok(Self { fields: read::pairs(value, STATS)?.into_iter().map(field).collect::<Result<_, _>>()? })
    }
}

/// The law of every reply type on any value a server could send: reading
/// it never panics, and what a type reads it writes back to a value that
/// reads as the same reply (`decode(encode(decode(v))) == decode(v)`).
/// `Err` describes a break of the law; `Ok(n)`: how many types read `value`.
pub fn settles(value: &Value) -> Result<usize, String> {
    fn again<R: Reply<Vec<u8>> + Clone + PartialEq + std::fmt::Debug>(value: &Value) -> Result<usize, String> {
        let Ok(reply) = R::decode(value) else { return Ok(0) };
        let encoded: Value = reply.clone().encode();
        match R::decode(&encoded) {
            Ok(again) if again == reply => Ok(1),
            other => Err(format!("{value:?} read as {reply:?}, written as {encoded:?}, read back as {other:?}")),
        }
    }
    let mut read = 0;
    for check in [
        again::<Flag>,
        again::<Done>,
        again::<Stats>,
        again::<dreams::Record>,
        again::<dreams::Fire>,
        again::<dreams::Ack>,
        again::<dreams::Drain<Vec<u8>>>,
        again::<dreams::DrainBatch<Vec<u8>>>,
        again::<dreams::AckThenDrain<dreams::Drain<Vec<u8>>>>,
        again::<dreams::AckThenDrain<dreams::DrainBatch<Vec<u8>>>>,
        again::<dreams::Recover>,
        again::<dreams::Len>,
        again::<dreams::Redrive>,
        again::<dreams::LimitGet>,
        again::<dreams::Inflight<Vec<u8>>>,
        again::<town::Count>,
        again::<town::AgentIncr>,
        again::<town::Bulks<Vec<u8>>>,
        again::<town::MaybeBulk<Vec<u8>>>,
        again::<town::Len>,
        again::<town::Recv<Vec<u8>>>,
        again::<town::AckThenRecv<Vec<u8>>>,
        again::<Hash<Vec<u8>>>,
        again::<town::Records<Vec<u8>>>,
        again::<dryrun::DryRun>,
    ] {
        read += check(value)?;
    }
    Ok(read)
}

/// The readers the families' decoders share.
pub(crate) mod read {
    use super::{Unexpected, Value};

    /// A field and its value, as read from a map reply.
    pub type Pair<'v, B> = (&'v Value<B>, &'v Value<B>);

    /// A status word.
    pub fn status<'v, B>(value: &'v Value<B>, expected: &'static str) -> Result<&'v str, Unexpected> {
        match value {
            Value::Status(word) => Ok(word),
            _ => Err(Unexpected(expected)),
        }
    }

    /// An integer.
    pub fn integer<B>(value: &Value<B>, expected: &'static str) -> Result<i64, Unexpected> {
        match value {
            Value::Integer(n) => Ok(*n),
            _ => Err(Unexpected(expected)),
        }
    }

    /// A non-negative integer.
    pub fn count<B>(value: &Value<B>, expected: &'static str) -> Result<u64, Unexpected> {
        u64::try_from(integer(value, expected)?).map_err(|_| Unexpected(expected))
    }

    /// A non-negative integer, or nil.
    pub fn optional_count<B>(value: &Value<B>, expected: &'static str) -> Result<Option<u64>, Unexpected> {
        match value {
            Value::Nil => Ok(None),
            other => count(other, expected).map(Some),
        }
    }

    /// Integer 1 or 0.
    pub fn flag<B>(value: &Value<B>, expected: &'static str) -> Result<bool, Unexpected> {
        match value {
            Value::Integer(1) => Ok(true),
            Value::Integer(0) => Ok(false),
            _ => Err(Unexpected(expected)),
        }
    }

    /// A bulk string.
    pub fn bulk<'v, B>(value: &'v Value<B>, expected: &'static str) -> Result<&'v B, Unexpected> {
        match value {
            Value::Bulk(bytes) => Ok(bytes),
            _ => Err(Unexpected(expected)),
        }
    }

    /// An array of exactly `N` items.
    pub fn items<'v, B, const N: usize>(
        value: &'v Value<B>,
        expected: &'static str,
    ) -> Result<&'v [Value<B>; N], Unexpected> {
        match value {
            Value::Array(items) => items.as_slice().try_into().map_err(|_| Unexpected(expected)),
            _ => Err(Unexpected(expected)),
        }
    }

    /// An array of exactly `N` counts.
    pub fn counts<B, const N: usize>(value: &Value<B>, expected: &'static str) -> Result<[u64; N], Unexpected> {
        let items = items::<B, N>(value, expected)?;
        let mut counts = [0; N];
        for (slot, item) in counts.iter_mut().zip(items) {
            *slot = count(item, expected)?;
        }
        Ok(counts)
    }

    /// Field/value pairs: a map (RESP3) or a flat array (RESP2).
    pub fn pairs<'v, B>(value: &'v Value<B>, expected: &'static str) -> Result<Vec<Pair<'v, B>>, Unexpected> {
        match value {
            Value::Map(pairs) => Ok(pairs.iter().map(|(field, value)| (field, value)).collect()),
            Value::Array(items) if items.len() % 2 == 0 => {
                Ok(items.chunks_exact(2).filter_map(|pair| Some((pair.first()?, pair.get(1)?))).collect())
            }
            _ => Err(Unexpected(expected)),
        }
    }

    /// The value of the field named `name` (a bulk string) among `pairs`.
    pub fn field<'v>(
        pairs: &[Pair<'v, Vec<u8>>],
        name: &str,
        expected: &'static str,
    ) -> Result<&'v Value<Vec<u8>>, Unexpected> {
        pairs
            .iter()
            .find(|(field, _)| matches!(field, Value::Bulk(bytes) if bytes.as_slice() == name.as_bytes()))
            .map(|(_, value)| *value)
            .ok_or(Unexpected(expected))
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod law {
    use super::{Reply, Value};
    use crate::test_random::Random;

    /// An integer, often at an edge (0, `i64::MAX`).
    pub fn signed(random: &mut Random) -> i64 {
        match random.below(4) {
            0 => 0,
            1 => i64::MAX,
            2 => random.next() as i64,
            _ => random.below(1000) as i64,
        }
    }

    /// A count, often at an edge (0, `i64::MAX`, the most a reply carries).
    pub fn count(random: &mut Random) -> u64 {
        match random.below(3) {
            0 => 0,
            1 => i64::MAX as u64,
            _ => random.below(1000) as u64,
        }
    }

    /// Up to 40 arbitrary bytes.
    pub fn bytes(random: &mut Random) -> Vec<u8> {
        (0..random.below(40)).map(|_| random.next() as u8).collect()
    }

    /// RESP2 as a client reads it: maps come as flat arrays.
    pub fn flattened<B: Clone>(value: &Value<B>) -> Value<B> {
        match value {
            Value::Map(pairs) => {
                Value::Array(pairs.iter().flat_map(|(field, value)| [flattened(field), flattened(value)]).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(flattened).collect()),
            other => other.clone(),
        }
    }

    /// `decode(encode(x)) == x`, and the same from RESP2's flat arrays.
    pub fn holds<B: Clone, R: Reply<B> + Clone + PartialEq + std::fmt::Debug>(reply: R) {
        let encoded: Value<B> = reply.clone().encode();
        assert_eq!(R::decode(&encoded).as_ref(), Ok(&reply));
        assert_eq!(R::decode(&flattened(&encoded)).as_ref(), Ok(&reply));
    }
}
