//! Acknowledging a drained fire by its exact payload: success subtracts the
//! fired snapshot, failure keeps the counters and requeues the same fire, and
//! in the same step the retained counters may be queued again, under the
//! ceiling. An acknowledgement that is not the region's pending fire is
//! stale: it changes no counter, and its payload leaves the in-flight list.

use super::fire::{enqueue_counted, snapshot_count};
use super::message::{FireRef, RegionWriteCounters};
use super::store::{QueueStore, RegionCounters, RegionStore};
use super::trigger::Trigger;

/// The outcome (its reply word defined by the protocol, which the client
/// reads it with).
pub use dreamtown_protocol::reply::dreams::AckOutcome;

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

/// Is `message` the region's pending fire (by fire id)? Only then does an
/// acknowledgement count.
fn is_pending(current: &RegionCounters, message: FireRef<'_>) -> bool {
    match (message.fire_id, &current.pending) {
        (Some(fire_id), Some(pending)) => fire_id.as_bytes() == pending.as_slice(),
        _ => false,
    }
}

/// A pending fire's counters once acknowledged: success subtracts the
/// fired snapshot and marks the success now; failure keeps both.
struct Settled {
    memories: i64,
    edges: i64,
    last_success: Option<i64>,
}

impl Settled {
    fn of(current: &RegionCounters, fired_at: RegionWriteCounters, success: bool, now: i64) -> Self {
        let memories = current.memories.unwrap_or(0);
        let edges = current.edges.unwrap_or(0);
        if !success {
            return Self { memories, edges, last_success: current.last_success };
        }
        Self {
            memories: memories.saturating_sub(i64::from(fired_at.memories_since_last_cycle)).max(0),
            edges: edges.saturating_sub(i64::from(fired_at.edges_since_last_cycle)).max(0),
            last_success: Some(now),
        }
    }

    fn elapsed(&self, now: i64) -> i64 {
        now.saturating_sub(self.last_success.unwrap_or(now)).max(0)
    }

    /// Is a further fire due: always after a failure (the same fire is
    /// retried), after a success when the retained counters meet the trigger.
    fn fire_due(&self, success: bool, trigger: &Trigger, now: i64) -> bool {
        let elapsed = self.elapsed(now);
        !success || (trigger.interval_passed(elapsed) && trigger.threshold_met(self.memories, self.edges, elapsed))
    }
}

/// Would acknowledging `message` now queue a fire again (a failure's
/// retry, or a success whose retained counters are due)? The decision
/// [`acknowledge`] takes, made from what was read before anything is
/// written, so that a caller opens (type-checks, ACL-checks) the ready list
/// and deferred set only on the path that uses them. Whether the queue then
/// has room does not matter: a full queue is looked at all the same.
pub fn requeue_due(current: &RegionCounters, message: FireRef<'_>, success: bool, trigger: &Trigger, now: i64) -> bool {
    let Some(fired_at) = message.fired_at else {
        return false;
    };
    is_pending(current, message) && Settled::of(current, fired_at, success, now).fire_due(success, trigger, now)
}

