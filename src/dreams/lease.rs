//! Leases on in-flight fires: a drained item may carry a deadline; when it
//! passes without an acknowledgement, that one item goes back to the head
//! of ready (it runs next) and nothing else in flight moves.
//!
//! The lease set is one sorted set per organization, member = payload,
//! score = deadline in unix milliseconds. After an expiry the member stays
//! with the score [`EXPIRED`] (0): a marker saying "this payload is back in
//! ready because its lease ran out", so that a late acknowledgement of the
//! same fire still finds and removes it there ([`LeaseAwareQueue`]). A
//! payload that is drained again gets a fresh deadline over the marker;
//! an acknowledgement removes the member whatever its score.

use super::store::{QueueAppend, QueueStore};

/// The score of a payload whose lease ran out and that went back to ready.
pub const EXPIRED: i64 = 0;

/// Longest lease accepted (seconds): 100 years.
pub const LEASE_SECS_MAX: f64 = 3_153_600_000.0;

/// An organization's lease set.
pub trait LeaseStore {
    /// The score of `payload`: a deadline (ms), [`EXPIRED`], or none.
    fn score(&self, payload: &[u8]) -> Option<i64>;
    /// Set `payload`'s score (add or rescore).
    fn set(&mut self, payload: &[u8], score: i64);
    /// Remove `payload`; whether it was there.
    fn remove(&mut self, payload: &[u8]) -> bool;
    /// Up to `limit` leased payloads with a deadline at or before `now_ms`,
    /// earliest first (never [`EXPIRED`] markers).
    fn due(&self, now_ms: i64, limit: u64) -> Vec<Vec<u8>>;
    /// The earliest live deadline, if any payload is leased.
    fn earliest(&self) -> Option<i64>;
}

/// A lease of `secs` seconds from `now_ms`: its deadline in ms, at least 1
/// so it never collides with the [`EXPIRED`] marker. `None` when `secs` is
/// not a number in (0, [`LEASE_SECS_MAX`]].
pub fn deadline(now_ms: i64, secs: f64) -> Option<i64> {
    if !(secs > 0.0 && secs <= LEASE_SECS_MAX) {
        return None;
    }
    let millis = (secs * 1000.0).ceil() as i64;
    Some(now_ms.saturating_add(millis.max(1)).max(1))
}

/// Lease `payload` (just drained) until `deadline_ms`.
pub fn grant(leases: &mut impl LeaseStore, payload: &[u8], deadline_ms: i64) {
    leases.set(payload, deadline_ms.max(EXPIRED + 1));
}

/// Push a live lease out to `deadline_ms`; false (nothing changed) when
/// `payload` is not leased to anyone (acknowledged, or expired).
pub fn extend(leases: &mut impl LeaseStore, payload: &[u8], deadline_ms: i64) -> bool {
    match leases.score(payload) {
        Some(score) if score > EXPIRED => {
            leases.set(payload, deadline_ms.max(EXPIRED + 1));
            true
        }
        _ => false,
    }
}

/// Expire up to `limit` leases due at `now_ms`: each payload still in
/// flight moves from processing to the head of ready and keeps an
/// [`EXPIRED`] marker; a payload no longer in flight just loses its lease.
/// How many items went back to ready.
pub fn expire_due(queue: &mut impl QueueStore, leases: &mut impl LeaseStore, now_ms: i64, limit: u64) -> u64 {
    expire_due_counted(queue, leases, now_ms, limit).1
}

