//! When each Dreams fire entered its organization's ready list, and when it
//! was drained into flight, so that `DREAMS.STATS` can report the age of
//! the next ready item and of the oldest in-flight one.
//!
//! Why a side table: a fire payload carries no enqueue time (it is the
//! seed's `FireMessage`, and workers acknowledge by its exact bytes, so it
//! cannot gain one). Instead, per organization and per list, a map from a
//! 64-bit hash of the payload to the time it entered the list (and how many
//! equal copies are there), kept by the queue store
//! (`stores::dreams::store::RedisQueue`), through which every module
//! command and the lease timer push, pop, move and remove items. STATS
//! hashes the head of each list (the next to drain; the oldest in flight)
//! and looks it up: O(1).
//!
//! Kept in memory on the node that runs the commands and never replicated,
//! like the totals of `tenant_stats`: an item this node did not see enter
//! (written before a restart or failover, by a migration, by a client's own
//! `RPUSH`, or anything a replica holds: a replica runs no command) is
//! timed from when STATS first looked at it at the head of its list (one
//! slot per list, not a map entry), so its age is a lower bound, reported
//! with `*_age_exact:0`. STATS may run on a replica: it only reads the
//! keyspace and keeps those slots in memory.
//!
//! Bounded: a list's map is emptied whenever the list is seen empty (by a
//! command that takes its last item, or by STATS; keeping a little room, so
//! a queue that empties and fills again allocates nothing), at most [`MAX_ORGS`]
//! organizations have maps and at most [`MAX_ENTRIES`] items (all
//! organizations together, about 40 bytes each) are timed; beyond that an
//! item is not timed (its age, once at the head, becomes a lower bound) and
//! `INFO dreamtown` (`dreamtown_tenant_stats`, `fire_ages_refused`) counts it.
//! A list deleted behind the module's back (`DEL`, `UNLINK`, a TTL,
//! eviction, `MOVE`, `RENAME` away; a native pop that empties it) loses
//! its timings at once: the keyspace event (`keyspace_events`, for writes
//! not the module's own) empties its map, one lookup and the map's own
//! entries, each freed once. `FLUSHALL` (or a `FLUSHDB` that leaves
//! nothing the module served: `server_events`) forgets the whole table.
//! An item removed from a list that stays non-empty (`LREM`, a slot moved
//! away) keeps its entry until the list is next seen empty. Two payloads
//! with the same hash share an entry: at worst one age is off.

use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::ffi::CStr;

use super::tenant_stats::{IdMap, TenantId};
use crate::dreams::region::QueueKey;
use crate::glue::module_state::PerLoad;
use dreamtown_protocol::keyspace::dreams::PREFIX;
use dreamtown_protocol::keyspace::split_valid_tag;

/// Organizations with timed items at most.
pub const MAX_ORGS: usize = 10_000;
/// Items timed at most (all organizations and both lists together).
pub const MAX_ENTRIES: usize = 1_000_000;
/// Room an emptied list's map keeps (a few hundred bytes).
const KEPT_ROOM: usize = 8;

/// Which list of an organization's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum List {
    /// `exocortex:dreams:{<org>}:queue`.
    Ready,
    /// `exocortex:dreams:{<org>}:processing`.
    InFlight,
}

/// When equal payloads entered a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entered {
    at_ms: i64,
    copies: u32,
}

#[derive(Default)]
struct Timed {
    items: IdMap<Entered>,
    /// The head STATS last found untimed, and when it first saw it there.
    probe: Option<(u64, i64)>,
}

#[derive(Default)]
struct Org {
    lists: [Timed; 2],
}

/// Every organization's timed items.
#[derive(Default)]
pub struct Table {
    orgs: IdMap<Org>,
    entries: usize,
    caps: (usize, usize),
    /// Items not timed because a cap was reached: kept when the timings
    /// are forgotten.
    refused: u64,
}

/// The age of a list's head: how old (ms), and whether exact (timed when it
/// entered) or a lower bound (timed when first looked at).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Age {
    /// Milliseconds.
    pub ms: i64,
    /// Timed when it entered the list.
    pub exact: bool,
}

/// A payload's hash: 8 bytes at a time, then mixed (not keyed: payloads
/// the module writes carry a random fire id).
pub fn payload_hash(payload: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut hash = (payload.len() as u64).wrapping_mul(K);
    let mut words = payload.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(<[u8; 8]>::try_from(word).unwrap_or_default());
        hash = (hash ^ word).wrapping_mul(K).rotate_left(31);
    }
    let tail = words.remainder().iter().enumerate().fold(0u64, |acc, (i, byte)| acc | u64::from(*byte) << (8 * i));
    mix(hash ^ tail.wrapping_mul(K))
}

