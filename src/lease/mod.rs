//! Leases, shared by both families: an item handed out under a lease (a
//! Dreams fire drained with `LEASE`, a Town message received `RELIABLE
//! LEASE`) carries a deadline; when it passes without an acknowledgement,
//! that one item goes back to the head of its family's ready list (it is
//! handed out next) and nothing else in flight moves.
//!
//! A lease set is one sorted set per tenant (a Dreams organization, a Town
//! agent), member = the item's lease member (a Dreams payload, a Town
//! message id), score = deadline in unix milliseconds. After an expiry the
//! member stays with the score [`EXPIRED`] (0): a marker saying "this item
//! is back in ready because its lease ran out", so that a late
//! acknowledgement still finds and removes it there. An item handed out
//! again gets a fresh deadline over the marker; an acknowledgement removes
//! the member whatever its score.
//!
//! This module knows no family: [`expiry`] runs the expiry over any
//! family's in-flight list ([`expiry::InFlight`]); each family's core says
//! how its items go back (`dreams::lease`, `town::lease`).

pub mod expiry;
#[cfg(any(test, feature = "fuzzing"))]
pub mod memory;

/// The score of a member whose lease ran out and whose item went back to
/// ready.
pub const EXPIRED: i64 = 0;

/// Longest lease accepted (seconds): 100 years.
pub use dreamtown_protocol::request::options::LEASE_SECS_MAX;

/// A tenant's lease set.
pub trait LeaseStore {
    /// The score of `member`: a deadline (ms), [`EXPIRED`], or none.
    fn score(&self, member: &[u8]) -> Option<i64>;
    /// Set `member`'s score (add or rescore).
    fn set(&mut self, member: &[u8], score: i64);
    /// Remove `member`; whether it was there.
    fn remove(&mut self, member: &[u8]) -> bool;
    /// Up to `limit` leased members with a deadline at or before `now_ms`,
    /// with their deadlines, earliest first (then by member; never
    /// [`EXPIRED`] markers).
    fn due(&self, now_ms: i64, limit: u64) -> Vec<(Vec<u8>, i64)>;
    /// The earliest live deadline, if any member is leased.
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

/// Lease `member` (just handed out) until `deadline_ms`.
pub fn grant(leases: &mut impl LeaseStore, member: &[u8], deadline_ms: i64) {
    leases.set(member, deadline_ms.max(EXPIRED + 1));
}

/// Push a live lease out to `deadline_ms`; false (nothing changed) when
/// `member` is not leased to anyone (acknowledged, or expired).
pub fn extend(leases: &mut impl LeaseStore, member: &[u8], deadline_ms: i64) -> bool {
    match leases.score(member) {
        Some(score) if score > EXPIRED => {
            leases.set(member, deadline_ms.max(EXPIRED + 1));
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::memory::MemoryLeases;
    use super::*;

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
}