/// [`expire_due`], also saying how many due leases it handled (expired or
/// dropped): `(handled, requeued)`.
pub fn expire_due_counted(
    queue: &mut impl QueueStore,
    leases: &mut impl LeaseStore,
    now_ms: i64,
    limit: u64,
) -> (u64, u64) {
    let due = leases.due(now_ms, limit);
    if due.is_empty() {
        return (0, 0);
    }
    // First the head of the in-flight list, where the oldest items (so,
    // usually, the earliest deadlines) are: a window of a few times
    // `limit` items, each looked up in the lease set, removed by index.
    // Due leases of one deadline come in member order, which may be
    // spread over a long in-flight list, and each removal by value would
    // search it: this keeps a step's cost bounded whatever is in flight.
    let window = limit.saturating_mul(4).max(64);
    let mut found: Vec<(u64, i64, Vec<u8>)> = Vec::new();
    let mut seen: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    let mut read = 0u64;
    queue.scan_processing(&mut |index, payload| {
        read += 1;
        // Only the first in-flight copy of a payload carries its lease.
        if seen.insert(payload.to_vec()) {
            if let Some(deadline) = leases.score(payload).filter(|&at| at > EXPIRED && at <= now_ms) {
                found.push((index, deadline, payload.to_vec()));
            }
        }
        (found.len() as u64) < limit && read < window
    });
    if !found.is_empty() {
        for (removed, (index, _, payload)) in found.iter().enumerate() {
            queue.remove_processing_at(index - removed as u64, payload);
        }
        // Back to the head of ready in deadline order, as one at a time would.
        found.sort_by(|a, b| (a.1, &a.2).cmp(&(b.1, &b.2)));
        for (_, _, payload) in &found {
            queue.push_ready_head(payload);
            leases.set(payload, EXPIRED);
        }
        return (found.len() as u64, found.len() as u64);
    }
    // Nothing due near the head: the due items are deeper (leases of other
    // lengths) or no longer in flight. One at a time.
    let mut requeued = 0;
    let handled = due.len() as u64;
    for payload in due {
        if queue.remove_processing(&payload) {
            queue.push_ready_head(&payload);
            leases.set(&payload, EXPIRED);
            requeued += 1;
        } else {
            leases.remove(&payload);
        }
    }
    (handled, requeued)
}

/// A queue seen by an acknowledgement under leases: taking a payload out
/// of flight also finds it back in ready when its lease ran out there, and
/// the payload's lease entry goes in either case.
pub struct LeaseAwareQueue<'a, Q: QueueStore, L: LeaseStore> {
    /// The queue.
    pub queue: &'a mut Q,
    /// Its leases.
    pub leases: &'a mut L,
}

impl<Q: QueueStore, L: LeaseStore> QueueAppend for LeaseAwareQueue<'_, Q, L> {
    fn ready_len(&self) -> u64 {
        self.queue.ready_len()
    }
    fn deferred_len(&self) -> u64 {
        self.queue.deferred_len()
    }
    fn processing_len(&self) -> u64 {
        self.queue.processing_len()
    }
    fn push_ready(&mut self, payload: &[u8]) {
        self.queue.push_ready(payload);
    }
}