/// A finalizer (MurmurHash3's): every input bit reaches every output bit.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

impl Table {
    /// An empty table: at most `orgs` organizations, `entries` items.
    pub fn with_caps(orgs: usize, entries: usize) -> Self {
        Self { caps: (orgs, entries), ..Self::default() }
    }

    /// The same caps and refusals, no timing (the memory released).
    fn emptied_all(&self) -> Self {
        Self { caps: self.caps, refused: self.refused, ..Self::default() }
    }

    /// One more item not timed (a cap was reached).
    fn refuse(&mut self) {
        self.refused = self.refused.saturating_add(1);
    }

    /// `payload` entered `org`'s `list` at `now_ms`.
    pub fn entered(&mut self, org: TenantId, list: List, payload: &[u8], now_ms: i64) {
        self.entered_hashed(org, list, payload_hash(payload), now_ms);
    }

    /// [`Table::entered`] of a payload whose [`payload_hash`] is `hash`.
    pub fn entered_hashed(&mut self, org: TenantId, list: List, hash: u64, now_ms: i64) {
        if self.entries >= self.caps.1 {
            return self.refuse();
        }
        let full = self.orgs.len() >= self.caps.0;
        let timed = match self.orgs.get_mut(&org.get()) {
            Some(found) => &mut found.lists[list as usize],
            None if full => return self.refuse(),
            None => &mut self.orgs.entry(org.get()).or_default().lists[list as usize],
        };
        match timed.items.entry(hash) {
            Entry::Occupied(mut seen) => seen.get_mut().copies = seen.get().copies.saturating_add(1),
            Entry::Vacant(slot) => {
                slot.insert(Entered { at_ms: now_ms, copies: 1 });
                self.entries += 1;
            }
        }
    }

    /// `payload` left `org`'s `list`; `now_empty` if that emptied the list.
    pub fn left(&mut self, org: TenantId, list: List, payload: &[u8], now_empty: bool) {
        if now_empty {
            return self.emptied(org, list);
        }
        self.left_hashed(org, list, payload_hash(payload), false);
    }

    /// [`Table::left`] of a payload whose [`payload_hash`] is `hash`.
    pub fn left_hashed(&mut self, org: TenantId, list: List, hash: u64, now_empty: bool) {
        if now_empty {
            return self.emptied(org, list);
        }
        let Some(found) = self.orgs.get_mut(&org.get()) else { return };
        let timed = &mut found.lists[list as usize];
        if let Entry::Occupied(mut seen) = timed.items.entry(hash) {
            match seen.get().copies {
                0 | 1 => {
                    seen.remove();
                    self.entries = self.entries.saturating_sub(1);
                }
                copies => seen.get_mut().copies = copies - 1,
            }
        }
    }

    /// `org`'s `list` is empty: forget what was timed there. The map keeps
    /// a little room ([`KEPT_ROOM`]) and the organization its entry, so a
    /// queue that keeps emptying and filling allocates nothing per call;
    /// once half the organizations' cap is in use, an organization whose
    /// lists are both empty is dropped instead.
    pub fn emptied(&mut self, org: TenantId, list: List) {
        let crowded = self.orgs.len() > self.caps.0 / 2;
        let Entry::Occupied(mut found) = self.orgs.entry(org.get()) else { return };
        let timed = &mut found.get_mut().lists[list as usize];
        self.entries = self.entries.saturating_sub(timed.items.len());
        timed.items.clear();
        timed.items.shrink_to(KEPT_ROOM);
        timed.probe = None;
        if crowded && found.get().lists.iter().all(|other| other.items.is_empty() && other.probe.is_none()) {
            found.remove();
        }
    }

    /// The age of `head`, the item at the head of `org`'s `list`, at
    /// `now_ms`; an item not timed is timed from now on (one slot per list).
    pub fn age(&mut self, org: TenantId, list: List, head: &[u8], now_ms: i64) -> Age {
        let hash = payload_hash(head);
        if let Some(seen) = self.orgs.get(&org.get()).and_then(|found| found.lists[list as usize].items.get(&hash)) {
            return Age { ms: now_ms.saturating_sub(seen.at_ms).max(0), exact: true };
        }
        let full = self.orgs.len() >= self.caps.0;
        let timed = match self.orgs.get_mut(&org.get()) {
            Some(found) => &mut found.lists[list as usize],
            None if full => return Age { ms: 0, exact: false },
            None => &mut self.orgs.entry(org.get()).or_default().lists[list as usize],
        };
        let since = match timed.probe {
            Some((probed, since)) if probed == hash => since,
            _ => {
                timed.probe = Some((hash, now_ms));
                now_ms
            }
        };
        Age { ms: now_ms.saturating_sub(since).max(0), exact: false }
    }

