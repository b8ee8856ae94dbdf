//! Acknowledging a drained fire by its exact payload: success subtracts the
//! fired snapshot, failure keeps the counters and requeues the same fire, and
//! in the same step the retained counters may be queued again, under the
//! ceiling. An acknowledgement that is not the region's pending fire is
//! stale: it changes no counter, and its payload leaves the in-flight list.

use super::fire::{enqueue_counted, snapshot_count};
use super::message::{FireRef, RegionWriteCounters};
use super::store::{QueueStore, RegionStore};
use super::trigger::Trigger;

/// What an acknowledgement did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// The reply word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stale => "stale",
            Self::Acknowledged => "acknowledged",
            Self::Requeued => "requeued",
            Self::Dropped => "dropped",
        }
    }
}

/// An acknowledgement's outcome and the region's counters after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acked {
    /// What happened.
    pub outcome: AckOutcome,
    /// `memories` after the acknowledgement (0 when stale).
    pub memories: i64,
    /// `edges` after the acknowledgement (0 when stale).
    pub edges: i64,
}

impl Acked {
    fn counts(outcome: AckOutcome, memories: i64, edges: i64) -> Self {
        Self { outcome, memories, edges }
    }
}

/// Acknowledge `message`, read from the queue as `payload` (its fields
/// borrowed: the command reads them in place from its argument).
#[allow(clippy::too_many_arguments)]
pub fn acknowledge(
    queue: &mut impl QueueStore,
    counters: &mut impl RegionStore,
    message: FireRef<'_>,
    payload: &[u8],
    success: bool,
    fired_by: &str,
    trigger: &Trigger,
    now: i64,
    queue_max: u64,
    new_fire_id: impl FnOnce() -> String,
) -> Acked {
    let Some(fired_at) = message.fired_at else {
        // An explicit fire owns no counters: acknowledging it only removes it.
        let outcome = if queue.remove_processing(payload) {
            AckOutcome::Acknowledged
        } else {
            AckOutcome::Stale
        };
        return Acked::counts(outcome, 0, 0);
    };
    // The fields used below, copied out (the pending id is only compared).
    let current = counters.counters();
    let is_pending = match (message.fire_id, &current.pending) {
        (Some(fire_id), Some(pending)) => fire_id.as_bytes() == pending.as_slice(),
        _ => false,
    };
    let (memories, edges, last_success) = (current.memories, current.edges, current.last_success);
    queue.remove_processing(payload);
    if !is_pending {
        return Acked::counts(AckOutcome::Stale, 0, 0);
    }
    let mut memories = memories.unwrap_or(0);
    let mut edges = edges.unwrap_or(0);
    let mut retry = fired_at;
    let mut last_success = last_success;
    if success {
        memories = memories
            .saturating_sub(i64::from(fired_at.memories_since_last_cycle))
            .max(0);
        edges = edges
            .saturating_sub(i64::from(fired_at.edges_since_last_cycle))
            .max(0);
        retry.memories_since_last_cycle = snapshot_count(memories);
        retry.edges_since_last_cycle = snapshot_count(edges);
        counters.set_counts(memories, edges, Some(now));
        last_success = Some(now);
    }
    counters.clear_pending();
    let elapsed = now.saturating_sub(last_success.unwrap_or(now)).max(0);
    let due = !success
        || (trigger.interval_passed(elapsed) && trigger.threshold_met(memories, edges, elapsed));
    if !due {
        return Acked::counts(AckOutcome::Acknowledged, memories, edges);
    }
    let snapshot = RegionWriteCounters {
        seconds_since_last_cycle: elapsed as u64,
        ..retry
    };
    // A failure may be an ambiguous success, so it keeps its identity; a
    // success's follow-up fire is a new one.
    let fire_id = match (message.fire_id, success) {
        (Some(fire_id), false) => fire_id.to_owned(),
        _ => new_fire_id(),
    };
    if enqueue_counted(queue, counters, message.region, fired_by, snapshot, fire_id, queue_max) {
        Acked::counts(AckOutcome::Requeued, memories, edges)
    } else {
        Acked::counts(AckOutcome::Dropped, memories, edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dreams::memory::{MemoryCounters, MemoryQueue};
    use crate::dreams::message::FireMessage;
    use crate::dreams::region::RegionKey;

    const NOW: i64 = 2_000_000;

    fn trigger(min_interval: u64) -> Trigger {
        Trigger {
            memory_threshold: 10,
            edge_threshold: 10,
            min_interval_secs: min_interval,
            age_floor_secs: 1_000_000,
        }
    }

    /// A region with `memories` counted and a pending fire of `fired` of them,
    /// drained into processing.
    fn pending(memories: i64, fired: u32) -> (MemoryQueue, MemoryCounters, FireMessage, Vec<u8>) {
        let mut counters = MemoryCounters::default();
        counters.fields.memories = Some(memories);
        counters.fields.edges = Some(0);
        counters.fields.last_success = Some(NOW - 100);
        counters.fields.pending = Some(b"f1".to_vec());
        let message = FireMessage {
            region: RegionKey::new("o", "p", 1),
            fired_by: "n".into(),
            fired_at: Some(RegionWriteCounters {
                memories_since_last_cycle: fired,
                edges_since_last_cycle: 0,
                seconds_since_last_cycle: 100,
            }),
            fire_id: Some("f1".into()),
            queued_payload: None,
            quiet_deferred: false,
        };
        let payload = message.to_payload().into_bytes();
        let mut queue = MemoryQueue::default();
        queue.processing.push(payload.clone());
        (queue, counters, message, payload)
    }

    fn ack(
        state: &mut (MemoryQueue, MemoryCounters, FireMessage, Vec<u8>),
        success: bool,
        trigger: &Trigger,
    ) -> Acked {
        let (queue, counters, message, payload) = state;
        acknowledge(queue, counters, message.borrowed(), payload, success, "acker", trigger, NOW, 1000, || "f2".into())
    }

    #[test]
    fn success_subtracts_exactly_the_snapshot() {
        let mut state = pending(12, 10);
        let result = ack(&mut state, true, &trigger(60));
        assert_eq!(result, Acked::counts(AckOutcome::Acknowledged, 2, 0));
        let (queue, counters, ..) = &state;
        assert!(queue.processing.is_empty());
        assert_eq!(counters.fields.last_success, Some(NOW));
        assert_eq!(counters.fields.pending, None);
    }

    #[test]
    fn repeated_ack_is_stale() {
        let mut state = pending(12, 10);
        ack(&mut state, true, &trigger(60));
        assert_eq!(ack(&mut state, true, &trigger(60)), Acked::counts(AckOutcome::Stale, 0, 0));
        assert_eq!(state.1.fields.memories, Some(2));
    }

    #[test]
    fn stale_ack_still_removes_its_payload() {
        let mut state = pending(12, 10);
        state.1.fields.pending = Some(b"other".to_vec());
        assert_eq!(ack(&mut state, true, &trigger(60)).outcome, AckOutcome::Stale);
        assert!(state.0.processing.is_empty());
        assert_eq!(state.1.fields.memories, Some(12));
        assert_eq!(state.1.fields.pending.as_deref(), Some(&b"other"[..]));
    }

    #[test]
    fn failure_requeues_the_same_fire() {
        let mut state = pending(12, 10);
        let result = ack(&mut state, false, &trigger(60));
        assert_eq!(result, Acked::counts(AckOutcome::Requeued, 12, 0));
        let (queue, counters, ..) = &state;
        assert_eq!(counters.fields.pending.as_deref(), Some(&b"f1"[..]));
        let requeued = FireMessage::parse(&queue.ready[0]).unwrap();
        assert_eq!(requeued.fire_id.as_deref(), Some("f1"));
        assert_eq!(requeued.fired_by, "acker");
        assert_eq!(requeued.fired_at.unwrap().memories_since_last_cycle, 10, "the fired snapshot, not the current counters");
        assert_eq!(requeued.fired_at.unwrap().seconds_since_last_cycle, 100);
        assert_eq!(counters.fields.last_success, Some(NOW - 100), "failure keeps last_success");
    }

    #[test]
    fn success_requeues_at_once_only_with_zero_min_interval() {
        let mut state = pending(25, 10);
        let result = ack(&mut state, true, &trigger(0));
        assert_eq!(result, Acked::counts(AckOutcome::Requeued, 15, 0));
        let requeued = FireMessage::parse(&state.0.ready[0]).unwrap();
        assert_eq!(requeued.fire_id.as_deref(), Some("f2"), "a new identity after success");
        assert_eq!(requeued.fired_at.unwrap().memories_since_last_cycle, 15);
        assert_eq!(requeued.fired_at.unwrap().seconds_since_last_cycle, 0);
        let mut again = pending(25, 10);
        assert_eq!(ack(&mut again, true, &trigger(1)).outcome, AckOutcome::Acknowledged);
    }

    #[test]
    fn requeue_respects_the_ceiling() {
        let (mut queue, mut counters, message, payload) = pending(12, 10);
        queue.ready.push(b"other".to_vec());
        let result = acknowledge(&mut queue, &mut counters, message.borrowed(), &payload, false, "n", &trigger(0), NOW, 1, || "x".into());
        assert_eq!(result.outcome, AckOutcome::Dropped);
        assert_eq!(counters.fields.pending, None);
        assert!(queue.processing.is_empty());
    }

    #[test]
    fn explicit_fire_payloads_are_just_removed() {
        let message = FireMessage {
            region: RegionKey::new("o", "p", 1),
            fired_by: "n".into(),
            fired_at: None,
            fire_id: Some("x".into()),
            queued_payload: None,
            quiet_deferred: false,
        };
        let payload = message.to_payload().into_bytes();
        let mut queue = MemoryQueue::default();
        let mut counters = MemoryCounters::default();
        queue.processing.push(payload.clone());
        let first = acknowledge(&mut queue, &mut counters, message.borrowed(), &payload, false, "n", &trigger(0), NOW, 1000, || "y".into());
        assert_eq!(first.outcome, AckOutcome::Acknowledged);
        let second = acknowledge(&mut queue, &mut counters, message.borrowed(), &payload, false, "n", &trigger(0), NOW, 1000, || "y".into());
        assert_eq!(second.outcome, AckOutcome::Stale);
        assert!(queue.ready.is_empty());
    }

    #[test]
    fn counted_payload_without_fire_id_is_stale() {
        let (mut queue, mut counters, mut message, _) = pending(12, 10);
        message.fire_id = None;
        let payload = message.to_payload().into_bytes();
        queue.processing.push(payload.clone());
        let result = acknowledge(&mut queue, &mut counters, message.borrowed(), &payload, true, "n", &trigger(0), NOW, 1000, || "y".into());
        assert_eq!(result.outcome, AckOutcome::Stale);
        assert_eq!(queue.processing.len(), 1, "only the exact payload leaves");
    }
}
