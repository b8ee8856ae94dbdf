//! The lease index: "tenant -> earliest lease deadline", in memory, so
//! that the lease timer (`lease_timer`) costs nothing for tenants without
//! leases and O(log n) per due tenant. Commands that grant or extend a
//! lease note it (`lease_timer::note`); the catch-up (`lease_catch_up`)
//! fills it after a promotion or a load. Also what a lease family (Dreams,
//! Town: `crate::stores`) gives the timer and the catch-up.
//!
//! Deadlines live in the keyspace (one sorted set per tenant, scored by
//! deadline in ms), so they replicate and persist; an entry here may be
//! early (a lease was acknowledged or extended): the family then finds
//! nothing due and reports the real next deadline.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use crate::glue::module_state::PerLoad;
use crate::glue::session::Session;

/// A family's expiry step: `(session, tenant, now_ms, limit)` to
/// `(handled, next deadline)` (see [`LeaseFamily::expire`]).
pub type ExpireStep = fn(&Session, &str, i64, u64) -> (u64, Option<i64>);

/// What a family of tenants (Dreams organizations, towns) provides.
pub struct LeaseFamily {
    /// The tenant of a lease key name, if it is one (cheap to refuse: the
    /// catch-up asks it of every key name).
    pub tenant_of: fn(&[u8]) -> Option<String>,
    /// Expire at most `limit` (at least 1) of the leases due for `tenant`
    /// at `now_ms` (replicating effects, waking receivers), earliest
    /// first: how many due leases it handled (expired, or dropped as no
    /// longer in flight), and the tenant's next deadline, if any lease is
    /// left (at or before `now_ms` when more are due).
    pub expire: ExpireStep,
    /// The tenant's earliest live deadline (for the catch-up).
    pub earliest: fn(&Session, &str) -> Option<i64>,
    /// The tenant whose hash tag names the slot of an index entry (the
    /// organization; the town of an agent's lease key), for the cluster
    /// check (`migration_guard::may_touch`).
    pub slot_tenant: fn(&str) -> Option<&str>,
}

/// One tenant in the index: family, database, name.
pub type Tenant = (usize, i32, String);

/// A range of cluster slots, both ends included.
pub type SlotRange = (u16, u16);

/// Tenant -> earliest deadline, ordered by deadline.
#[derive(Debug, Default)]
pub struct DeadlineIndex {
    by_deadline: BTreeSet<(i64, Tenant)>,
    by_tenant: HashMap<Tenant, i64>,
}

impl DeadlineIndex {
    /// Record that `tenant` has a lease due at `deadline`: the entry keeps
    /// the earlier of the two.
    pub fn note(&mut self, tenant: Tenant, deadline: i64) {
        match self.by_tenant.get(&tenant) {
            Some(known) if *known <= deadline => {}
            Some(known) => {
                let known = *known;
                self.by_deadline.remove(&(known, tenant.clone()));
                self.by_deadline.insert((deadline, tenant.clone()));
                self.by_tenant.insert(tenant, deadline);
            }
            None => {
                self.by_deadline.insert((deadline, tenant.clone()));
                self.by_tenant.insert(tenant, deadline);
            }
        }
    }

    /// Remove and return up to `limit` tenants due at `now`, earliest first.
    pub fn take_due(&mut self, now: i64, limit: usize) -> Vec<Tenant> {
        let mut due = Vec::new();
        while due.len() < limit {
            let Some(first) = self.by_deadline.first() else { break };
            if first.0 > now {
                break;
            }
            if let Some((_, tenant)) = self.by_deadline.pop_first() {
                self.by_tenant.remove(&tenant);
                due.push(tenant);
            }
        }
        due
    }

    /// Drop every entry `gone` says so of (O(entries)).
    pub fn forget_where(&mut self, gone: impl Fn(&Tenant) -> bool) {
        self.by_deadline.retain(|(_, tenant)| !gone(tenant));
        self.by_tenant.retain(|tenant, _| !gone(tenant));
    }

