//! The module's subscriptions to the `FlushDB` and `SwapDB` server events,
//! handed to every mechanism that keeps state beside the keyspace, so that
//! `FLUSHALL`, `FLUSHDB` and `SWAPDB` behave as natively as they do for
//! the data itself:
//!
//! * a flush (`FLUSHALL`, `FLUSHDB`, and anything else that empties a
//!   database: a replica's full sync, `DEBUG RELOAD`) forgets the lease-index
//!   entries of the flushed database(s) (`leases`: the timer stops when
//!   nothing is left, so `MODULE UNLOAD` works at once), and the per-tenant
//!   totals (`tenant_stats`) and fire ages (`fire_ages`) when nothing they may
//!   describe is left (see [`tables_describe_nothing`]);
//! * a swap wakes the blocked `DREAMS.DRAIN` / `TOWN.RECV ... BLOCK` of both
//!   databases (`waiters`: the work under their keys changed, as a push
//!   would; `BLPOP` is served the same way natively) and restarts the lease
//!   catch-up (`leases`).
//!
//! Why here and not in each mechanism: a module has one callback per
//! server event (`RM_SubscribeToServerEvent` replaces an earlier one).
//!
//! The per-tenant tables are keyed by tenant name, not by database (almost
//! every deployment uses one database, and keeping the database in the key
//! would cost every counting command). So the module remembers which
//! databases its commands ran in ([`note_db`], one bit per database, 63 and
//! above sharing the last): a `FLUSHALL` forgets the tables, and a `FLUSHDB`
//! forgets them when no other database the module served still holds a
//! key. A `FLUSHDB` of one of several databases in use keeps them: what
//! described the flushed database then goes as for deleted keys (a fire
//! age when its list is deleted or next seen empty, a tenant's totals when
//! a crowded table sees it idle).

use std::cell::Cell;
use std::os::raw::c_int;

use super::{lease_timer, waiters};
use crate::glue::ctx::Ctx;
use crate::glue::db_scope::DbScope;
use crate::glue::module_state::PerLoad;
use crate::glue::server_events::{self, ServerEvent, ServerEventHandler, Subscription};
use crate::metrics::{fire_ages, tenant_stats};

/// This subscriber's part of the module state.
#[derive(Default)]
struct State {
    /// The databases module commands ran in since the tables were last
    /// forgotten: bit `n` for database `n`, the last bit for 63 and above.
    dbs_served: Cell<u64>,
}

static STATE: PerLoad<State> = PerLoad::new();

fn dbs_served() -> u64 {
    STATE.with(|state| state.dbs_served.get())
}

fn set_dbs_served(dbs: u64) {
    STATE.with(|state| state.dbs_served.set(dbs));
}

fn db_bit(db: c_int) -> u64 {
    1u64 << db.clamp(0, 63)
}

/// A module command runs in database `db` (cheap: one load, and one store
/// the first time only).
pub fn note_db(db: c_int) {
    let bit = db_bit(db);
    STATE.with(|state| {
        let served = state.dbs_served.get();
        if served & bit == 0 {
            state.dbs_served.set(served | bit);
        }
    });
}

/// Subscribe (module load).
pub fn subscribe(ctx: Ctx) -> Result<(), String> {
    if !server_events::available() {
        return Err("this server lacks server events".into());
    }
    server_events::subscribe::<FlushAndSwap>(ctx, &[Subscription::FlushDb, Subscription::SwapDb])
}

/// The subscriber of `FLUSHDB`/`FLUSHALL` and `SWAPDB`.
struct FlushAndSwap;

impl ServerEventHandler for FlushAndSwap {
    fn on_event(ctx: Ctx, event: ServerEvent) {
        match event {
            ServerEvent::Flushed { db } => flushed(ctx, db),
            ServerEvent::Swapped { a, b } => swapped(ctx, a, b),
            _ => {}
        }
    }
}

/// Database `db` (`None`: every database) was emptied.
fn flushed(ctx: Ctx, db: Option<c_int>) {
    lease_timer::flushed(ctx, db);
    if tables_describe_nothing(ctx, db) {
        tenant_stats::forget_all();
        fire_ages::forget_all();
        set_dbs_served(0);
    }
}

/// After emptying `db` (`None`: all), can the per-tenant tables describe
/// anything still in the keyspace? Not when every database the module
/// served, other than `db`, is empty: O(databases served).
fn tables_describe_nothing(ctx: Ctx, db: Option<c_int>) -> bool {
    let Some(db) = db else { return true };
    let others = dbs_served() & !db_bit(db);
    if others == 0 {
        return true;
    }
    let scope = DbScope::new(ctx);
    let mut empty = true;
    for other in (0..64).filter(|n| others & (1u64 << n) != 0) {
        if other == 63 {
            // 63 and above share a bit: look at every one of them.
            let mut n = 63;
            while empty && scope.select(n) {
                empty = n == db || scope.size() == 0;
                n += 1;
            }
        } else if scope.select(other) {
            empty = scope.size() == 0;
        }
        if !empty {
            break;
        }
    }
    empty
}

/// Databases `a` and `b` swapped contents.
fn swapped(ctx: Ctx, a: c_int, b: c_int) {
    // What the module served in one is now in the other.
    let (bit_a, bit_b) = (db_bit(a), db_bit(b));
    let served = dbs_served();
    let (had_a, had_b) = (served & bit_a != 0, served & bit_b != 0);
    let mut now = served & !(bit_a | bit_b);
    if had_a {
        now |= bit_b;
    }
    if had_b {
        now |= bit_a;
    }
    set_dbs_served(now);
    lease_timer::databases_swapped(ctx);
    waiters::databases_swapped(ctx, a, b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn databases_share_the_last_bit_from_63_on() {
        assert_eq!(db_bit(0), 1);
        assert_eq!(db_bit(5), 32);
        assert_eq!(db_bit(63), 1 << 63);
        assert_eq!(db_bit(1_000), 1 << 63);
        assert_eq!(db_bit(-1), 1);
    }
}
