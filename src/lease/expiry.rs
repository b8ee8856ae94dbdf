//! Lease expiry, one algorithm for both families: take the items whose
//! lease ran out out of flight, hand them to their family to put back at
//! the head of ready, and leave an [`EXPIRED`] marker on each; a due lease
//! whose item is no longer in flight just goes.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::{LeaseStore, EXPIRED};

/// A family's in-flight list as lease expiry sees it (a Dreams
/// organization's processing list, a Town agent's pending list).
pub trait InFlight {
    /// The lease member an in-flight item carries (the item itself, or an
    /// id inside it); `None`: it carries none.
    fn lease_member(item: &[u8]) -> Option<Cow<'_, [u8]>>;
    /// Visit the in-flight items head first with their indexes, until
    /// `visit` answers false.
    fn scan(&mut self, visit: &mut dyn FnMut(u64, &[u8]) -> bool);
    /// Remove the in-flight item `item`, now at `index`, which is the first
    /// one equal to it.
    fn remove_at(&mut self, index: u64, item: &[u8]);
    /// Put `expired` (just taken out of flight, head first) back at the
    /// head of ready, in the family's order, calling `mark` with each
    /// one's lease member once it is back (`mark` writes the [`EXPIRED`]
    /// marker, or nothing when expiry writes the markers afterwards).
    fn requeue(&mut self, expired: Vec<Expired>, mark: &mut dyn FnMut(&[u8]));
}

/// An in-flight item whose lease ran out.
pub struct Expired {
    /// Its lease deadline (ms).
    pub deadline: i64,
    /// Its lease member.
    pub member: Vec<u8>,
    /// The item.
    pub item: Vec<u8>,
}

/// Expire up to `limit` leases due at `now_ms`: each item still in flight
/// goes back to the head of ready ([`InFlight::requeue`]) and keeps an
/// [`EXPIRED`] marker; a member no longer in flight just loses its lease.
/// `(handled, requeued)`: how many due leases it handled (expired or
/// dropped), how many items went back.
pub fn expire_due<F: InFlight>(flight: &mut F, leases: &mut impl LeaseStore, now_ms: i64, limit: u64) -> (u64, u64) {
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
    let mut found: Vec<(u64, Expired)> = Vec::new();
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut read = 0u64;
    flight.scan(&mut |index, item| {
        read += 1;
        if let Some(member) = F::lease_member(item) {
            // Only the first in-flight item with a member carries its lease.
            if seen.insert(member.to_vec()) {
                if let Some(deadline) = leases.score(&member).filter(|&at| at > EXPIRED && at <= now_ms) {
                    found.push((index, Expired { deadline, member: member.into_owned(), item: item.to_vec() }));
                }
            }
        }
        (found.len() as u64) < limit && read < window
    });
    if !found.is_empty() {
        let requeued = found.len() as u64;
        take_out(flight, &found);
        let expired = found.into_iter().map(|(_, expired)| expired).collect();
        flight.requeue(expired, &mut |member| leases.set(member, EXPIRED));
        return (requeued, requeued);
    }
    // Nothing due near the head: the due items are deeper (leases of
    // other lengths) or no longer in flight. One pass over the list
    // against a map of the due members costs O(in flight + due), not
    // O(in flight x due); it stops once every due member is found.
    let wanted: HashMap<&[u8], i64> = due.iter().map(|(member, deadline)| (member.as_slice(), *deadline)).collect();
    let mut found: Vec<(u64, Expired)> = Vec::new();
    let mut back: HashSet<Vec<u8>> = HashSet::new();
    flight.scan(&mut |index, item| {
        if let Some(member) = F::lease_member(item) {
            if let Some(&deadline) = wanted.get(member.as_ref()) {
                if back.insert(member.to_vec()) {
                    found.push((index, Expired { deadline, member: member.into_owned(), item: item.to_vec() }));
                }
            }
        }
        back.len() < wanted.len()
    });
    let requeued = found.len() as u64;
    take_out(flight, &found);
    flight.requeue(found.into_iter().map(|(_, expired)| expired).collect(), &mut |_| {});
    // Then the lease set, in the order the leases fell due.
    for (member, _) in &due {
        if back.contains(member) {
            leases.set(member, EXPIRED);
        } else {
            leases.remove(member);
        }
    }
    (due.len() as u64, requeued)
}

/// Take `found` (head first, with the indexes they were found at) out of
/// flight: each removal moves the later ones down by one.
fn take_out(flight: &mut impl InFlight, found: &[(u64, Expired)]) {
    for (removed, (index, expired)) in found.iter().enumerate() {
        flight.remove_at(index - removed as u64, &expired.item);
    }
}
