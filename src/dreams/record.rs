//! Recording writes against a region's shared counters: saturating
//! accumulation, idempotency by event identity and settled generation, and
//! the decision to create the region's one pending fire.

use super::fire::{enqueue_counted, snapshot_count};
use super::message::RegionWriteCounters;
use super::region::RegionRef;
use super::store::{QueueAppend, RegionCounters, RegionStore};
use super::trigger::{Trigger, COUNTER_MAX};

/// A durable effect's identity and its claim generation (positive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery<'a> {
    /// Stable effect identity.
    pub event_id: &'a [u8],
    /// Monotonic claim generation, at least 1.
    pub generation: i64,
}

/// The outcome (its reply word defined by the protocol, which the client
/// reads it with).
pub use dreamtown_protocol::reply::dreams::RecordOutcome;

/// A record's outcome and the region's counters after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// What happened.
    pub outcome: RecordOutcome,
    /// `memories` after the write.
    pub memories: i64,
    /// `edges` after the write.
    pub edges: i64,
    /// The write was already counted (replayed event or settled generation).
    pub deduplicated: bool,
}

/// One write to record.
#[derive(Clone, Copy, Debug)]
pub struct Write<'a> {
    /// Memories written.
    pub memories: u64,
    /// Edges written.
    pub edges: u64,
    /// Identity for exactly-once counting; `None` counts every call.
    pub delivery: Option<Delivery<'a>>,
}

/// Would `write`, if counted now, create the region's pending fire? The
/// decision [`record`] takes, made from what was read before anything is
/// written, so that a caller opens (type-checks, ACL-checks) the queue only
/// on the path that uses it. A write whose event identity turns out to be
/// already counted does not fire even when this says it would.
pub fn fire_due(current: &RegionCounters, write: &Write<'_>, trigger: &Trigger, now: i64) -> bool {
    fire_due_unless_pending(current, write, trigger, now) && current.pending.is_none()
}

/// [`fire_due`] but for the region's pending fire: whether the write would
/// fire if the region had none. Only then does the pending fire matter, so a
/// store may read it only then (it is never validated, so reading it later
/// changes no reply).
pub fn fire_due_unless_pending(current: &RegionCounters, write: &Write<'_>, trigger: &Trigger, now: i64) -> bool {
    if let Some(delivery) = write.delivery {
        if delivery.generation <= current.settled_generation.unwrap_or(0) {
            return false;
        }
    }
    let memories = saturating_add(current.memories.unwrap_or(0), write.memories);
    let edges = saturating_add(current.edges.unwrap_or(0), write.edges);
    let elapsed = now.saturating_sub(current.last_success.unwrap_or(now)).max(0);
    trigger.interval_passed(elapsed) && trigger.threshold_met(memories, edges, elapsed)
}

/// Record a write (the seed's RECORD_WRITE script). `queue` is needed only
/// when [`fire_due`] holds for the same inputs: the caller opens it then
/// (and may pass `None` otherwise).
#[allow(clippy::too_many_arguments)]
pub fn record<Q: QueueAppend>(
    queue: Option<&mut Q>,
    counters: &mut impl RegionStore,
    region: RegionRef<'_>,
    write: Write<'_>,
    fired_by: &str,
    trigger: &Trigger,
    now: i64,
    queue_max: u64,
    new_fire_id: impl FnOnce() -> String,
) -> Recorded {
    let current = counters.counters();
    let due = fire_due(current, &write, trigger, now);
    let memories_before = current.memories.unwrap_or(0);
    let edges_before = current.edges.unwrap_or(0);
    let settled = current.settled_generation.unwrap_or(0);
    let last_success = current.last_success;
    if let Some(delivery) = write.delivery {
        // Remembering the event is the first write of a counted record, so
        // it doubles as the seen-before test.
        if delivery.generation <= settled || !counters.remember_event(delivery.event_id) {
            return Recorded {
                outcome: RecordOutcome::Accumulated,
                memories: memories_before,
                edges: edges_before,
                deduplicated: true,
            };
        }
    }
    let memories = saturating_add(memories_before, write.memories);
    let edges = saturating_add(edges_before, write.edges);
    let first_success = if last_success.is_none() { Some(now) } else { None };
    counters.set_counts(memories, edges, first_success);
    let elapsed = now.saturating_sub(last_success.unwrap_or(now)).max(0);
    let accumulated = Recorded { outcome: RecordOutcome::Accumulated, memories, edges, deduplicated: false };
    // `fire_due` is the whole decision; the queue is there exactly when it holds.
    let (true, Some(queue)) = (due, queue) else {
        return accumulated;
    };
    let snapshot = RegionWriteCounters {
        memories_since_last_cycle: snapshot_count(memories),
        edges_since_last_cycle: snapshot_count(edges),
        seconds_since_last_cycle: elapsed as u64,
    };
    let outcome = if enqueue_counted(queue, counters, region, fired_by, snapshot, new_fire_id(), queue_max) {
        RecordOutcome::Queued
    } else {
        RecordOutcome::Dropped
    };
    Recorded { outcome, ..accumulated }
}

