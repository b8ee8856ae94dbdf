//! The `DREAMS.*` replies: one type per command, written by the module and
//! read by the client (see [`super`]). The outcome words of RECORD, FIRE
//! and ACK are defined here; the module's core re-exports them.

use std::ffi::CStr;

use super::read;
use super::Hash;
pub use super::{Done, Flag, Stats};
use super::{Reply, Unexpected, Value, Wire};

/// What a record did (`DREAMS.RECORD`'s first word).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordOutcome {
    /// Counted (or deduplicated); no fire created.
    Accumulated,
    /// This write created the region's pending fire.
    Queued,
    /// A fire was due but the queue was full; counters are kept.
    Dropped,
}

impl RecordOutcome {
    /// Every outcome.
    pub const ALL: [Self; 3] = [Self::Accumulated, Self::Queued, Self::Dropped];

    /// The reply word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accumulated => "accumulated",
            Self::Queued => "queued",
            Self::Dropped => "dropped",
        }
    }

    /// The reply word, NUL-terminated for the reply API.
    pub fn as_c_str(self) -> &'static CStr {
        match self {
            Self::Accumulated => c"accumulated",
            Self::Queued => c"queued",
            Self::Dropped => c"dropped",
        }
    }
}

/// Outcome of an enqueue (`DREAMS.FIRE`'s reply).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FireOutcome {
    /// Appended below the ceiling.
    Queued,
    /// The queue was full; the newest fire was dropped.
    Dropped,
}

impl FireOutcome {
    /// Every outcome.
    pub const ALL: [Self; 2] = [Self::Queued, Self::Dropped];

    /// The reply word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Dropped => "dropped",
        }
    }

    /// The reply word, NUL-terminated for the reply API.
    pub fn as_c_str(self) -> &'static CStr {
        match self {
            Self::Queued => c"queued",
            Self::Dropped => c"dropped",
        }
    }
}

/// What an acknowledgement did (`DREAMS.ACK`'s first word).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AckOutcome {
    /// Not the pending fire (or already acknowledged): nothing counted.
    Stale,
    /// Acknowledged; no further fire due.
    Acknowledged,
    /// Acknowledged, and the retained counters were queued again.
    Requeued,
    /// A further fire was due but the queue was full; counters are kept.
    Dropped,
}

impl AckOutcome {
    /// Every outcome.
    pub const ALL: [Self; 4] = [Self::Stale, Self::Acknowledged, Self::Requeued, Self::Dropped];

    /// The reply word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stale => "stale",
            Self::Acknowledged => "acknowledged",
            Self::Requeued => "requeued",
            Self::Dropped => "dropped",
        }
    }

    /// The reply word, NUL-terminated for the reply API.
    pub fn as_c_str(self) -> &'static CStr {
        match self {
            Self::Stale => c"stale",
            Self::Acknowledged => c"acknowledged",
            Self::Requeued => c"requeued",
            Self::Dropped => c"dropped",
        }
    }
}

/// The word among `all` whose text is `word`.
fn outcome<T: Copy>(
    all: &[T],
    text: impl Fn(T) -> &'static str,
    word: &str,
    expected: &'static str,
) -> Result<T, Unexpected> {
    all.iter().copied().find(|outcome| text(*outcome) == word).ok_or(Unexpected(expected))
}

const RECORD: &str = "[accumulated|queued|dropped, memories, edges]";
const ACK: &str = "[stale|acknowledged|requeued|dropped, memories, edges]";

/// `DREAMS.RECORD`: `[accumulated|queued|dropped, memories, edges]`, the
/// region's counters after the write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// What the write did.
    pub outcome: RecordOutcome,
    /// The region's memories after it.
    pub memories: i64,
    /// The region's edges after it.
    pub edges: i64,
}

impl<B> Reply<B> for Record {
    fn encode<W: Wire<B>>(self) -> W {
        W::counted(self.outcome.as_c_str(), self.memories, self.edges)
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        let [word, memories, edges] = read::items(value, RECORD)?;
        Ok(Self {
            outcome: outcome(&RecordOutcome::ALL, RecordOutcome::as_str, read::status(word, RECORD)?, RECORD)?,
            memories: read::integer(memories, RECORD)?,
            edges: read::integer(edges, RECORD)?,
        })
    }
}

/// `DREAMS.FIRE`: `queued` or `dropped`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fire(pub FireOutcome);

impl<B> Reply<B> for Fire {
    fn encode<W: Wire<B>>(self) -> W {
        W::status(self.0.as_c_str())
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        const FIRE: &str = "queued or dropped";
        outcome(&FireOutcome::ALL, FireOutcome::as_str, read::status(value, FIRE)?, FIRE).map(Self)
    }
}

/// `DREAMS.ACK` (and the first half of `DREAMS.DRAIN ... ACK`):
/// `[stale|acknowledged|requeued|dropped, memories, edges]`, the region's
/// counters after it (0 and 0 when stale).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// What the acknowledgement did.
    pub outcome: AckOutcome,
    /// The region's memories after it.
    pub memories: i64,
    /// The region's edges after it.
    pub edges: i64,
}

