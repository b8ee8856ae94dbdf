//! Draining: promote due quiet-hours deferrals, move the head of the ready
//! list in flight, and apply the quiet-hours rule, repeating as successive
//! seed drains would until an item should run. Ready items that are not
//! fire messages of this organization become dead letters instead of
//! stranding in flight. Recovery hands every in-flight item back.

use super::message::ReadFire;
use super::quiet::QuietHours;
use super::store::QueueStore;

/// How a drain decides about quiet hours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainPolicy {
    /// The window and its offset.
    pub quiet: QuietHours,
    /// At or above this backlog, quiet hours stop reordering.
    pub backlog_min: u64,
    /// The queue ceiling, which also bounds promotion.
    pub queue_max: u64,
}

/// What one drain did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// The payload that should run now, moved in flight.
    pub ready: Option<Vec<u8>>,
    /// Deferred items promoted back to ready.
    pub promoted: u64,
    /// Items marked and moved behind other work.
    pub quiet_deferred: u64,
    /// Items moved to the dead-letter list.
    pub dead_lettered: u64,
    /// Stopped at the bound on items passed over ([`SKIP_MAX`]) with
    /// ready not yet looked at: the next drain goes on.
    pub stopped: bool,
}

/// Items one call may pass over (dead-letter or defer for quiet hours)
/// before it stops: a ready list of 200,000 garbage items is cleared
/// a few hundred per call, never in one step that grows with it.
pub const SKIP_MAX: u64 = 256;

/// Move deferred items due at `now` to the tail of ready, at most until
/// ready holds `queue_max` items (the seed's PROMOTE_DEFERRED script).
pub fn promote_due(queue: &mut impl QueueStore, now: i64, queue_max: u64) -> u64 {
    let room = queue_max.saturating_sub(queue.ready_len());
    if room == 0 {
        return 0;
    }
    let mut due = queue.due_deferred(now, queue_max);
    due.truncate(usize::try_from(room).unwrap_or(usize::MAX));
    if due.is_empty() {
        return 0;
    }
    queue.promote(&due);
    due.len() as u64
}

/// Drain once for `org` at `now`, passing over any number of items.
pub fn drain(queue: &mut impl QueueStore, org: &str, now: i64, policy: &DrainPolicy) -> Drained {
    let mut unbounded = u64::MAX;
    drain_bounded(queue, org, now, policy, &mut unbounded)
}

/// Drain once for `org` at `now`, passing over (dead-lettering, deferring)
/// at most `skip_left` items, which it lowers by those it passed over;
/// at zero it stops ([`Drained::stopped`]) before looking at the next.
pub fn drain_bounded(
    queue: &mut impl QueueStore,
    org: &str,
    now: i64,
    policy: &DrainPolicy,
    skip_left: &mut u64,
) -> Drained {
    let mut drained = Drained::default();
    let local_hour = policy.quiet.local_hour(now);
    loop {
        if *skip_left == 0 {
            drained.stopped = queue.ready_len() > 0;
            return drained;
        }
        drained.promoted += promote_due(queue, now, policy.queue_max);
        let Some(payload) = queue.pop_ready() else {
            return drained;
        };
        // Read in place: the message is copied out only to be marked.
        let read = ReadFire::read(&payload);
        let Some(fire) = read.as_ref().map(ReadFire::get).filter(|fire| fire.region.org == org) else {
            queue.push_dead(&payload);
            drained.dead_lettered += 1;
            *skip_left -= 1;
            continue;
        };
        // The other work is counted only inside the window: outside it (and
        // with NOQUIET) nothing is reordered, whatever the backlog.
        if !fire.quiet_deferred
            && policy.quiet.contains(local_hour)
            && policy.quiet.should_reorder(
                local_hour,
                queue.ready_len().saturating_add(queue.deferred_len()),
                policy.backlog_min,
            )
        {
            let mut message = fire.to_message();
            message.quiet_deferred = true;
            // The seed moves the item in flight and then takes it back out
            // with `LREM processing 1`, which removes the *first* equal
            // payload: an older identical copy in flight, if there is one,
            // so that copy ends up at the tail. Do the same.
            if queue.remove_processing(&payload) {
                queue.push_processing(&payload);
            }
            queue.add_deferred(now, message.to_payload().as_bytes());
            drained.quiet_deferred += 1;
            *skip_left -= 1;
            continue;
        }
        queue.push_popped_to_processing(&payload);
        drained.ready = Some(payload);
        return drained;
    }
}