    /// Organizations and items timed.
    pub fn sizes(&self) -> (usize, usize) {
        (self.orgs.len(), self.entries)
    }
}

/// The table: a part of the module state.
struct State(RefCell<Table>);

impl Default for State {
    fn default() -> Self {
        State(RefCell::new(Table::with_caps(MAX_ORGS, MAX_ENTRIES)))
    }
}

static STATE: PerLoad<State> = PerLoad::new();

fn with_table<R>(run: impl FnOnce(&mut Table) -> R) -> R {
    STATE.with(|state| run(&mut state.0.borrow_mut()))
}

/// Forget every timing, releasing the memory (`FLUSHALL`).
pub fn forget_all() {
    with_table(|table| *table = table.emptied_all());
}

/// The organization and list a Dreams list key names, if it is the ready
/// or in-flight list of one (the key names of `dreams::region::QueueKey`).
fn list_of(name: &[u8]) -> Option<(TenantId, List)> {
    let (org, after) = split_valid_tag(PREFIX, name)?;
    let list = if after == QueueKey::Ready.suffix().as_bytes() {
        List::Ready
    } else if after == QueueKey::Processing.suffix().as_bytes() {
        List::InFlight
    } else {
        return None;
    };
    Some((TenantId::of(org), list))
}

/// A keyspace event of someone else's write (`keyspace_events`): a ready or
/// in-flight list that is gone takes its timings with it. A cheap prefix
/// check for any other key.
pub fn on_keyspace_event(_ctx: crate::glue::ctx::Ctx, event: &[u8], key: crate::glue::ctx::RawString) {
    if !matches!(event, b"del" | b"expired" | b"evicted" | b"move_from" | b"rename_from") {
        return;
    }
    if let Some((org, list)) = list_of(crate::glue::string::bytes_of(key)) {
        with_table(|table| table.emptied(org, list));
    }
}

/// `payload` entered `org`'s `list` at `now_ms`.
pub fn entered(org: TenantId, list: List, payload: &[u8], now_ms: i64) {
    with_table(|table| table.entered(org, list, payload, now_ms));
}

/// `payloads` entered `org`'s `list` at `now_ms`.
pub fn entered_all(org: TenantId, list: List, payloads: &[&[u8]], now_ms: i64) {
    with_table(|table| {
        for payload in payloads {
            table.entered(org, list, payload, now_ms);
        }
    });
}

/// `payload` left `org`'s `list`, emptying it if `now_empty`.
pub fn left(org: TenantId, list: List, payload: &[u8], now_empty: bool) {
    with_table(|table| table.left(org, list, payload, now_empty));
}

/// [`left`] of a payload whose [`payload_hash`] is `hash`.
pub fn left_hashed(org: TenantId, list: List, hash: u64, now_empty: bool) {
    with_table(|table| table.left_hashed(org, list, hash, now_empty));
}

/// [`entered`] of a payload whose [`payload_hash`] is `hash`.
pub fn entered_hashed(org: TenantId, list: List, hash: u64, now_ms: i64) {
    with_table(|table| table.entered_hashed(org, list, hash, now_ms));
}

/// `org`'s `list` is empty.
pub fn emptied(org: TenantId, list: List) {
    with_table(|table| table.emptied(org, list));
}

/// The age of `head` at the head of `org`'s `list`, or none (and the
/// list's timings dropped) when the list is empty.
pub fn head_age(org: TenantId, list: List, head: Option<&[u8]>, now_ms: i64) -> Option<Age> {
    with_table(|table| match head {
        Some(head) => Some(table.age(org, list, head, now_ms)),
        None => {
            table.emptied(org, list);
            None
        }
    })
}