impl<B> Reply<B> for Ack {
    fn encode<W: Wire<B>>(self) -> W {
        W::counted(self.outcome.as_c_str(), self.memories, self.edges)
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        let [word, memories, edges] = read::items(value, ACK)?;
        Ok(Self {
            outcome: outcome(&AckOutcome::ALL, AckOutcome::as_str, read::status(word, ACK)?, ACK)?,
            memories: read::integer(memories, ACK)?,
            edges: read::integer(edges, ACK)?,
        })
    }
}

/// `DREAMS.DRAIN` without `COUNT`: the payload drained, or nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Drain<B> {
    /// The fire's exact payload.
    Fire(B),
    /// Nothing ready, answered without waiting (inside MULTI or a script):
    /// nil, `$-1` in RESP2, as `BLMOVE` there.
    Nothing,
    /// The wait ran out: the null array, `*-1` in RESP2, as `BLMOVE`'s and
    /// `BLMPOP`'s timeout (`_` in RESP3 for both).
    TimedOut,
}

impl<B> Drain<B> {
    /// The payload, if one was drained.
    pub fn into_payload(self) -> Option<B> {
        match self {
            Self::Fire(payload) => Some(payload),
            Self::Nothing | Self::TimedOut => None,
        }
    }
}

impl<B: Clone> Reply<B> for Drain<B> {
    fn encode<W: Wire<B>>(self) -> W {
        match self {
            Self::Fire(payload) => W::bulk(payload),
            Self::Nothing => W::nil(),
            Self::TimedOut => W::nil_array(),
        }
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        match value {
            Value::Bulk(payload) => Ok(Self::Fire(payload.clone())),
            Value::Nil => Ok(Self::Nothing),
            Value::NilArray => Ok(Self::TimedOut),
            _ => Err(Unexpected("a payload or nil")),
        }
    }
}

/// `DREAMS.DRAIN ... COUNT <n>`: the payloads drained, in order; none is
/// the null array (`*-1` in RESP2, as `BLMPOP`'s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrainBatch<B> {
    /// The payloads, at most `n`.
    pub payloads: Vec<B>,
}

impl<B: Clone> Reply<B> for DrainBatch<B> {
    fn encode<W: Wire<B>>(self) -> W {
        match self.payloads.is_empty() {
            true => W::nil_array(),
            false => W::array(self.payloads.into_iter().map(W::bulk).collect()),
        }
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        const BATCH: &str = "an array of payloads or nil";
        match value {
            Value::Nil | Value::NilArray => Ok(Self { payloads: Vec::new() }),
            Value::Array(items) => {
                let payloads = items.iter().map(|item| read::bulk(item, BATCH).cloned());
                Ok(Self { payloads: payloads.collect::<Result<_, _>>()? })
            }
            _ => Err(Unexpected(BATCH)),
        }
    }
}

/// `DREAMS.DRAIN ... ACK ...`: `[<the ACK's reply>, <the drain's reply>]`
/// (`D`: [`Drain`], or [`DrainBatch`] with `COUNT`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckThenDrain<D> {
    /// The acknowledgement, applied first.
    pub acked: Ack,
    /// What the drain then answered.
    pub drained: D,
}

/// [`AckThenDrain`]'s shape, of both halves written already (the module
/// keeps the ACK's reply while the drain runs, or waits).
pub use super::acked_then as ack_then_drain;

impl<B: Clone, D: Reply<B>> Reply<B> for AckThenDrain<D> {
    fn encode<W: Wire<B>>(self) -> W {
        ack_then_drain(Reply::<B>::encode(self.acked), self.drained.encode())
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        let [acked, drained] = read::items(value, "[ack, drained]")?;
        Ok(Self { acked: Ack::decode(acked)?, drained: D::decode(drained)? })
    }
}

/// `DREAMS.EXTEND`'s reply: the lease was ours and is pushed out.
pub type Extend = Flag;
/// `DREAMS.PAUSE`'s reply: it was running.
pub type Pause = Flag;
/// `DREAMS.RESUME`'s reply: it was paused.
pub type Resume = Flag;
/// `DREAMS.LIMIT CLEAR`'s reply: there was a limit.
pub type LimitClear = Flag;

/// `DREAMS.SETTLE`'s reply.
pub type Settle = Done;
/// `DREAMS.LIMIT SET`'s reply.
pub type LimitSet = Done;

/// `DREAMS.RECOVER`: how many fires moved back to ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recover {
    /// Fires requeued.
    pub moved: u64,
}

impl<B> Reply<B> for Recover {
    fn encode<W: Wire<B>>(self) -> W {
        W::count(self.moved)
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        read::count(value, "a count").map(|moved| Self { moved })
    }
}