    /// Forget `tenant`; whether it was indexed. O(log n).
    pub fn forget(&mut self, tenant: &Tenant) -> bool {
        let Some(deadline) = self.by_tenant.remove(tenant) else { return false };
        self.by_deadline.remove(&(deadline, tenant.clone()));
        true
    }

    /// Forget everything (before a full catch-up).
    pub fn clear(&mut self) {
        self.by_deadline.clear();
        self.by_tenant.clear();
    }

    /// Tenants indexed.
    pub fn len(&self) -> usize {
        self.by_tenant.len()
    }

    /// Is the index empty?
    pub fn is_empty(&self) -> bool {
        self.by_tenant.is_empty()
    }

    /// Bytes the index holds per tenant, besides the tenant's name: a
    /// B-tree entry and a hash-map entry, each with the tenant (family,
    /// database, `String` header) and the deadline (for `INFO`; the
    /// containers' slack is not counted).
    pub fn bytes_per_entry() -> usize {
        2 * (std::mem::size_of::<Tenant>() + std::mem::size_of::<i64>())
    }

    /// Bytes of tenant names held (each name is stored twice).
    pub fn name_bytes(&self) -> usize {
        self.by_tenant.keys().map(|(_, _, name)| 2 * name.len()).sum()
    }
}

/// The leases' part of the module state: the index and the families
/// registered at load.
#[derive(Default)]
struct State {
    index: RefCell<DeadlineIndex>,
    /// The lease families, by number.
    families: RefCell<Vec<&'static LeaseFamily>>,
}

static STATE: PerLoad<State> = PerLoad::new();

/// Run `run` on the index.
pub fn with_index<R>(run: impl FnOnce(&mut DeadlineIndex) -> R) -> R {
    STATE.with(|state| run(&mut state.index.borrow_mut()))
}

/// The families registered (when the module loaded), by number.
pub fn families() -> Vec<&'static LeaseFamily> {
    STATE.with(|state| state.families.borrow().clone())
}

/// Register the families (module load).
pub fn set_families(all: Vec<&'static LeaseFamily>) {
    STATE.with(|state| *state.families.borrow_mut() = all);
}

/// The family and tenant whose lease set `key` names, if any: for each
/// event that may drop a lease set, without copying the family list.
pub fn lease_set_tenant(key: &[u8]) -> Option<(usize, String)> {
    STATE.with(|state| {
        state.families.borrow().iter().enumerate().find_map(|(number, family)| Some((number, (family.tenant_of)(key)?)))
    })
}

/// `family`'s number in the index.
pub fn family_index(family: &'static LeaseFamily) -> usize {
    STATE.with(|state| {
        state.families.borrow().iter().position(|known| std::ptr::eq(*known, family)).unwrap_or(usize::MAX)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(name: &str) -> Tenant {
        (0, 0, name.to_owned())
    }

    #[test]
    fn the_index_keeps_the_earliest_deadline_and_pops_in_order() {
        let mut index = DeadlineIndex::default();
        index.note(tenant("b"), 200);
        index.note(tenant("a"), 300);
        index.note(tenant("a"), 100);
        index.note(tenant("a"), 400);
        assert_eq!(index.len(), 2);
        assert_eq!(index.take_due(99, 10), Vec::<Tenant>::new());
        assert_eq!(index.take_due(250, 10), vec![tenant("a"), tenant("b")]);
        assert!(index.is_empty());
    }

    #[test]
    fn a_tick_takes_at_most_its_limit() {
        let mut index = DeadlineIndex::default();
        for i in 0..10 {
            index.note(tenant(&format!("t{i}")), i);
        }
        assert_eq!(index.take_due(100, 4).len(), 4);
        assert_eq!(index.len(), 6);
        index.note((1, 0, "t9".into()), 5);
        assert_eq!(index.len(), 7, "families are apart");
    }

    #[test]
    fn forgetting_drops_both_views() {
        let mut index = DeadlineIndex::default();
        index.note(tenant("a"), 1);
        index.note(tenant("b"), 2);
        index.forget_where(|(_, _, name)| name == "a");
        assert_eq!(index.len(), 1);
        assert_eq!(index.take_due(10, 10), vec![tenant("b")]);
    }
}