/// Fields of the `dreamtown_tenant_stats` section of INFO.
pub fn info_fields() -> Vec<(&'static CStr, u64)> {
    let ((orgs, entries), refused) = with_table(|table| (table.sizes(), table.refused));
    vec![(c"fire_ages_orgs", orgs as u64), (c"fire_ages_entries", entries as u64), (c"fire_ages_refused", refused)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_timed_from_when_they_entered() {
        let mut table = Table::with_caps(10, 10);
        let org = TenantId::of("o");
        table.entered(org, List::Ready, b"a", 1_000);
        table.entered(org, List::Ready, b"b", 2_000);
        assert_eq!(table.age(org, List::Ready, b"a", 5_000), Age { ms: 4_000, exact: true });
        table.left(org, List::Ready, b"a", false);
        table.entered(org, List::InFlight, b"a", 5_000);
        assert_eq!(table.age(org, List::Ready, b"b", 6_000), Age { ms: 4_000, exact: true });
        assert_eq!(table.age(org, List::InFlight, b"a", 6_000), Age { ms: 1_000, exact: true });
        assert_eq!(table.sizes(), (1, 2));
        table.left(org, List::Ready, b"b", true);
        table.left(org, List::InFlight, b"a", true);
        // The organization keeps its (small) entry while the table has room.
        assert_eq!(table.sizes(), (1, 0));
    }

    #[test]
    fn an_untimed_head_is_a_lower_bound_from_its_first_look() {
        let mut table = Table::with_caps(10, 10);
        let org = TenantId::of("o");
        assert_eq!(table.age(org, List::Ready, b"x", 1_000), Age { ms: 0, exact: false });
        assert_eq!(table.age(org, List::Ready, b"x", 3_000), Age { ms: 2_000, exact: false });
        // A new head restarts the slot; nothing else is stored.
        assert_eq!(table.age(org, List::Ready, b"y", 4_000), Age { ms: 0, exact: false });
        assert_eq!(table.sizes(), (1, 0));
        table.emptied(org, List::Ready);
        assert_eq!(table.sizes(), (1, 0));
        assert_eq!(table.age(org, List::Ready, b"y", 5_000), Age { ms: 0, exact: false });
    }

    #[test]
    fn a_crowded_table_drops_organizations_whose_lists_are_empty() {
        let mut table = Table::with_caps(2, 10);
        let (a, b) = (TenantId::of("a"), TenantId::of("b"));
        table.entered(a, List::Ready, b"1", 0);
        table.entered(b, List::Ready, b"1", 0);
        table.left(a, List::Ready, b"1", true);
        assert_eq!(table.sizes(), (1, 1));
    }

    #[test]
    fn equal_payloads_share_an_entry_until_the_last_leaves() {
        let mut table = Table::with_caps(10, 10);
        let org = TenantId::of("o");
        table.entered(org, List::Ready, b"a", 1_000);
        table.entered(org, List::Ready, b"a", 2_000);
        table.left(org, List::Ready, b"a", false);
        assert_eq!(table.age(org, List::Ready, b"a", 3_000), Age { ms: 2_000, exact: true });
        table.left(org, List::Ready, b"a", false);
        assert_eq!(table.sizes(), (1, 0));
    }

    #[test]
    fn caps_bound_what_is_timed() {
        let mut table = Table::with_caps(1, 2);
        let (a, b) = (TenantId::of("a"), TenantId::of("b"));
        table.entered(a, List::Ready, b"1", 0);
        table.entered(b, List::Ready, b"1", 0);
        table.entered(a, List::Ready, b"2", 0);
        table.entered(a, List::Ready, b"3", 0);
        assert_eq!(table.sizes(), (1, 2));
        assert!(!table.age(a, List::Ready, b"3", 10).exact);
    }

    #[test]
    fn the_ready_and_in_flight_lists_are_recognized_by_name() {
        let org = TenantId::of("acme");
        assert_eq!(list_of(b"exocortex:dreams:{acme}:queue"), Some((org, List::Ready)));
        assert_eq!(list_of(b"exocortex:dreams:{acme}:processing"), Some((org, List::InFlight)));
        for other in [
            &b"exocortex:dreams:{acme}:deferred"[..],
            b"exocortex:dreams:{}:queue",
            b"exocortex:dreams:{a}b}:queue",
            b"acme:queue",
            b"tt:{t}:inbox:a",
        ] {
            assert_eq!(list_of(other), None, "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn payload_hashes_differ_by_every_byte() {
        let base = br#"{"region":{"org":"o","project":"p","memory_type":1},"fire_id":"0"}"#.to_vec();
        let hash = payload_hash(&base);
        for i in 0..base.len() {
            let mut changed = base.clone();
            changed[i] ^= 1;
            assert_ne!(payload_hash(&changed), hash, "byte {i}");
        }
        assert_ne!(payload_hash(b""), payload_hash(b"\0"));
    }
}