impl<Q: QueueStore, L: LeaseStore> QueueStore for LeaseAwareQueue<'_, Q, L> {
    fn push_ready_head(&mut self, payload: &[u8]) {
        self.queue.push_ready_head(payload);
    }
    fn pop_ready(&mut self) -> Option<Vec<u8>> {
        self.queue.pop_ready()
    }
    fn remove_ready(&mut self, payload: &[u8]) -> bool {
        self.queue.remove_ready(payload)
    }
    fn push_processing(&mut self, payload: &[u8]) {
        self.queue.push_processing(payload);
    }
    fn push_popped_to_processing(&mut self, payload: &[u8]) {
        self.queue.push_popped_to_processing(payload);
    }
    fn remove_processing(&mut self, payload: &[u8]) -> bool {
        let expired = self.leases.score(payload) == Some(EXPIRED);
        if self.queue.remove_processing(payload) {
            self.leases.remove(payload);
            return true;
        }
        if expired && self.queue.remove_ready(payload) {
            self.leases.remove(payload);
            return true;
        }
        false
    }
    fn take_processing(&mut self) -> Vec<Vec<u8>> {
        self.queue.take_processing()
    }
    fn add_deferred(&mut self, score: i64, payload: &[u8]) {
        self.queue.add_deferred(score, payload);
    }
    fn due_deferred(&self, now: i64, limit: u64) -> Vec<Vec<u8>> {
        self.queue.due_deferred(now, limit)
    }
    fn promote(&mut self, payloads: &[Vec<u8>]) {
        self.queue.promote(payloads);
    }
    fn push_dead(&mut self, payload: &[u8]) {
        self.queue.push_dead(payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dreams::ack::{acknowledge, AckOutcome};
    use crate::dreams::memory::{MemoryCounters, MemoryLeases, MemoryQueue};
    use crate::dreams::message::{FireMessage, RegionWriteCounters};
    use crate::dreams::region::RegionKey;
    use crate::dreams::store::RegionStore;
    use crate::dreams::trigger::Trigger;

    fn item(name: &str) -> Vec<u8> {
        name.as_bytes().to_vec()
    }

    #[test]
    fn deadlines_are_validated_and_never_the_marker() {
        assert_eq!(deadline(1_000, 1.5), Some(2_500));
        assert_eq!(deadline(0, 0.0001), Some(1));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, LEASE_SECS_MAX * 2.0] {
            assert_eq!(deadline(1_000, bad), None, "{bad}");
        }
        assert_eq!(deadline(i64::MAX - 5, 10.0), Some(i64::MAX));
    }

    #[test]
    fn an_expired_lease_moves_only_its_item_to_the_head_of_ready() {
        let mut queue = MemoryQueue::default();
        let mut leases = MemoryLeases::default();
        queue.ready = vec![item("r")];
        queue.processing = vec![item("a"), item("b"), item("c")];
        grant(&mut leases, b"a", 100);
        grant(&mut leases, b"b", 300);
        assert_eq!(expire_due(&mut queue, &mut leases, 99, 100), 0);
        assert_eq!(expire_due(&mut queue, &mut leases, 100, 100), 1);
        assert_eq!(queue.ready, vec![item("a"), item("r")]);
        assert_eq!(queue.processing, vec![item("b"), item("c")]);
        assert_eq!(leases.score(b"a"), Some(EXPIRED));
        assert_eq!(leases.earliest(), Some(300));
        // The marker never expires again.
        assert_eq!(expire_due(&mut queue, &mut leases, 1_000_000, 100), 1);
        assert_eq!(queue.ready, vec![item("b"), item("a"), item("r")]);
        assert_eq!(queue.processing, vec![item("c")]);
        assert_eq!(leases.earliest(), None);
    }

    #[test]
    fn a_long_in_flight_list_expires_a_step_at_a_time_head_first_nothing_lost() {
        let mut queue = MemoryQueue::default();
        let mut leases = MemoryLeases::default();
        let items: Vec<Vec<u8>> = (0..500).map(|i| item(&format!("p{i}"))).collect();
        for payload in &items {
            queue.processing.push(payload.clone());
            grant(&mut leases, payload, 10);
        }
        grant(&mut leases, b"orphan", 10);
        queue.processing.push(item("late"));
        grant(&mut leases, b"late", 99);
        let mut steps = 0;
        loop {
            let (handled, back) = expire_due_counted(&mut queue, &mut leases, 10, 100);
            assert!(handled <= 100 && back <= handled);
            if handled == 0 {
                break;
            }
            steps += 1;
        }
        assert_eq!(steps, 6, "five of 100 from the head, then the orphan");
        assert_eq!(queue.processing, vec![item("late")]);
        let mut back = queue.ready.clone();
        back.sort();
        let mut expected = items.clone();
        expected.sort();
        assert_eq!(back, expected);
        // A step's items go to the head in deadline (then member) order.
        let mut last_step: Vec<Vec<u8>> = items[400..].to_vec();
        last_step.sort();
        last_step.reverse();
        assert_eq!(queue.ready[..100].to_vec(), last_step);
        assert_eq!(leases.score(b"orphan"), None);
        assert_eq!(leases.score(&items[7]), Some(EXPIRED));
    }

    #[test]
    fn a_lease_of_an_item_gone_from_flight_is_just_dropped() {
        let mut queue = MemoryQueue::default();
        let mut leases = MemoryLeases::default();
        grant(&mut leases, b"gone", 10);
        assert_eq!(expire_due(&mut queue, &mut leases, 10, 100), 0);
        assert_eq!(leases.score(b"gone"), None);
        assert!(queue.ready.is_empty());
    }

    #[test]
    fn extend_holds_live_leases_only() {
        let mut leases = MemoryLeases::default();
        assert!(!extend(&mut leases, b"a", 50));
        grant(&mut leases, b"a", 10);
        assert!(extend(&mut leases, b"a", 50));
        assert_eq!(leases.earliest(), Some(50));
        leases.set(b"a", EXPIRED);
        assert!(!extend(&mut leases, b"a", 90));
        assert_eq!(leases.score(b"a"), Some(EXPIRED));
    }

    #[test]
    fn the_due_limit_bounds_one_round() {
        let mut queue = MemoryQueue::default();
        let mut leases = MemoryLeases::default();
        for i in 0..5 {
            let name = format!("p{i}");
            queue.processing.push(item(&name));
            grant(&mut leases, name.as_bytes(), 10 + i);
        }
        assert_eq!(expire_due(&mut queue, &mut leases, 100, 2), 2);
        assert_eq!(expire_due(&mut queue, &mut leases, 100, 10), 3);
        assert!(queue.processing.is_empty());
    }

    fn counted_fire() -> (FireMessage, Vec<u8>) {
        let message = FireMessage {
            region: RegionKey::new("o", "p", 1),
            fired_by: "n".into(),
            fired_at: Some(RegionWriteCounters {
                memories_since_last_cycle: 5,
                edges_since_last_cycle: 0,
                seconds_since_last_cycle: 0,
            }),
            fire_id: Some("f1".into()),
            queued_payload: None,
            quiet_deferred: false,
        };
        let payload = message.to_payload().into_bytes();
        (message, payload)
    }

    fn trigger() -> Trigger {
        Trigger { memory_threshold: 1_000, edge_threshold: 1_000, min_interval_secs: 3_600, age_floor_secs: 1_000_000 }
    }

    fn ack(
        queue: &mut MemoryQueue,
        leases: &mut MemoryLeases,
        counters: &mut MemoryCounters,
        message: &FireMessage,
        payload: &[u8],
    ) -> AckOutcome {
        let mut aware = LeaseAwareQueue { queue, leases };
        acknowledge(&mut aware, counters, message.borrowed(), payload, true, "n", &trigger(), 1_000, 1_000, || {
            "f2".into()
        })
        .outcome
    }

    #[test]
    fn a_late_ack_of_an_expired_fire_back_in_ready_is_honoured_once() {
        let (message, payload) = counted_fire();
        let mut queue = MemoryQueue::default();
        let mut leases = MemoryLeases::default();
        let mut counters = MemoryCounters::default();
        counters.set_counts(7, 0, None);
        counters.set_pending("f1");
        queue.processing = vec![payload.clone()];
        grant(&mut leases, &payload, 10);
        expire_due(&mut queue, &mut leases, 10, 100);
        assert_eq!(queue.ready, vec![payload.clone()]);
        assert_eq!(ack(&mut queue, &mut leases, &mut counters, &message, &payload), AckOutcome::Acknowledged);
        assert!(queue.ready.is_empty(), "the work is not handed out again");
        assert_eq!(counters.counters().memories, Some(2));
        assert_eq!(leases.score(&payload), None);
        assert_eq!(ack(&mut queue, &mut leases, &mut counters, &message, &payload), AckOutcome::Stale);
        assert_eq!(counters.counters().memories, Some(2), "subtracted once");
    }

    #[test]
    fn a_late_ack_of_a_re_leased_fire_makes_the_second_holders_ack_stale() {
        let (message, payload) = counted_fire();
        let mut queue = MemoryQueue::default();
        let mut leases = MemoryLeases::default();
        let mut counters = MemoryCounters::default();
        counters.set_counts(7, 0, None);
        counters.set_pending("f1");
        queue.processing = vec![payload.clone()];
        grant(&mut leases, &payload, 10);
        expire_due(&mut queue, &mut leases, 10, 100);
        // A second worker drains it under a new lease.
        let again = queue.pop_ready().unwrap();
        queue.push_processing(&again);
        grant(&mut leases, &again, 500);
        assert_eq!(ack(&mut queue, &mut leases, &mut counters, &message, &payload), AckOutcome::Acknowledged);
        assert!(queue.processing.is_empty());
        assert_eq!(leases.earliest(), None);
        assert_eq!(ack(&mut queue, &mut leases, &mut counters, &message, &payload), AckOutcome::Stale);
        assert_eq!(counters.counters().memories, Some(2));
    }

    #[test]
    fn without_a_marker_an_ack_never_touches_ready() {
        let (message, payload) = counted_fire();
        let mut queue = MemoryQueue::default();
        let mut leases = MemoryLeases::default();
        let mut counters = MemoryCounters::default();
        counters.set_pending("f1");
        queue.ready = vec![payload.clone()];
        assert_eq!(ack(&mut queue, &mut leases, &mut counters, &message, &payload), AckOutcome::Acknowledged);
        assert_eq!(queue.ready, vec![payload], "the seed's behaviour without leases");
    }
}
