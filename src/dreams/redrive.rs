//! Moving dead letters back (`DREAMS.REDRIVE`): an item the drain found
//! not to be a fire message of its organization went to the dead-letter
//! list; once it reads as one (a payload repaired in place, a module
//! version that reads a newer message), it can run. A redrive looks at the
//! oldest dead items, up to a count: each fire message of the organization
//! moves to the tail of ready, each other item to the tail of the
//! dead-letter list (so that the next redrive looks at the following
//! ones, and nothing that would only die again is queued). It stops at
//! the queue ceiling, as adding work does.

use super::message::ReadFire;
use super::store::DeadLetters;

/// What one redrive did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Redriven {
    /// Fire messages of the organization moved to ready.
    pub moved: u64,
    /// Items that are not, moved to the dead-letter list's tail.
    pub kept: u64,
    /// It stopped at the ceiling with dead items not looked at.
    pub at_ceiling: bool,
}

/// Is `payload` something a drain of `org` would hand out (not dead-letter)?
pub fn is_fire_of(payload: &[u8], org: &str) -> bool {
    ReadFire::read(payload).is_some_and(|fire| fire.get().region.org == org)
}

/// Look at up to `count` dead items of `org`, oldest first (each at most
/// once), moving the fire messages back while ready + deferred + in
/// flight stays under `queue_max`.
pub fn redrive(queue: &mut impl DeadLetters, org: &str, count: u64, queue_max: u64) -> Redriven {
    let mut done = Redriven::default();
    let looked_at = count.min(queue.dead_len());
    for _ in 0..looked_at {
        if queue.total_len() >= queue_max {
            done.at_ceiling = true;
            break;
        }
        match queue.move_dead_head(&mut |payload| is_fire_of(payload, org)) {
            Some(true) => done.moved += 1,
            Some(false) => done.kept += 1,
            None => break,
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dreams::memory::MemoryQueue;
    use crate::dreams::message::FireMessage;
    use crate::dreams::region::RegionKey;

    fn fire(org: &str, project: &str) -> Vec<u8> {
        FireMessage {
            region: RegionKey::new(org, project, 1),
            fired_by: "n".into(),
            fired_at: None,
            fire_id: Some(format!("id-{project}")),
            queued_payload: None,
            quiet_deferred: false,
        }
        .to_payload()
        .into_bytes()
    }

    #[test]
    fn fires_of_the_organization_go_back_and_the_rest_rotates() {
        let mut queue = MemoryQueue {
            dead: vec![b"garbage".to_vec(), fire("acme", "a"), fire("other", "b"), fire("acme", "c")],
            ..MemoryQueue::default()
        };
        let done = redrive(&mut queue, "acme", 3, 1000);
        assert_eq!(done, Redriven { moved: 1, kept: 2, at_ceiling: false });
        assert_eq!(queue.ready, vec![fire("acme", "a")]);
        assert_eq!(queue.dead, vec![fire("acme", "c"), b"garbage".to_vec(), fire("other", "b")]);
        // The next one goes on from there, and looks at each item once.
        let done = redrive(&mut queue, "acme", 100, 1000);
        assert_eq!(done, Redriven { moved: 1, kept: 2, at_ceiling: false });
        assert_eq!(queue.ready, vec![fire("acme", "a"), fire("acme", "c")]);
        assert_eq!(queue.dead, vec![b"garbage".to_vec(), fire("other", "b")]);
    }

    #[test]
    fn it_stops_at_the_ceiling() {
        let mut queue = MemoryQueue {
            processing: vec![fire("acme", "x")],
            dead: vec![fire("acme", "a"), fire("acme", "b"), fire("acme", "c")],
            ..MemoryQueue::default()
        };
        let done = redrive(&mut queue, "acme", 10, 3);
        assert_eq!(done, Redriven { moved: 2, kept: 0, at_ceiling: true });
        assert_eq!(queue.dead, vec![fire("acme", "c")]);
        assert_eq!(redrive(&mut queue, "acme", 0, 1000), Redriven::default());
    }
}
