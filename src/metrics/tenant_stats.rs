//! Per-tenant totals: what `INFO dreamtown` counts per server (fires,
//! drains, acknowledgements, requeues, drops, lease expiries; messages
//! sent, received, acknowledged...), counted again per Dreams organization,
//! per town and per Town agent, for `DREAMS.STATS` / `TOWN.STATS` and the
//! exporter's per-tenant `_total` counters.
//!
//! Kept in memory on the server that executes the command, and never
//! replicated nor persisted, on purpose: they are Prometheus counters,
//! and a counter's reset is what `rate()` and `increase()` already
//! handle; keeping them in the keyspace would add a replicated write to
//! every `FIRE`, `DRAIN` and `ACK` (docs/monitoring.md). So after a
//! restart or a failover the new master's totals start at 0, and a replica
//! (which applies effects, runs no command) reports 0. `totals_since_ms`
//! in the STATS replies says when a tenant's totals started.
//!
//! Cost: one keyed hash of the tenant name per command that counts (the
//! caller makes a [`TenantId`] once), one borrow of the table (a part of
//! the module state, `glue::module_state`) and one lookup in a map keyed
//! by that hash; no allocation once the tenant has an entry.
//! Memory is bounded: at most [`MAX_ORGS`] organizations, [`MAX_TOWNS`]
//! towns and [`MAX_AGENTS`] agents (all towns together) have entries
//! (about 200 bytes each); a tenant first seen beyond a cap is not counted
//! (its STATS say `totals_tracked:0`) and `INFO dreamtown`
//! (`dreamtown_tenant_stats`) counts those refusals. `TOWN.RESET` drops
//! its town's agent entries, `TOWN.AGENT DEL` the agent's; and once a
//! table is more than half full, a STATS call that finds an organization's
//! queue or an agent's inboxes entirely empty drops its entry ([`idle_seen`]:
//! a counter reset), so tenants that come and go do not lock out newer ones.
//! `FLUSHALL`, or a `FLUSHDB` that leaves nothing the module served
//! (`server_events`), forgets every entry.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::CStr;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::OnceLock;

use crate::events::{self, Dreams, Field, Town, DREAMS_TENANT_EVENTS, TOWN_TENANT_EVENTS};
use crate::glue::module_state::PerLoad;

/// Organizations with totals at most.
pub const MAX_ORGS: usize = 10_000;
/// Towns with totals at most.
pub const MAX_TOWNS: usize = 10_000;
/// Agents (of all towns) with totals at most.
pub const MAX_AGENTS: usize = 100_000;

/// A tenant, by a keyed hash of its name: the maps here never hold names
/// (no allocation per tenant beyond its entry, nothing to copy per
/// command). Two names colliding on a random 64-bit key is not a concern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TenantId(u64);

fn hasher() -> &'static RandomState {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    KEYS.get_or_init(RandomState::new)
}

impl TenantId {
    /// The id of a Dreams organization (or of a town, by its key prefix).
    pub fn of(name: &str) -> Self {
        Self(hasher().hash_one(name))
    }

    /// The id of an agent of the town whose id is `self`.
    pub fn agent(self, agent: &str) -> Self {
        let mut state = hasher().build_hasher();
        self.0.hash(&mut state);
        agent.hash(&mut state);
        Self(state.finish())
    }

    /// The hash itself (for maps keyed by it).
    pub fn get(self) -> u64 {
        self.0
    }
}

/// A map keyed by an already-random `u64`: no second hash.
pub type IdMap<V> = HashMap<u64, V, PassThrough>;

/// Hashes a `u64` key to itself (it is already a good hash).
#[derive(Clone, Copy, Default)]
pub struct PassThrough;

impl BuildHasher for PassThrough {
    type Hasher = PassThroughHasher;
    fn build_hasher(&self) -> PassThroughHasher {
        PassThroughHasher(0)
    }
}

/// See [`PassThrough`].
#[derive(Default)]
pub struct PassThroughHasher(u64);

impl Hasher for PassThroughHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here; anything else still spreads.
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// One tenant's totals and when they started (unix ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totals<const N: usize> {
    /// By the enum's order.
    pub counts: [u64; N],
    /// When this entry was made (unix ms).
    pub since_ms: i64,
}