/// `DREAMS.LEN`: `[ready, deferred, in flight]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Len {
    /// Items in the ready list.
    pub ready: u64,
    /// Items in the quiet-hours deferred set.
    pub deferred: u64,
    /// Items drained and not yet acknowledged.
    pub processing: u64,
}

impl<B> Reply<B> for Len {
    fn encode<W: Wire<B>>(self) -> W {
        W::array(vec![W::count(self.ready), W::count(self.deferred), W::count(self.processing)])
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        let [ready, deferred, processing] = read::counts(value, "[ready, deferred, in flight]")?;
        Ok(Self { ready, deferred, processing })
    }
}

/// `DREAMS.REDRIVE`: `[moved, kept, left]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Redrive {
    /// Dead letters moved back to ready.
    pub moved: u64,
    /// Dead letters kept (the queue at its ceiling).
    pub kept: u64,
    /// Dead letters left.
    pub left: u64,
}

impl<B> Reply<B> for Redrive {
    fn encode<W: Wire<B>>(self) -> W {
        W::array(vec![W::count(self.moved), W::count(self.kept), W::count(self.left)])
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        let [moved, kept, left] = read::counts(value, "[moved, kept, left]")?;
        Ok(Self { moved, kept, left })
    }
}

/// `DREAMS.COUNTERS`: the region's hash fields as stored, sorted by field
/// (a map in RESP3, a flat array in RESP2; empty for a region never
/// written).
pub type Counters = Hash<Vec<u8>>;

/// `DREAMS.LIMIT GET`: the organization's fair share as it stands, a map
/// of `concurrency`, `rate_count`, `rate_seconds`, `in_flight`,
/// `tokens_left` (nil where unset) and `paused` (1 or 0), in that order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitGet {
    /// The concurrency cap, if any.
    pub concurrency: Option<u64>,
    /// The rate's fires per period, if rated.
    pub rate_count: Option<u64>,
    /// The rate's period in seconds, if rated.
    pub rate_seconds: Option<u64>,
    /// Fires in flight now.
    pub in_flight: u64,
    /// Fires the rate lets go now, if rated.
    pub tokens_left: Option<u64>,
    /// Paused (`DREAMS.PAUSE`).
    pub paused: bool,
}

impl Reply<Vec<u8>> for LimitGet {
    fn encode<W: Wire<Vec<u8>>>(self) -> W {
        let field = |name: &str, value: W| (W::bulk(name.as_bytes().to_vec()), value);
        let optional = |value: Option<u64>| value.map_or_else(W::nil, W::count);
        W::map(vec![
            field("concurrency", optional(self.concurrency)),
            field("rate_count", optional(self.rate_count)),
            field("rate_seconds", optional(self.rate_seconds)),
            field("in_flight", W::count(self.in_flight)),
            field("tokens_left", optional(self.tokens_left)),
            field("paused", W::integer(i64::from(self.paused))),
        ])
    }

    fn decode(value: &Value<Vec<u8>>) -> Result<Self, Unexpected> {
        const LIMITS: &str = "the limits' fields";
        let pairs = read::pairs(value, LIMITS)?;
        let optional = |name: &str| read::optional_count(read::field(&pairs, name, LIMITS)?, LIMITS);
        Ok(Self {
            concurrency: optional("concurrency")?,
            rate_count: optional("rate_count")?,
            rate_seconds: optional("rate_seconds")?,
            in_flight: read::count(read::field(&pairs, "in_flight", LIMITS)?, LIMITS)?,
            tokens_left: optional("tokens_left")?,
            paused: read::flag(read::field(&pairs, "paused", LIMITS)?, LIMITS)?,
        })
    }
}

/// `DREAMS.INFLIGHT`: each payload in flight with its lease deadline (unix
/// ms), nil when it holds no live lease: `[[payload, deadline|nil], ...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inflight<B> {
    /// Payloads and deadlines, in the in-flight list's order.
    pub items: Vec<(B, Option<i64>)>,
}

impl<B: Clone> Reply<B> for Inflight<B> {
    fn encode<W: Wire<B>>(self) -> W {
        let item = |(payload, deadline): (B, Option<i64>)| {
            W::array(vec![W::bulk(payload), deadline.map_or_else(W::nil, W::integer)])
        };
        W::array(self.items.into_iter().map(item).collect())
    }

    fn decode(value: &Value<B>) -> Result<Self, Unexpected> {
        const INFLIGHT: &str = "[[payload, deadline|nil], ...]";
        let Value::Array(items) = value else { return Err(Unexpected(INFLIGHT)) };
        let item = |item: &Value<B>| {
            let [payload, deadline] = read::items(item, INFLIGHT)?;
            let deadline = match deadline {
                Value::Nil => None,
                other => Some(read::integer(other, INFLIGHT)?),
            };
            Ok((read::bulk(payload, INFLIGHT)?.clone(), deadline))
        };
        Ok(Self { items: items.iter().map(item).collect::<Result<_, _>>()? })
    }
}

#[cfg(test)]
mod tests;
