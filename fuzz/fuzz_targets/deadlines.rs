//! Lease and deadline arithmetic: `lease::deadline` (DRAIN/RECV
//! leases, EXTEND), `town::stop::expires_at` (stop flags) and DRAIN's
//! wake-up time for a deferral, each against an overflow-free (i128 / f64)
//! model over every i64 clock and every f64 (NaN, infinities and
//! subnormals included); then the Town lease state machine
//! (`town::lease::expire_due`, `acknowledge`) over in-memory mail and a
//! lease set driven by the rest of the input: no message is lost or
//! duplicated, an expired lease leaves its marker, an ack removes one
//! message at most; the same for Dreams fires (`lease::grant`,
//! `dreams::lease::expire_due`, `LeaseAwareQueue::remove_processing`) over
//! the crate's in-memory queue and lease set.
#![no_main]

use dreamtown::dreams::lease::{self, LeaseAwareQueue};
use dreamtown::dreams::memory::MemoryQueue;
use dreamtown::lease::memory::MemoryLeases;
use dreamtown::lease::{deadline, grant, LeaseStore, EXPIRED, LEASE_SECS_MAX};
use dreamtown::dreams::store::{QueueAppend, QueueStore};
use dreamtown::fuzzing::drain_due_after;
use dreamtown::town::lease::{acknowledge, expire_due, AgentMail};
use dreamtown::town::stop::{expires_at, MAX_TTL_SECS};
use libfuzzer_sys::fuzz_target;

