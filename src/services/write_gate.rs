//! The write gate: the one question every write the module makes outside a
//! client's own command (lease expiry on the lease timer, the waiter pass
//! that hands work to a blocked `DREAMS.DRAIN` / `TOWN.RECV ... BLOCK`, a
//! deferred item falling due for a waiting drainer) asks first: may this
//! server write now?
//!
//! Yes only on a master that is not loading and whose writes are not
//! paused. A pause is `CLIENT PAUSE ... WRITE`, `CLIENT PAUSE ... ALL`, the
//! pause of a coordinated `FAILOVER` (from `waiting-for-sync` until it
//! completes or aborts) and the one before a shutdown. A native server
//! expires and evicts nothing while paused (the failover guarantee, that
//! the replica's offset can match the master's, rests on it), and a write
//! propagated during the pause aborts the server when AOF or a replica is
//! attached (`propagateNow`/`propagatePendingCommands` assert
//! `!(paused && !client_pause_in_transaction)`).
//!
//! How "paused" is read: `RedisModule_AvoidReplicaTraffic()`. Redis 7.0
//! (module.c) returns `checkClientPauseTimeoutAndReturnIfPaused()`: true
//! while any pause (WRITE, ALL, failover) is in force, after ending one
//! whose time ran out. Redis 7.2 and later, and Valkey (forked from 7.2),
//! return `isPausedActionsWithUpdate(PAUSE_ACTION_REPLICA)`, and WRITE,
//! ALL, the failover and the shutdown pause all include
//! `PAUSE_ACTION_REPLICA` (`PAUSE_ACTIONS_CLIENT_WRITE_SET`/`..._ALL_SET`),
//! the very flag the assertion tests. So what it says is exactly when a
//! write would be refused by that assertion, on every server the module
//! supports; the load-time check (`api::missing_apis`) makes sure the
//! function exists.
//!
//! A writer that finds the gate shut keeps its work where it is (the lease
//! index, the waiters' pending marks) and looks again [`POLL_MS`] later:
//! nothing is lost, and the work is done as soon as the pause ends. A
//! server that is not a master never writes on its own (its master's
//! writes arrive by replication); what its writers do then is theirs to
//! say (the lease timer drops its index, a waiter pass serves nobody).

use std::ffi::CStr;

use crate::glue::context_flags::{self, ContextFlags};
use crate::glue::ctx::Ctx;
use crate::glue::module_state::PerLoad;
use crate::metrics::totals::Total;

/// How soon a writer held back by a pause (or a load) looks again (ms).
pub const POLL_MS: i64 = 10;

/// What the gate says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// A master that may write: go ahead.
    Open,
    /// A master that may not write now (writes paused, or loading): keep
    /// the work and look again [`POLL_MS`] later.
    Wait,
    /// Not a master: nothing to do here.
    NotMaster,
}

/// What the gate held back, for `INFO`: a part of the module state.
#[derive(Default)]
struct Held {
    /// Lease timer ticks held back by the gate (each looks again
    /// [`POLL_MS`] later).
    lease_ticks: Total,
    /// Waiter passes (hand-offs, deferred items falling due) held back by
    /// the gate.
    waiter_passes: Total,
}

static HELD: PerLoad<Held> = PerLoad::new();

/// A lease timer tick was held back.
pub fn held_lease_tick() {
    HELD.with(|held| held.lease_ticks.bump());
}

/// A waiter pass was held back.
pub fn held_waiter_pass() {
    HELD.with(|held| held.waiter_passes.bump());
}

/// The gate for a background write in `ctx` (a timer's or an event's).
pub fn check(ctx: Ctx) -> Gate {
    let flags = ContextFlags::of(ctx);
    if !flags.is_master() {
        return Gate::NotMaster;
    }
    if flags.loading() || flags.async_loading() || writes_paused() {
        return Gate::Wait;
    }
    Gate::Open
}

/// May the module write now, outside a client's command? (A master, not
/// loading, writes not paused.)
pub fn may_write_now(ctx: Ctx) -> bool {
    check(ctx) == Gate::Open
}

/// Are writes paused (`CLIENT PAUSE`, a coordinated `FAILOVER`, a shutdown
/// waiting for its replicas)?
pub fn writes_paused() -> bool {
    context_flags::avoid_replica_traffic()
}

/// The `dreamtown_write_gate` section of `INFO dreamtown`.
pub fn info_fields() -> Vec<(&'static CStr, u64)> {
    let (lease_ticks, waiter_passes) = HELD.with(|held| (held.lease_ticks.get(), held.waiter_passes.get()));
    vec![
        (c"writes_paused", u64::from(writes_paused())),
        (c"held_lease_ticks", lease_ticks),
        (c"held_waiter_passes", waiter_passes),
    ]
}