/// Acknowledge `message`, read from the queue as `payload` (its fields
/// borrowed: the command reads them in place from its argument). The ready
/// list and deferred set are used only when [`requeue_due`] holds for the
/// same inputs (and by a lease-aware queue that finds the payload back in
/// ready).
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
        let outcome = if queue.remove_processing(payload) { AckOutcome::Acknowledged } else { AckOutcome::Stale };
        return Acked::counts(outcome, 0, 0);
    };
    // Everything below is decided from the counters as read, before any write.
    let current = counters.counters();
    let pending = is_pending(current, message);
    let due = requeue_due(current, message, success, trigger, now);
    let settled = Settled::of(current, fired_at, success, now);
    queue.remove_processing(payload);
    if !pending {
        return Acked::counts(AckOutcome::Stale, 0, 0);
    }
    let (memories, edges) = (settled.memories, settled.edges);
    let mut retry = fired_at;
    if success {
        retry.memories_since_last_cycle = snapshot_count(memories);
        retry.edges_since_last_cycle = snapshot_count(edges);
        counters.set_counts(memories, edges, Some(now));
    }
    counters.clear_pending();
    if !due {
        return Acked::counts(AckOutcome::Acknowledged, memories, edges);
    }
    let snapshot = RegionWriteCounters { seconds_since_last_cycle: settled.elapsed(now) as u64, ..retry };
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
    use crate::dreams::store::QueueAppend;

    const NOW: i64 = 2_000_000;

    #[test]
    fn the_reply_words_agree() {
        for outcome in [AckOutcome::Stale, AckOutcome::Acknowledged, AckOutcome::Requeued, AckOutcome::Dropped] {
            assert_eq!(outcome.as_c_str().to_str().unwrap(), outcome.as_str());
        }
    }

    fn trigger(min_interval: u64) -> Trigger {
        Trigger { memory_threshold: 10, edge_threshold: 10, min_interval_secs: min_interval, age_floor_secs: 1_000_000 }
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

    fn ack(state: &mut (MemoryQueue, MemoryCounters, FireMessage, Vec<u8>), success: bool, trigger: &Trigger) -> Acked {
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
        assert_eq!(
            requeued.fired_at.unwrap().memories_since_last_cycle,
            10,
            "the fired snapshot, not the current counters"
        );
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
        let result = acknowledge(
            &mut queue,
            &mut counters,
            message.borrowed(),
            &payload,
            false,
            "n",
            &trigger(0),
            NOW,
            1,
            || "x".into(),
        );
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
        let first = acknowledge(
            &mut queue,
            &mut counters,
            message.borrowed(),
            &payload,
            false,
            "n",
            &trigger(0),
            NOW,
            1000,
            || "y".into(),
        );
        assert_eq!(first.outcome, AckOutcome::Acknowledged);
        let second = acknowledge(
            &mut queue,
            &mut counters,
            message.borrowed(),
            &payload,
            false,
            "n",
            &trigger(0),
            NOW,
            1000,
            || "y".into(),
        );
        assert_eq!(second.outcome, AckOutcome::Stale);
        assert!(queue.ready.is_empty());
    }

    /// A queue that records whether anything looked at, or wrote, its
    /// ready list or deferred set.
    #[derive(Default)]
    struct Watched {
        queue: MemoryQueue,
        waiting_used: std::cell::Cell<bool>,
    }

    impl Watched {
        fn waiting(&self) {
            self.waiting_used.set(true);
        }
    }

    impl QueueAppend for Watched {
        fn ready_len(&self) -> u64 {
            self.waiting();
            self.queue.ready_len()
        }
        fn deferred_len(&self) -> u64 {
            self.waiting();
            self.queue.deferred_len()
        }
        fn processing_len(&self) -> u64 {
            self.queue.processing_len()
        }
        fn push_ready(&mut self, payload: &[u8]) {
            self.waiting();
            self.queue.push_ready(payload);
        }
    }

    impl QueueStore for Watched {
        fn push_ready_head(&mut self, payload: &[u8]) {
            self.waiting();
            self.queue.push_ready_head(payload);
        }
        fn pop_ready(&mut self) -> Option<Vec<u8>> {
            self.waiting();
            self.queue.pop_ready()
        }
        fn remove_ready(&mut self, payload: &[u8]) -> bool {
            self.waiting();
            self.queue.remove_ready(payload)
        }
        fn push_processing(&mut self, payload: &[u8]) {
            self.queue.push_processing(payload);
        }
        fn remove_processing(&mut self, payload: &[u8]) -> bool {
            self.queue.remove_processing(payload)
        }
        fn take_processing(&mut self) -> Vec<Vec<u8>> {
            self.queue.take_processing()
        }
        fn scan_processing(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
            self.queue.scan_processing(visit);
        }
        fn add_deferred(&mut self, score: i64, payload: &[u8]) {
            self.waiting();
            self.queue.add_deferred(score, payload);
        }
        fn due_deferred(&self, now: i64, limit: u64) -> Vec<Vec<u8>> {
            self.waiting();
            self.queue.due_deferred(now, limit)
        }
        fn promote(&mut self, payloads: &[Vec<u8>]) {
            self.waiting();
            self.queue.promote(payloads);
        }
        fn push_dead(&mut self, payload: &[u8]) {
            self.queue.push_dead(payload);
        }
    }

    /// The command checks and opens the ready list and deferred set only
    /// when `requeue_due` says so: it must be exactly when `acknowledge`
    /// uses them (a full queue included), and they must be untouched
    /// otherwise.
    #[test]
    fn requeue_due_is_exactly_when_acknowledge_uses_ready_and_deferred() {
        let mut random = crate::test_random::Random::new(0x51ed_ac4e_0dd5_eed5);
        let values = [None, Some(0), Some(5), Some(10), Some(25), Some(i64::MAX)];
        let times = [None, Some(NOW), Some(NOW - 59), Some(NOW - 60), Some(NOW + 5), Some(0)];
        let (mut requeued, mut not) = (0, 0);
        for _ in 0..20_000 {
            let mut counters = MemoryCounters::default();
            counters.fields.memories = *random.pick(&values);
            counters.fields.edges = *random.pick(&values);
            counters.fields.last_success = *random.pick(&times);
            counters.fields.pending = random.pick(&[None, Some(b"f1".to_vec()), Some(b"other".to_vec())]).clone();
            let message = FireMessage {
                region: RegionKey::new("o", "p", 1),
                fired_by: "n".into(),
                fired_at: (random.below(5) != 0).then(|| RegionWriteCounters {
                    memories_since_last_cycle: *random.pick(&[0, 3, 10, u32::MAX]),
                    edges_since_last_cycle: *random.pick(&[0, 3, 10]),
                    seconds_since_last_cycle: 100,
                }),
                fire_id: random.pick(&[None, Some("f1".to_owned())]).clone(),
                queued_payload: None,
                quiet_deferred: false,
            };
            let payload = message.to_payload().into_bytes();
            let t = Trigger {
                memory_threshold: random.below(12) as u64,
                edge_threshold: random.below(12) as u64,
                min_interval_secs: *random.pick(&[0, 60, u64::MAX]),
                age_floor_secs: *random.pick(&[0, 30, u64::MAX]),
            };
            let success = random.below(2) == 0;
            let queue_max = *random.pick(&[0, 1000]);
            let due = requeue_due(&counters.fields, message.borrowed(), success, &t, NOW);
            let mut queue = Watched::default();
            if random.below(2) == 0 {
                queue.queue.processing.push(payload.clone());
            }
            let result = acknowledge(
                &mut queue,
                &mut counters,
                message.borrowed(),
                &payload,
                success,
                "n",
                &t,
                NOW,
                queue_max,
                || "f2".into(),
            );
            let queued_again = matches!(result.outcome, AckOutcome::Requeued | AckOutcome::Dropped);
            assert_eq!(queued_again, due, "{message:?} {t:?} success={success} -> {result:?}");
            assert_eq!(queue.waiting_used.get(), due, "ready/deferred used exactly when due: {result:?}");
            if due {
                requeued += 1
            } else {
                not += 1
            }
        }
        assert!(requeued > 1_000 && not > 1_000, "{requeued} {not}");
    }

    #[test]
    fn counted_payload_without_fire_id_is_stale() {
        let (mut queue, mut counters, mut message, _) = pending(12, 10);
        message.fire_id = None;
        let payload = message.to_payload().into_bytes();
        queue.processing.push(payload.clone());
        let result = acknowledge(
            &mut queue,
            &mut counters,
            message.borrowed(),
            &payload,
            true,
            "n",
            &trigger(0),
            NOW,
            1000,
            || "y".into(),
        );
        assert_eq!(result.outcome, AckOutcome::Stale);
        assert_eq!(queue.processing.len(), 1, "only the exact payload leaves");
    }
}