fn clamp(value: i128) -> i64 {
    value.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn arithmetic(now_ms: i64, secs: f64, ttl: u64, score: f64) {
    match deadline(now_ms, secs) {
        Some(until) => {
            assert!(secs > 0.0 && secs <= LEASE_SECS_MAX);
            let millis = ((secs * 1000.0).ceil() as i128).max(1);
            assert_eq!(until, clamp(i128::from(now_ms) + millis).max(1), "deadline({now_ms}, {secs})");
            assert!(until >= 1 && (until > now_ms || now_ms == i64::MAX));
        }
        None => assert!(!(secs > 0.0 && secs <= LEASE_SECS_MAX), "deadline({now_ms}, {secs}) refused"),
    }
    let at = expires_at(now_ms, ttl);
    assert_eq!(at, clamp(i128::from(now_ms) + i128::from(ttl.min(MAX_TTL_SECS)) * 1000));
    let now_secs = now_ms / 1000;
    match drain_due_after(score, now_secs) {
        Some(ms) => {
            assert!(score.is_finite() && score > now_secs as f64);
            if score.abs() <= 1e15 {
                // The first whole second at or after the score.
                assert_eq!(ms as f64, score.ceil() * 1000.0, "due_after({score}) = {ms}");
            }
        }
        None => assert!(!score.is_finite() || score <= now_secs as f64),
    }
}

#[derive(Default)]
struct Mail {
    pending: Vec<Vec<u8>>,
    inbox: Vec<Vec<u8>>,
}

impl AgentMail for Mail {
    fn pending(&self) -> Vec<Vec<u8>> {
        self.pending.clone()
    }
    fn remove_pending(&mut self, message: &[u8]) -> bool {
        remove_first(&mut self.pending, message)
    }
    fn remove_first_pending(&mut self, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        remove_first_where(&mut self.pending, matches)
    }
    fn remove_first_inbox(&mut self, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        remove_first_where(&mut self.inbox, matches)
    }
    fn push_inbox_head(&mut self, messages: &[Vec<u8>]) {
        self.inbox.splice(0..0, messages.iter().cloned());
    }
}

fn remove_first(list: &mut Vec<Vec<u8>>, message: &[u8]) -> bool {
    remove_first_where(list, &mut |m| m == message)
}

fn remove_first_where(list: &mut Vec<Vec<u8>>, matches: &mut dyn FnMut(&[u8]) -> bool) -> bool {
    match list.iter().position(|m| matches(m)) {
        Some(at) => {
            list.remove(at);
            true
        }
        None => false,
    }
}

fn sorted(mail: &Mail) -> Vec<Vec<u8>> {
    let mut all: Vec<Vec<u8>> = mail.pending.iter().chain(&mail.inbox).cloned().collect();
    all.sort();
    all
}

fn leases(ops: &[u8]) {
    let (mut mail, mut leases) = (Mail::default(), MemoryLeases::default());
    let (mut queue, mut fire_leases) = (MemoryQueue::default(), MemoryLeases::default());
    let message = |id: u8, dup: bool| -> Vec<u8> {
        match id % 5 {
            // Not every message has an id; some ids are escaped.
            0 => format!("{{\"to\":\"a\",\"n\":{dup}}}").into_bytes(),
            1 => format!("{{\"id\":\"\\u00{:02x}\",\"to\":\"a\"}}", 0x30 + id % 8).into_bytes(),
            _ => format!("{{\"id\":\"{}\",\"to\":\"a\",\"n\":{dup}}}", char::from(b'0' + id % 8)).into_bytes(),
        }
    };
    let mut now = 0i64;
    // At most 64 steps: the mail is scanned per step, so longer runs only slow down.
    for op in ops.chunks_exact(2).take(64) {
        let (kind, arg) = (op[0], op[1]);
        let before = sorted(&mail);
        let payload = format!("p{}", arg % 6).into_bytes();
        let queued = |queue: &MemoryQueue| {
            let mut all: Vec<Vec<u8>> = queue.ready.iter().chain(&queue.processing).cloned().collect();
            all.sort();
            all
        };
        match kind % 8 {
            // Dreams: drain (in flight, leased), expire, acknowledge.
            5 => {
                queue.processing.push(payload.clone());
                grant(&mut fire_leases, &payload, now.saturating_add(i64::from(arg % 7)).max(1));
                continue;
            }
            6 => {
                let (before, in_flight) = (queued(&queue), queue.processing.len());
                let requeued = lease::expire_due(&mut queue, &mut fire_leases, now, u64::from(arg % 4));
                assert_eq!(queued(&queue), before, "expire_due lost or duplicated a fire");
                assert_eq!(queue.processing.len() as u64 + requeued, in_flight as u64);
                for back in queue.ready.iter().take(usize::try_from(requeued).unwrap_or(0)) {
                    assert_eq!(fire_leases.score(back), Some(EXPIRED), "an expired fire keeps its marker");
                }
                continue;
            }
            7 => {
                let (before, score) = (queue.total_len(), fire_leases.score(&payload));
                let removed = LeaseAwareQueue { queue: &mut queue, leases: &mut fire_leases }.remove_processing(&payload);
                assert_eq!(queue.total_len() + u64::from(removed), before);
                match removed {
                    true => assert_eq!(fire_leases.score(&payload), None, "an acknowledged fire keeps a lease"),
                    false => assert_eq!(fire_leases.score(&payload), score),
                }
                continue;
            }
            _ => {}
        }
        match kind % 5 {
            0 => mail.pending.push(message(arg, kind & 0x80 != 0)),
            1 => leases.set(&[b'0' + arg % 8], now.saturating_add(i64::from(arg % 7))),
            2 => {
                now = now.saturating_add(i64::from(arg % 5));
                let pending = mail.pending.len();
                let moved = expire_due(&mut mail, &mut leases, now, u64::from(arg % 4));
                assert_eq!(sorted(&mail), before, "expire_due lost or duplicated a message");
                assert_eq!(mail.pending.len() as u64 + moved, pending as u64);
                assert!(leases.due(now, u64::MAX).len() <= leases.scores.len());
                continue;
            }
            3 => {
                let id = [b'0' + arg % 8];
                let removed = acknowledge(&mut mail, &mut leases, &id);
                let after = sorted(&mail);
                assert_eq!(after.len() + usize::from(removed), before.len());
                assert_eq!(leases.score(&id), None, "an ack leaves no lease");
                continue;
            }
            _ => leases.set(&[b'0' + arg % 8], EXPIRED),
        }
        let _ = before;
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((head, ops)) = data.split_first_chunk::<32>() else { return };
    let word = |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().unwrap());
    arithmetic(word(0) as i64, f64::from_bits(word(1)), word(2), f64::from_bits(word(3)));
    leases(ops);
});
