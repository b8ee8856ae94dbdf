//! Counting an event: the one call a command (or the lease timer) makes
//! where an event of [`crate::events`] happens, adding it to the server's
//! total (`totals`, for `INFO dreamtown`) and, for an event that belongs to
//! a tenant, to that tenant's (`tenant_stats`, for STATS and the exporter).

use super::{tenant_stats, totals};
use crate::events::{Dreams, Town, DREAMS_TENANT_EVENTS, TOWN_TENANT_EVENTS};
use crate::metrics::tenant_stats::TenantId;
use crate::town::keys::TownKeys;

/// `n` Dreams events `event` of organization `org`.
pub fn dreams(org: TenantId, event: Dreams, n: u64) {
    totals::add_dreams(event, n);
    if (event as usize) < DREAMS_TENANT_EVENTS {
        tenant_stats::dreams(org, event, n);
    }
}

/// `n` Dreams events `event` that belong to no organization's totals.
pub fn dreams_server(event: Dreams, n: u64) {
    totals::add_dreams(event, n);
}

/// Town events of the town of `keys` (and of its agent `agent` if given),
/// each `(event, n)` of `counts`: the server's totals, then the tenants',
/// the town's and the agent's ids hashed once and the table borrowed once
/// (nothing when no count is for a tenant).
pub fn town(keys: &TownKeys, agent: Option<&str>, counts: &[(Town, u64)]) {
    for &(event, n) in counts {
        totals::add_town(event, n);
    }
    if counts.iter().any(|&(event, n)| n > 0 && (event as usize) < TOWN_TENANT_EVENTS) {
        let town = TenantId::of(keys.prefix());
        tenant_stats::town_all(town, agent.map(|agent| town.agent(agent)), counts);
    }
}

/// `n` Town events `event` that belong to no town's totals.
pub fn town_server(event: Town, n: u64) {
    totals::add_town(event, n);
}