/// Hand every in-flight item back to the tail of ready (the seed's
/// RECOVER_INFLIGHT script). How many moved.
pub fn recover(queue: &mut impl QueueStore) -> u64 {
    let payloads = queue.take_processing();
    for payload in &payloads {
        queue.push_ready(payload);
    }
    payloads.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dreams::memory::MemoryQueue;
    use crate::dreams::message::FireMessage;
    use crate::dreams::region::RegionKey;
    use crate::dreams::store::QueueAppend;

    /// 03:00 UTC on day 20000: inside the default window.
    const QUIET_NOW: i64 = 20_000 * 86_400 + 3 * 3_600;
    /// 12:00 UTC: outside it.
    const DAY_NOW: i64 = 20_000 * 86_400 + 12 * 3_600;

    fn policy() -> DrainPolicy {
        DrainPolicy { quiet: QuietHours::default(), backlog_min: 32, queue_max: 1000 }
    }

    fn item(project: &str) -> Vec<u8> {
        FireMessage {
            region: RegionKey::new("o", project, 1),
            fired_by: "n".into(),
            fired_at: None,
            fire_id: Some(project.into()),
            queued_payload: None,
            quiet_deferred: false,
        }
        .to_payload()
        .into_bytes()
    }

    fn project_of(payload: &[u8]) -> String {
        FireMessage::parse(payload).unwrap().region.project
    }

    #[test]
    fn a_drain_passes_over_a_bounded_number_and_the_next_goes_on() {
        let mut queue =
            MemoryQueue { ready: (0..10).map(|n| format!("garbage {n}").into_bytes()).collect(), ..Default::default() };
        queue.ready.push(item("p"));
        let mut left = 4;
        let drained = drain_bounded(&mut queue, "o", DAY_NOW, &policy(), &mut left);
        assert_eq!((drained.ready, drained.dead_lettered, drained.stopped, left), (None, 4, true, 0));
        assert_eq!(queue.ready.len(), 7);
        let mut left = 100;
        let drained = drain_bounded(&mut queue, "o", DAY_NOW, &policy(), &mut left);
        assert_eq!((drained.ready, drained.dead_lettered, drained.stopped), (Some(item("p")), 6, false));
        assert_eq!(queue.dead.len(), 10);
    }

    #[test]
    fn outside_quiet_hours_the_head_runs() {
        let mut queue = MemoryQueue { ready: vec![item("a"), item("b")], ..Default::default() };
        let drained = drain(&mut queue, "o", DAY_NOW, &policy());
        assert_eq!(project_of(&drained.ready.unwrap()), "a");
        assert_eq!(queue.processing, vec![item("a")]);
        assert_eq!(queue.ready, vec![item("b")]);
    }

    #[test]
    fn a_lone_item_runs_even_in_quiet_hours() {
        let mut queue = MemoryQueue { ready: vec![item("a")], ..Default::default() };
        let drained = drain(&mut queue, "o", QUIET_NOW, &policy());
        assert_eq!(drained.ready, Some(item("a")));
        assert_eq!(drained.quiet_deferred, 0);
    }

    #[test]
    fn two_unmarked_items_are_both_marked_and_the_first_comes_back() {
        let mut queue = MemoryQueue { ready: vec![item("a"), item("b")], ..Default::default() };
        let drained = drain(&mut queue, "o", QUIET_NOW, &policy());
        let ready = drained.ready.unwrap();
        let message = FireMessage::parse(&ready).unwrap();
        assert_eq!(message.region.project, "a");
        assert!(message.quiet_deferred);
        assert_eq!(drained.quiet_deferred, 2);
        assert_eq!(queue.ready.len(), 1);
        assert!(FireMessage::parse(&queue.ready[0]).unwrap().quiet_deferred);
        assert_eq!(queue.deferred_len(), 0);
    }

    #[test]
    fn deferring_moves_an_identical_in_flight_copy_to_the_tail_as_the_seed_does() {
        let mut queue = MemoryQueue {
            processing: vec![item("a"), item("x")],
            ready: vec![item("a"), item("b")],
            ..Default::default()
        };
        let drained = drain(&mut queue, "o", QUIET_NOW, &policy());
        assert_eq!(project_of(&drained.ready.unwrap()), "a");
        assert_eq!(queue.processing.len(), 3);
        assert_eq!(queue.processing[0], item("x"), "the older copy of 'a' moved behind 'x'");
        assert_eq!(queue.processing[1], item("a"));
    }

    #[test]
    fn a_large_backlog_runs_in_quiet_hours() {
        let mut queue = MemoryQueue { ready: (0..32).map(|i| item(&format!("p{i}"))).collect(), ..Default::default() };
        let drained = drain(&mut queue, "o", QUIET_NOW, &policy());
        assert_eq!(project_of(&drained.ready.unwrap()), "p0");
        assert_eq!(drained.quiet_deferred, 0);
    }

    #[test]
    fn foreign_and_corrupt_items_become_dead_letters() {
        let mut queue = MemoryQueue::default();
        let foreign = FireMessage::parse(&item("x"))
            .map(|mut m| {
                m.region.org = "other".into();
                m.to_payload().into_bytes()
            })
            .unwrap();
        queue.ready = vec![b"garbage".to_vec(), foreign.clone(), item("a")];
        let drained = drain(&mut queue, "o", DAY_NOW, &policy());
        assert_eq!(drained.ready, Some(item("a")));
        assert_eq!(drained.dead_lettered, 2);
        assert_eq!(queue.dead, vec![b"garbage".to_vec(), foreign]);
        assert_eq!(queue.processing, vec![item("a")]);
    }

    #[test]
    fn empty_queue_drains_nothing() {
        let mut queue = MemoryQueue::default();
        assert_eq!(drain(&mut queue, "o", DAY_NOW, &policy()), Drained::default());
    }

    #[test]
    fn due_deferrals_are_promoted_first_and_future_ones_wait() {
        let mut queue = MemoryQueue::default();
        queue.add_deferred(DAY_NOW - 10, &item("old"));
        queue.add_deferred(DAY_NOW + 10, &item("future"));
        queue.ready = vec![item("a")];
        let drained = drain(&mut queue, "o", DAY_NOW, &policy());
        assert_eq!(drained.promoted, 1);
        assert_eq!(project_of(&drained.ready.unwrap()), "a");
        assert_eq!(queue.ready, vec![item("old")]);
        assert_eq!(queue.deferred_len(), 1);
    }

    #[test]
    fn promotion_stops_at_the_ceiling() {
        let mut queue = MemoryQueue { ready: vec![item("a")], ..Default::default() };
        queue.add_deferred(0, &item("d1"));
        queue.add_deferred(0, &item("d2"));
        assert_eq!(promote_due(&mut queue, DAY_NOW, 2), 1);
        assert_eq!(queue.ready.len(), 2);
        assert_eq!(promote_due(&mut queue, DAY_NOW, 2), 0);
    }

    #[test]
    fn recover_moves_everything_in_flight_back_in_order() {
        let mut queue =
            MemoryQueue { ready: vec![item("r")], processing: vec![item("a"), item("b")], ..Default::default() };
        assert_eq!(recover(&mut queue), 2);
        assert_eq!(queue.ready, vec![item("r"), item("a"), item("b")]);
        assert!(queue.processing.is_empty());
    }
}
