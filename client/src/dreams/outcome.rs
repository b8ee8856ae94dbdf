//! What each Dreams call reports back, in the seed's shapes: the outcome of
//! recording, acknowledging and draining, the delivery fence of an
//! idempotent record, and the queue's lengths.

use dreamtown::dreams::message::{FireMessage, RegionWriteCounters};
use dreamtown_protocol::reply::dreams::{self as reply, AckOutcome, RecordOutcome};

/// Result of atomically recording a shared write counter (`DREAMS.RECORD`).
/// The snapshot holds the region's counters after the write;
/// `seconds_since_last_cycle` is always 0, as in the seed.
///
/// ```
/// use dreamtown_client::dreams::{RecordWriteOutcome, RegionWriteCounters};
///
/// let outcome = RecordWriteOutcome::Queued(RegionWriteCounters::default());
/// assert!(matches!(outcome, RecordWriteOutcome::Queued(_)));
/// assert_eq!(outcome.counters().memories_since_last_cycle, 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordWriteOutcome {
    /// Counters were retained but a fire was already pending or not due (also:
    /// the write was a duplicate or fenced by its delivery generation).
    Accumulated(RegionWriteCounters),
    /// This write atomically created the one pending fire.
    Queued(RegionWriteCounters),
    /// The queue was full; counters remain durable and the newest fire dropped.
    Dropped(RegionWriteCounters),
}

impl RecordWriteOutcome {
    /// The region's counters after the write, whatever the outcome.
    ///
    /// ```
    /// use dreamtown_client::dreams::{RecordWriteOutcome, RegionWriteCounters};
    /// let c = RegionWriteCounters { memories_since_last_cycle: 4, ..Default::default() };
    /// assert_eq!(RecordWriteOutcome::Dropped(c).counters(), c);
    /// ```
    pub fn counters(&self) -> RegionWriteCounters {
        match *self {
            Self::Accumulated(c) | Self::Queued(c) | Self::Dropped(c) => c,
        }
    }

    /// `DREAMS.RECORD`'s reply; `None` for counters past `u32`.
    pub(crate) fn from_reply(reply: reply::Record) -> Option<Self> {
        let counters = snapshot(reply.memories, reply.edges)?;
        Some(match reply.outcome {
            RecordOutcome::Accumulated => Self::Accumulated(counters),
            RecordOutcome::Queued => Self::Queued(counters),
            RecordOutcome::Dropped => Self::Dropped(counters),
        })
    }
}

/// Result of acknowledging a drained fire (`DREAMS.ACK`). The snapshot holds
/// the region's counters after the acknowledgement.
///
/// ```
/// use dreamtown_client::dreams::AcknowledgeOutcome;
/// assert_eq!(AcknowledgeOutcome::Stale.counters(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcknowledgeOutcome {
    /// The pending token was stale or already acknowledged.
    Stale,
    /// The notification was acknowledged without another due fire.
    Acknowledged(RegionWriteCounters),
    /// Retained counters were atomically queued for another cycle.
    Requeued(RegionWriteCounters),
    /// Retained counters remain durable, but the follow-up fire was dropped.
    Dropped(RegionWriteCounters),
}

impl AcknowledgeOutcome {
    /// The region's counters after the acknowledgement; `None` when stale.
    ///
    /// ```
    /// use dreamtown_client::dreams::{AcknowledgeOutcome, RegionWriteCounters};
    /// let c = RegionWriteCounters::default();
    /// assert_eq!(AcknowledgeOutcome::Requeued(c).counters(), Some(c));
    /// ```
    pub fn counters(&self) -> Option<RegionWriteCounters> {
        match *self {
            Self::Stale => None,
            Self::Acknowledged(c) | Self::Requeued(c) | Self::Dropped(c) => Some(c),
        }
    }

    /// `DREAMS.ACK`'s reply; `None` for counters past `u32`.
    pub(crate) fn from_reply(reply: reply::Ack) -> Option<Self> {
        let counters = snapshot(reply.memories, reply.edges)?;
        Some(match reply.outcome {
            AckOutcome::Stale => Self::Stale,
            AckOutcome::Acknowledged => Self::Acknowledged(counters),
            AckOutcome::Requeued => Self::Requeued(counters),
            AckOutcome::Dropped => Self::Dropped(counters),
        })
    }
}

/// The counters a counted reply carries (`seconds_since_last_cycle` is
/// always 0, as in the seed).
fn snapshot(memories: i64, edges: i64) -> Option<RegionWriteCounters> {
    Some(RegionWriteCounters {
        memories_since_last_cycle: u32::try_from(memories).ok()?,
        edges_since_last_cycle: u32::try_from(edges).ok()?,
        seconds_since_last_cycle: 0,
    })
}

/// One result of [`RedisFireQueue::drain`](super::RedisFireQueue::drain).
///
/// `DREAMS.DRAIN` applies the quiet-hours rule on the server and carries on
/// as repeated seed drains would, so this client never returns
/// [`DrainResult::Deferred`]; the variant stays so that code written against
/// the seed's transport compiles unchanged.
///
/// ```
/// use dreamtown_client::dreams::DrainResult;
///
/// fn describe(result: &DrainResult) -> &'static str {
///     match result {
///         DrainResult::Ready(_) => "run it, then acknowledge",
///         DrainResult::TimedOut => "nothing ready yet",
///         DrainResult::Deferred => "never returned by dreamtown",
///     }
/// }
/// assert_eq!(describe(&DrainResult::TimedOut), "nothing ready yet");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DrainResult {
    /// No queue item arrived before the requested timeout.
    TimedOut,
    /// The region should execute now; the message carries its exact payload
    /// in `queued_payload`, which acknowledgement needs.
    Ready(FireMessage),
    /// The seed's quiet-hours reorder signal. Never returned by this client:
    /// the server reorders inside the same `DREAMS.DRAIN`.
    Deferred,
}