impl<const N: usize> Totals<N> {
    fn new() -> Self {
        Self { counts: [0; N], since_ms: now_ms() }
    }
}

/// Dreams totals of one organization.
pub type DreamsTotals = Totals<DREAMS_TENANT_EVENTS>;
/// Town totals of one town or agent.
pub type TownTotals = Totals<TOWN_TENANT_EVENTS>;

impl DreamsTotals {
    /// The count of `what`.
    #[cfg(test)]
    pub fn get(&self, what: Dreams) -> u64 {
        self.counts.get(what as usize).copied().unwrap_or(0)
    }

    /// A field of [`crate::events::DREAMS_FIELDS`]: the sum of its events.
    pub fn sum(&self, field: &Field<Dreams>) -> u64 {
        events::sum(field, &self.counts)
    }
}

impl TownTotals {
    /// The count of `what`.
    #[cfg(test)]
    pub fn get(&self, what: Town) -> u64 {
        self.counts.get(what as usize).copied().unwrap_or(0)
    }

    /// A field of [`crate::events::TOWN_FIELDS`]: the sum of its events.
    pub fn sum(&self, field: &Field<Town>) -> u64 {
        events::sum(field, &self.counts)
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A town's totals and its agents'.
struct TownEntry {
    totals: TownTotals,
    agents: IdMap<TownTotals>,
}

/// Every tenant's totals.
#[derive(Default)]
pub struct Table {
    orgs: IdMap<DreamsTotals>,
    towns: IdMap<TownEntry>,
    agents: usize,
    caps: [usize; 3],
    /// Tenants not counted because a cap was reached (organizations,
    /// towns, agents): kept when the entries are forgotten.
    refused: [u64; 3],
}

impl Table {
    /// An empty table with these caps (organizations, towns, agents).
    pub fn with_caps(caps: [usize; 3]) -> Self {
        Self { caps, ..Self::default() }
    }

    /// The same caps and refusals, no entry (the memory released).
    fn emptied(&self) -> Self {
        Self { caps: self.caps, refused: self.refused, ..Self::default() }
    }

    /// One more tenant of `family` not counted (its cap was reached).
    fn refuse(&mut self, family: Family) {
        if let Some(refused) = self.refused.get_mut(family as usize) {
            *refused = refused.saturating_add(1);
        }
    }

    /// Count `n` of `what` for `org`.
    pub fn count_dreams(&mut self, org: TenantId, what: Dreams, n: u64) {
        let full = self.orgs.len() >= self.caps[0];
        let totals = match self.orgs.get_mut(&org.0) {
            Some(totals) => totals,
            None if full => return self.refuse(Family::Orgs),
            None => self.orgs.entry(org.0).or_insert_with(Totals::new),
        };
        if let Some(count) = totals.counts.get_mut(what as usize) {
            *count = count.saturating_add(n);
        }
    }

    /// Count `n` of `what` for `town`, and for its agent `agent` if given.
    pub fn count_town(&mut self, town: TenantId, agent: Option<TenantId>, what: Town, n: u64) {
        let full = self.towns.len() >= self.caps[1];
        let entry = match self.towns.get_mut(&town.0) {
            Some(entry) => entry,
            None if full => return self.refuse(Family::Towns),
            None => self
                .towns
                .entry(town.0)
                .or_insert_with(|| TownEntry { totals: Totals::new(), agents: IdMap::default() }),
        };
        add(&mut entry.totals, what, n);
        let Some(agent) = agent else { return };
        let totals = match entry.agents.get_mut(&agent.0) {
            Some(totals) => totals,
            None if self.agents >= self.caps[2] => return self.refuse(Family::Agents),
            None => {
                self.agents += 1;
                entry.agents.entry(agent.0).or_insert_with(Totals::new)
            }
        };
        add(totals, what, n);
    }

    /// `org`'s totals, if it has an entry.
    pub fn dreams(&self, org: TenantId) -> Option<DreamsTotals> {
        self.orgs.get(&org.0).copied()
    }

    /// `town`'s totals, or with `agent` that agent's, if there is an entry.
    pub fn town(&self, town: TenantId, agent: Option<TenantId>) -> Option<TownTotals> {
        let entry = self.towns.get(&town.0)?;
        match agent {
            None => Some(entry.totals),
            Some(agent) => entry.agents.get(&agent.0).copied(),
        }
    }

    /// Forget `town`'s agents (all of them, or the one given): their keys
    /// are gone. The town's own totals stay.
    pub fn forget_agents(&mut self, town: TenantId, agent: Option<TenantId>) {
        let Some(entry) = self.towns.get_mut(&town.0) else { return };
        let before = entry.agents.len();
        match agent {
            Some(agent) => {
                entry.agents.remove(&agent.0);
            }
            None => entry.agents = IdMap::default(),
        }
        self.agents = self.agents.saturating_sub(before - entry.agents.len());
    }

    /// Is `family` more than half full?
    pub fn crowded(&self, family: Family) -> bool {
        let sizes = self.sizes();
        sizes.get(family as usize).zip(self.caps.get(family as usize)).is_some_and(|(size, cap)| *size > cap / 2)
    }

    /// Forget `org`'s totals.
    pub fn forget_org(&mut self, org: TenantId) {
        self.orgs.remove(&org.0);
    }

    /// Entries held: organizations, towns, agents.
    pub fn sizes(&self) -> [usize; 3] {
        [self.orgs.len(), self.towns.len(), self.agents]
    }
}

fn add(totals: &mut TownTotals, what: Town, n: u64) {
    if let Some(count) = totals.counts.get_mut(what as usize) {
        *count = count.saturating_add(n);
    }
}

/// The table: a part of the module state.
struct State(RefCell<Table>);

impl Default for State {
    fn default() -> Self {
        State(RefCell::new(Table::with_caps([MAX_ORGS, MAX_TOWNS, MAX_AGENTS])))
    }
}

static STATE: PerLoad<State> = PerLoad::new();

fn with_table<R>(run: impl FnOnce(&mut Table) -> R) -> R {
    STATE.with(|state| run(&mut state.0.borrow_mut()))
}

/// Forget every tenant's totals, releasing the memory (`FLUSHALL`, see
/// `server_events`): a counter reset, as after a restart.
pub fn forget_all() {
    with_table(|table| *table = table.emptied());
}

/// Count `n` of `what` for `org` (nothing when `n` is 0).
pub fn dreams(org: TenantId, what: Dreams, n: u64) {
    if n > 0 {
        with_table(|table| table.count_dreams(org, what, n));
    }
}

/// Count each `(what, n)` of `counts` for `town` and its `agent`, under
/// one borrow of the table (a count of 0 counts nothing: no entry is made for it).
pub fn town_all(town: TenantId, agent: Option<TenantId>, counts: &[(Town, u64)]) {
    if counts.iter().all(|(_, n)| *n == 0) {
        return;
    }
    with_table(|table| {
        for &(what, n) in counts {
            // Server-only events (`events::TOWN_TENANT_EVENTS` on) make no entry.
            if n > 0 && (what as usize) < TOWN_TENANT_EVENTS {
                table.count_town(town, agent, what, n);
            }
        }
    });
}

/// `org`'s totals, if counted.
pub fn dreams_totals(org: TenantId) -> Option<DreamsTotals> {
    with_table(|table| table.dreams(org))
}

/// A town's or an agent's totals, if counted.
pub fn town_totals(town: TenantId, agent: Option<TenantId>) -> Option<TownTotals> {
    with_table(|table| table.town(town, agent))
}

/// Which cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Organizations.
    Orgs = 0,
    /// Towns.
    Towns = 1,
    /// Agents.
    Agents = 2,
}

/// Is `family` at its cap (a tenant without an entry is not counted)?
pub fn at_cap(family: Family) -> bool {
    with_table(|table| {
        let sizes = table.sizes();
        sizes.get(family as usize).zip(table.caps.get(family as usize)).is_some_and(|(size, cap)| size >= cap)
    })
}

/// A STATS call found the tenant with nothing queued, in flight or leased:
/// once its family's table is more than half full, forget the tenant's
/// totals (a counter reset, which `rate()` handles), so that tenants that
/// come and go do not lock newer ones out. `agent` for a Town agent.
pub fn idle_seen(tenant: TenantId, agent: Option<TenantId>) {
    with_table(|table| match agent {
        None if table.crowded(Family::Orgs) => table.forget_org(tenant),
        Some(agent) if table.crowded(Family::Agents) => table.forget_agents(tenant, Some(agent)),
        _ => {}
    });
}

/// Forget a town's agents' totals (`TOWN.RESET`), or one agent's
/// (`TOWN.AGENT DEL`).
pub fn forget_agents(town: TenantId, agent: Option<TenantId>) {
    with_table(|table| table.forget_agents(town, agent));
}

/// The `dreamtown_tenant_stats` section of INFO.
pub fn info_fields() -> Vec<(&'static CStr, u64)> {
    let ([orgs, towns, agents], [orgs_refused, towns_refused, agents_refused]) =
        with_table(|table| (table.sizes(), table.refused));
    vec![
        (c"orgs_tracked", orgs as u64),
        (c"towns_tracked", towns as u64),
        (c"agents_tracked", agents as u64),
        (c"orgs_refused", orgs_refused),
        (c"towns_refused", towns_refused),
        (c"agents_refused", agents_refused),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_count_per_tenant() {
        let mut table = Table::with_caps([10, 10, 10]);
        let (a, b) = (TenantId::of("a"), TenantId::of("b"));
        table.count_dreams(a, Dreams::FiredFire, 3);
        table.count_dreams(a, Dreams::Drained, 1);
        table.count_dreams(b, Dreams::FiredFire, 1);
        assert_eq!(table.dreams(a).map(|t| t.get(Dreams::FiredFire)), Some(3));
        assert_eq!(table.dreams(a).map(|t| t.get(Dreams::Drained)), Some(1));
        assert_eq!(table.dreams(b).map(|t| t.get(Dreams::FiredFire)), Some(1));
        assert_eq!(table.dreams(TenantId::of("c")), None);
    }

    #[test]
    fn town_totals_sum_their_agents() {
        let mut table = Table::with_caps([10, 10, 10]);
        let town = TenantId::of("tt:{t}");
        let (w1, w2) = (town.agent("w1"), town.agent("w2"));
        table.count_town(town, Some(w1), Town::Sent, 2);
        table.count_town(town, Some(w2), Town::Sent, 1);
        table.count_town(town, None, Town::Broadcasts, 1);
        assert_eq!(table.town(town, None).map(|t| t.get(Town::Sent)), Some(3));
        assert_eq!(table.town(town, Some(w1)).map(|t| t.get(Town::Sent)), Some(2));
        assert_eq!(table.town(town, None).map(|t| t.get(Town::Broadcasts)), Some(1));
        assert_ne!(TenantId::of("tt:{u}").agent("w1"), w1);
        table.forget_agents(town, Some(w1));
        assert_eq!(table.town(town, Some(w1)), None);
        assert_eq!(table.sizes(), [0, 1, 1]);
        table.forget_agents(town, None);
        assert_eq!(table.sizes(), [0, 1, 0]);
        assert_eq!(table.town(town, None).map(|t| t.get(Town::Sent)), Some(3));
    }

    #[test]
    fn caps_bound_the_entries() {
        let mut table = Table::with_caps([2, 1, 1]);
        for name in ["a", "b", "c"] {
            table.count_dreams(TenantId::of(name), Dreams::FiredFire, 1);
        }
        assert_eq!(table.dreams(TenantId::of("c")), None);
        // Known tenants keep counting at the cap.
        table.count_dreams(TenantId::of("a"), Dreams::FiredFire, 1);
        assert_eq!(table.dreams(TenantId::of("a")).map(|t| t.get(Dreams::FiredFire)), Some(2));
        let town = TenantId::of("tt:{t}");
        table.count_town(town, Some(town.agent("x")), Town::Sent, 1);
        table.count_town(town, Some(town.agent("y")), Town::Sent, 1);
        assert_eq!(table.town(town, Some(town.agent("y"))), None);
        assert_eq!(table.town(town, None).map(|t| t.get(Town::Sent)), Some(2));
        table.count_town(TenantId::of("tt:{u}"), None, Town::Sent, 1);
        assert_eq!(table.sizes(), [2, 1, 1]);
        assert!(table.crowded(Family::Orgs));
        table.forget_org(TenantId::of("a"));
        assert_eq!(table.dreams(TenantId::of("a")), None);
        assert!(!table.crowded(Family::Orgs));
    }
}