fn saturating_add(current: i64, added: u64) -> i64 {
    let added = i64::try_from(added).unwrap_or(i64::MAX);
    current.saturating_add(added).min(COUNTER_MAX)
}

/// Settle an effect identity once its outbox row is acknowledged (the
/// seed's SETTLE_WRITE script): raise `settled_generation` monotonically and
/// forget the identity unless `retain`.
pub fn settle(counters: &mut impl RegionStore, event_id: &[u8], generation: i64, retain: bool) {
    let current = counters.counters().settled_generation.unwrap_or(0);
    if generation > current {
        counters.set_settled_generation(generation);
    }
    if !retain {
        counters.forget_event(event_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dreams::memory::{MemoryCounters, MemoryQueue};
    use crate::dreams::region::RegionKey;

    const NOW: i64 = 1_000_000;

    #[test]
    fn the_reply_words_agree() {
        for outcome in [RecordOutcome::Accumulated, RecordOutcome::Queued, RecordOutcome::Dropped] {
            assert_eq!(outcome.as_c_str().to_str().unwrap(), outcome.as_str());
        }
    }

    fn trigger(memories: u64, min_interval: u64) -> Trigger {
        Trigger {
            memory_threshold: memories,
            edge_threshold: 1_000,
            min_interval_secs: min_interval,
            age_floor_secs: 1_000_000,
        }
    }

    fn write(memories: u64) -> Write<'static> {
        Write { memories, edges: 0, delivery: None }
    }

    fn run(
        queue: &mut MemoryQueue,
        counters: &mut MemoryCounters,
        write: Write<'_>,
        trigger: &Trigger,
        now: i64,
    ) -> Recorded {
        let region = RegionKey::new("o", "p", 1);
        record(Some(queue), counters, region.borrowed(), write, "n", trigger, now, 1000, || "fire-1".into())
    }

    #[test]
    fn first_record_never_fires_while_min_interval_is_positive() {
        let (mut queue, mut counters) = Default::default();
        let result = run(&mut queue, &mut counters, write(100), &trigger(1, 60), NOW);
        assert_eq!(result.outcome, RecordOutcome::Accumulated);
        assert_eq!(counters.fields.last_success, Some(NOW), "first write sets last_success");
        let later = run(&mut queue, &mut counters, write(1), &trigger(1, 60), NOW + 60);
        assert_eq!(later.outcome, RecordOutcome::Queued);
        assert_eq!(later.memories, 101);
        assert_eq!(counters.fields.pending.as_deref(), Some(&b"fire-1"[..]));
        let payload = String::from_utf8(queue.ready[0].clone()).unwrap();
        assert!(payload.contains(r#""fired_at":{"memories_since_last_cycle":101,"edges_since_last_cycle":0,"seconds_since_last_cycle":60}"#), "{payload}");
    }

    #[test]
    fn one_pending_fire_per_region() {
        let (mut queue, mut counters) = Default::default();
        let t = trigger(1, 0);
        assert_eq!(run(&mut queue, &mut counters, write(1), &t, NOW).outcome, RecordOutcome::Queued);
        assert_eq!(run(&mut queue, &mut counters, write(1), &t, NOW).outcome, RecordOutcome::Accumulated);
        assert_eq!(queue.ready.len(), 1);
        assert_eq!(counters.fields.memories, Some(2));
    }

    #[test]
    fn below_threshold_accumulates() {
        let (mut queue, mut counters) = Default::default();
        let t = trigger(10, 0);
        let result = run(&mut queue, &mut counters, write(9), &t, NOW);
        assert_eq!(result.outcome, RecordOutcome::Accumulated);
        assert!(queue.ready.is_empty());
    }

    #[test]
    fn age_floor_zero_fires_on_every_record_without_pending() {
        let (mut queue, mut counters) = Default::default();
        let t = Trigger { memory_threshold: 1_000, edge_threshold: 1_000, min_interval_secs: 0, age_floor_secs: 0 };
        assert_eq!(run(&mut queue, &mut counters, write(0), &t, NOW).outcome, RecordOutcome::Queued);
    }

    #[test]
    fn counters_saturate() {
        let (mut queue, mut counters) = Default::default();
        let t = trigger(u64::MAX, 0);
        run(&mut queue, &mut counters, write(u64::from(u32::MAX)), &t, NOW);
        let result = run(&mut queue, &mut counters, write(5), &t, NOW);
        assert_eq!(result.memories, COUNTER_MAX);
    }

    #[test]
    fn full_queue_drops_but_keeps_counters() {
        let (mut queue, mut counters): (MemoryQueue, MemoryCounters) = Default::default();
        let region = RegionKey::new("o", "p", 1);
        queue.ready.push(b"x".to_vec());
        let result =
            record(Some(&mut queue), &mut counters, region.borrowed(), write(3), "n", &trigger(1, 0), NOW, 1, || {
                "f".into()
            });
        assert_eq!(result.outcome, RecordOutcome::Dropped);
        assert_eq!(counters.fields.memories, Some(3));
        assert_eq!(counters.fields.pending, None);
    }

    #[test]
    fn events_count_once_and_settled_generations_are_ignored() {
        let (mut queue, mut counters) = Default::default();
        let t = trigger(100, 0);
        let once =
            |generation| Write { memories: 2, edges: 1, delivery: Some(Delivery { event_id: b"e1", generation }) };
        assert_eq!(run(&mut queue, &mut counters, once(1), &t, NOW).memories, 2);
        let replay = run(&mut queue, &mut counters, once(1), &t, NOW);
        assert_eq!((replay.outcome, replay.memories, replay.edges), (RecordOutcome::Accumulated, 2, 1));
        assert!(replay.deduplicated);
        settle(&mut counters, b"e1", 5, false);
        assert!(!counters.events.contains(b"e1".as_slice()));
        assert_eq!(run(&mut queue, &mut counters, once(5), &t, NOW).memories, 2, "generation <= settled");
        assert_eq!(run(&mut queue, &mut counters, once(6), &t, NOW).memories, 4);
    }

    /// The command opens the queue only when `fire_due` says so: it must be
    /// exactly the condition under which `record` fires (or drops).
    #[test]
    fn fire_due_is_the_decision_record_takes() {
        let mut random = crate::test_random::Random::new(0x2545_f491_4f6c_dd1d);
        let mut next = move |n: u64| random.next() % n;
        let pick = |v: u64, options: &[Option<i64>]| options[(v % options.len() as u64) as usize];
        let values = [None, Some(0), Some(5), Some(COUNTER_MAX), Some(COUNTER_MAX - 1)];
        let times = [None, Some(NOW), Some(NOW - 59), Some(NOW - 60), Some(NOW + 5), Some(0)];
        let (mut fired, mut quiet) = (0, 0);
        for _ in 0..20_000 {
            let mut counters = MemoryCounters::default();
            counters.fields.memories = pick(next(99), &values);
            counters.fields.edges = pick(next(99), &values);
            counters.fields.last_success = pick(next(99), &times);
            counters.fields.settled_generation = pick(next(99), &[None, Some(0), Some(2)]);
            if next(4) == 0 {
                counters.fields.pending = Some(b"p".to_vec());
            }
            if next(3) == 0 {
                counters.events.insert(b"e".to_vec());
            }
            let write = Write {
                memories: [0, 1, 9, u64::from(u32::MAX)][next(4) as usize],
                edges: [0, 1, 9][next(3) as usize],
                delivery: (next(2) == 0).then(|| Delivery { event_id: b"e", generation: 1 + next(3) as i64 }),
            };
            let t = Trigger {
                memory_threshold: next(12),
                edge_threshold: next(12),
                min_interval_secs: [0, 60, u64::MAX][next(3) as usize],
                age_floor_secs: [0, 30, u64::MAX][next(3) as usize],
            };
            let due = fire_due(&counters.fields, &write, &t, NOW);
            let seen = write.delivery.is_some() && counters.events.contains(b"e".as_slice());
            let mut queue = MemoryQueue::default();
            let region = RegionKey::new("o", "p", 1);
            let result =
                record(Some(&mut queue), &mut counters, region.borrowed(), write, "n", &t, NOW, 1000, || "f".into());
            let fires = result.outcome != RecordOutcome::Accumulated;
            assert_eq!(fires, due && !seen, "{write:?} {t:?} -> {result:?}");
            if fires {
                fired += 1
            } else {
                quiet += 1
            }
        }
        assert!(fired > 1_000 && quiet > 1_000, "{fired} {quiet}");
    }

    #[test]
    fn settle_is_monotonic_and_can_retain() {
        let mut counters = MemoryCounters::default();
        counters.events.insert(b"e".to_vec());
        settle(&mut counters, b"e", 7, true);
        settle(&mut counters, b"e", 3, true);
        assert_eq!(counters.fields.settled_generation, Some(7));
        assert!(counters.events.contains(b"e".as_slice()));
    }
}