/// A stable effect identity paired with its authoritative delivery
/// generation, for [`RedisFireQueue::record_write_once`](super::RedisFireQueue::record_write_once).
///
/// ```
/// use dreamtown_client::dreams::DeliveryFence;
/// let fence = DeliveryFence { event_id: "outbox-17", generation: 3 };
/// assert_eq!(fence.generation, 3);
/// ```
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct DeliveryFence<'a> {
    /// Durable outbox effect identity.
    pub event_id: &'a str,
    /// Monotonic claim generation assigned by storage (positive).
    pub generation: u64,
}

/// The lengths of an organization's queue (`DREAMS.LEN`).
///
/// ```
/// use dreamtown_client::dreams::QueueLengths;
/// let lengths = QueueLengths { ready: 2, deferred: 1, processing: 1 };
/// assert_eq!(lengths.total(), 4);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QueueLengths {
    /// Items waiting in the ready list.
    pub ready: u64,
    /// Items in the quiet-hours deferred set.
    pub deferred: u64,
    /// Items drained and not yet acknowledged.
    pub processing: u64,
}

impl QueueLengths {
    /// Ready + deferred + in flight: what the queue ceiling counts.
    ///
    /// ```
    /// assert_eq!(dreamtown_client::dreams::QueueLengths::default().total(), 0);
    /// ```
    pub fn total(&self) -> u64 {
        self.ready.saturating_add(self.deferred).saturating_add(self.processing)
    }
}

/// A rate: at most `count` fires handed out per `seconds` (a full bucket
/// of `count` at once, then one every `seconds / count`; a GCRA on the
/// server's clock).
///
/// ```
/// use dreamtown_client::dreams::DrainRate;
/// let rate = DrainRate { count: 60, seconds: 60 };
/// assert_eq!(rate.per_second(), 1.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DrainRate {
    /// Fires per period (and the burst).
    pub count: u64,
    /// The period, in whole seconds.
    pub seconds: u64,
}

impl DrainRate {
    /// The long-run rate in fires per second.
    pub fn per_second(&self) -> f64 {
        self.count as f64 / self.seconds.max(1) as f64
    }
}

/// One organization's fair share as it stands (`DREAMS.LIMIT GET`).
///
/// ```
/// use dreamtown_client::dreams::OrgLimits;
/// let limits = OrgLimits::default();
/// assert!(limits.concurrency.is_none() && !limits.paused);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OrgLimits {
    /// Fires in flight at most, if capped.
    pub concurrency: Option<u64>,
    /// Fires handed out per period at most, if rated.
    pub rate: Option<DrainRate>,
    /// Fires in flight now.
    pub in_flight: u64,
    /// Fires the rate lets go now, if rated.
    pub tokens_left: Option<u64>,
    /// Paused (`DREAMS.PAUSE`): nothing is handed out.
    pub paused: bool,
}

/// A change of an organization's limits (`DREAMS.LIMIT SET`): each field
/// `None` keeps that limit, `Some(None)` removes it, `Some(Some(..))` sets it.
///
/// ```
/// use dreamtown_client::dreams::{DrainRate, LimitChange};
/// let change = LimitChange::default().concurrency(4).rate(DrainRate { count: 10, seconds: 60 });
/// assert_eq!(change.concurrency, Some(Some(4)));
/// assert_eq!(LimitChange::default().no_rate().rate, Some(None));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LimitChange {
    /// The concurrency cap to set or remove.
    pub concurrency: Option<Option<u64>>,
    /// The rate to set or remove.
    pub rate: Option<Option<DrainRate>>,
}

impl LimitChange {
    /// Cap fires in flight at `cap` (1 or more).
    pub fn concurrency(mut self, cap: u64) -> Self {
        self.concurrency = Some(Some(cap));
        self
    }

    /// Remove the concurrency cap.
    pub fn no_concurrency(mut self) -> Self {
        self.concurrency = Some(None);
        self
    }

    /// Limit drains to `rate`.
    pub fn rate(mut self, rate: DrainRate) -> Self {
        self.rate = Some(Some(rate));
        self
    }

    /// Remove the rate.
    pub fn no_rate(mut self) -> Self {
        self.rate = Some(None);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_replies_past_u32_are_refused() {
        let record = |memories, edges| reply::Record { outcome: RecordOutcome::Queued, memories, edges };
        let counters = RegionWriteCounters {
            memories_since_last_cycle: 3,
            edges_since_last_cycle: u32::MAX,
            seconds_since_last_cycle: 0,
        };
        assert_eq!(
            RecordWriteOutcome::from_reply(record(3, u32::MAX.into())),
            Some(RecordWriteOutcome::Queued(counters))
        );
        assert_eq!(RecordWriteOutcome::from_reply(record(1 << 33, 0)), None);
        assert_eq!(RecordWriteOutcome::from_reply(record(-1, 0)), None);
        let stale = reply::Ack { outcome: AckOutcome::Stale, memories: 0, edges: 0 };
        assert_eq!(AcknowledgeOutcome::from_reply(stale), Some(AcknowledgeOutcome::Stale));
    }
}
