//! Leases on in-flight fires ([`crate::lease`]): a drained item may carry
//! a deadline; when it passes without an acknowledgement, that one item
//! goes back to the head of ready (it runs next) and nothing else in
//! flight moves. The lease member is the payload itself; a late
//! acknowledgement of an expired fire still finds and removes it in ready
//! ([`LeaseAwareQueue`]).

use std::borrow::Cow;

use super::message::PayloadBuffer;
use super::store::{QueueAppend, QueueStore};
use crate::lease::expiry::{self, Expired, InFlight};
use crate::lease::{LeaseStore, EXPIRED};

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
    expiry::expire_due(&mut InFlightFires(queue), leases, now_ms, limit)
}

/// An organization's in-flight list under leases: each payload is its own
/// lease member; expired payloads go back to the head of ready in deadline
/// order, one after another.
struct InFlightFires<'a, Q: QueueStore>(&'a mut Q);

impl<Q: QueueStore> InFlight for InFlightFires<'_, Q> {
    fn lease_member(item: &[u8]) -> Option<Cow<'_, [u8]>> {
        Some(Cow::Borrowed(item))
    }
    fn scan(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        self.0.scan_processing(visit);
    }
    fn remove_at(&mut self, index: u64, item: &[u8]) {
        self.0.remove_processing_at(index, item);
    }
    fn requeue(&mut self, mut expired: Vec<Expired>, mark: &mut dyn FnMut(&[u8])) {
        // Back to the head of ready in deadline order, as one at a time would.
        expired.sort_by(|a, b| (a.deadline, &a.item).cmp(&(b.deadline, &b.item)));
        for expired in &expired {
            self.0.push_ready_head(&expired.item);
            mark(&expired.member);
        }
    }
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
    fn take_payload_buffer(&mut self) -> PayloadBuffer {
        self.queue.take_payload_buffer()
    }
    fn keep_payload_buffer(&mut self, buffer: PayloadBuffer) {
        self.queue.keep_payload_buffer(buffer);
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
    fn scan_processing(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool) {
        self.queue.scan_processing(visit);
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
    use crate::dreams::memory::{MemoryCounters, MemoryQueue};
    use crate::dreams::message::{FireMessage, RegionWriteCounters};
    use crate::dreams::region::RegionKey;
    use crate::dreams::store::RegionStore;
    use crate::dreams::trigger::Trigger;
    use crate::lease::memory::MemoryLeases;
    use crate::lease::{grant, LeaseStore};

    fn item(name: &str) -> Vec<u8> {
        name.as_bytes().to_vec()
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
    fn due_items_beyond_the_window_go_back_in_deadline_order() {
        let mut queue = MemoryQueue::default();
        let mut leases = MemoryLeases::default();
        queue.processing = (0..200).map(|i| item(&format!("p{i:03}"))).collect();
        grant(&mut leases, b"p150", 20);
        grant(&mut leases, b"p120", 30);
        grant(&mut leases, b"p199", 20);
        grant(&mut leases, b"gone", 10);
        assert_eq!(expire_due_counted(&mut queue, &mut leases, 30, 10), (4, 3));
        // As one at a time in deadline (then member) order would leave them.
        assert_eq!(queue.ready, vec![item("p120"), item("p199"), item("p150")]);
        assert_eq!(queue.processing.len(), 197);
        assert!(!queue.processing.contains(&item("p150")));
        assert_eq!(leases.score(b"p199"), Some(EXPIRED));
        assert_eq!(leases.score(b"gone"), None);
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
