//! Enqueueing under the hard ceiling (R-Dr15): ready + deferred + in-flight
//! never exceed the queue maximum; at the ceiling the newest fire is dropped
//! and existing work is untouched.

use super::message::{with_payload, FireIdText, RegionWriteCounters};
use super::region::RegionRef;
use super::store::{QueueAppend, RegionStore};

/// The default ceiling over ready + deferred + in-flight items.
pub const DREAMS_QUEUE_MAX: u64 = 1000;

/// The outcome (its reply word defined by the protocol, which the client
/// reads it with).
pub use dreamtown_protocol::reply::dreams::FireOutcome;

/// An explicit fire: a region payload without a counter snapshot.
pub fn fire(
    queue: &mut impl QueueAppend,
    region: RegionRef<'_>,
    fired_by: &str,
    fire_id: FireIdText<'_>,
    queue_max: u64,
) -> FireOutcome {
    if queue.total_len() >= queue_max {
        return FireOutcome::Dropped;
    }
    push_payload(queue, region, fired_by, None, fire_id);
    FireOutcome::Queued
}

/// Make `fire_id` the region's one pending fire and queue its snapshot,
/// unless the ceiling is reached. Whether it was queued.
pub(crate) fn enqueue_counted(
    queue: &mut impl QueueAppend,
    counters: &mut impl RegionStore,
    region: RegionRef<'_>,
    fired_by: &str,
    snapshot: RegionWriteCounters,
    fire_id: String,
    queue_max: u64,
) -> bool {
    if queue.total_len() >= queue_max {
        return false;
    }
    counters.set_pending(&fire_id);
    push_payload(queue, region, fired_by, Some(snapshot), FireIdText::Text(&fire_id));
    true
}

/// Append a fire's payload to the ready list, written in the queue's
/// payload buffer.
fn push_payload(
    queue: &mut impl QueueAppend,
    region: RegionRef<'_>,
    fired_by: &str,
    fired_at: Option<RegionWriteCounters>,
    fire_id: FireIdText<'_>,
) {
    let mut buffer = queue.take_payload_buffer();
    with_payload(&mut buffer, region, fired_by, fired_at, Some(fire_id), false, |payload| queue.push_ready(payload));
    queue.keep_payload_buffer(buffer);
}

/// A counter value as the snapshot's `u32`.
pub(crate) fn snapshot_count(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dreams::memory::MemoryQueue;
    use crate::dreams::region::RegionKey;
    use crate::dreams::store::QueueStore;

    #[test]
    fn fires_below_the_ceiling_and_drops_at_it() {
        let mut queue = MemoryQueue::default();
        let region = RegionKey::new("o", "p", 1);
        assert_eq!(fire(&mut queue, region.borrowed(), "n", FireIdText::Text("a"), 2), FireOutcome::Queued);
        queue.processing.push(b"in-flight".to_vec());
        assert_eq!(fire(&mut queue, region.borrowed(), "n", FireIdText::Text("b"), 2), FireOutcome::Dropped);
        assert_eq!(queue.ready.len(), 1);
        let payload = String::from_utf8(queue.ready[0].clone()).unwrap();
        assert_eq!(payload, r#"{"region":{"org":"o","project":"p","memory_type":1},"fired_by":"n","fire_id":"a"}"#);
    }

    #[test]
    fn the_reply_words_agree() {
        for outcome in [FireOutcome::Queued, FireOutcome::Dropped] {
            assert_eq!(outcome.as_c_str().to_str().unwrap(), outcome.as_str());
        }
    }

    #[test]
    fn deferred_items_count_against_the_ceiling() {
        let mut queue = MemoryQueue::default();
        queue.add_deferred(0, b"later");
        let region = RegionKey::new("o", "p", 1);
        assert_eq!(fire(&mut queue, region.borrowed(), "n", FireIdText::Text("a"), 1), FireOutcome::Dropped);
    }
}
