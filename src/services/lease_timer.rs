//! The lease timer: finds leases that ran out and hands each to its family
//! (Dreams, Town) to expire, on a master only, and drives the catch-up.
//!
//! Commands that grant or extend a lease [`note`] it in the index
//! (`lease_index`); a tick pops the tenants due, lets their family expire
//! what is due (at most [`STEP_LEASES`] per step, [`TICK_LEASES`] and
//! [`TICK_BUDGET_US`] per tick) and re-notes the tenant's next deadline.
//! Before that, a tick runs one bounded turn of the catch-up
//! (`lease_catch_up`) when one is under way: a promotion, the end of a
//! load, `SWAPDB` or a module load into a populated keyspace restarts it
//! ([`restart_catch_up`]), becoming a replica (or a load starting) stops
//! it. Leases are expired from the first turn on, for the tenants indexed
//! so far; one found late is expired when found. The timer is armed only
//! while there is something to do, and holds its work while the server
//! may not write (`write_gate`).
//!
//! Cluster: only a master acts, and only on tenants the migration guard
//! lets it touch (`migration_guard::may_touch`: the slot is stable and
//! served here). A tenant whose slot is moving waits; one whose lease set
//! arrived by `RESTORE` on an importing node (learnt from the `restore`
//! keyspace event), or was written there by the import client of an atomic
//! slot migration (`slot_migration`), is kept until the move completes; one
//! whose lease set is gone from this node is forgotten when it comes due.
//!
//! Hooks for slot migration (`slot_migration`, Valkey 9's and Redis 8.4's
//! atomic slot migration): [`index_key`] indexes one arrived key,
//! [`index_slots`] the lease sets of arrived slots (Redis 8.4), [`forget_slots`]
//! drops the entries of slots that left (an entry whose lease set is gone
//! is dropped when it comes due anyway; forgetting keeps the index small).

use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use super::lease_catch_up::{self, micros, Scope};
use super::lease_index::{self, families, family_index, with_index, DeadlineIndex, LeaseFamily, SlotRange, Tenant};
use super::migration_guard;
use crate::glue::context_flags::ContextFlags;
use crate::glue::ctx::{selected_db, Ctx, RawString};
use crate::glue::db_scope::DbScope;
use crate::glue::module_state::PerLoad;
use crate::glue::server_events::{self, ServerEvent, ServerEventHandler, Subscription};
use crate::glue::session::Session;
use crate::glue::timer::{self, Timer};

/// How often the timer looks for due leases (ms): expiry is exact to this.
pub const TICK_MS: i64 = 100;

/// Time one tick may spend expiring (µs), checked after each step (one
/// tenant, at most [`STEP_LEASES`] of its leases): a burst of due leases,
/// of many tenants or of one, spreads over ticks [`CATCH_UP_MS`] apart
/// instead of stalling the server.
const TICK_BUDGET_US: u128 = 5_000;
/// Leases one step hands to a family at most: a tenant with more due goes
/// back into the index at its (past) next deadline and gets further steps,
/// in this tick while its budget lasts, else in the next.
const STEP_LEASES: u64 = 100;
/// Leases one tick handles at most, whatever the clock says: with the
/// budget, what bounds a tick, and what `INFO` shows a test
/// (`lease_max_tick_expired`) without timing anything.
const TICK_LEASES: u64 = 1_000;
/// Due tenants taken from the index at a time.
const BATCH: usize = 64;
/// Delay before the next tick while work is left over (ms).
const CATCH_UP_MS: i64 = 1;

/// The timer's part of the module state.
#[derive(Default)]
struct State {
    /// Set when a full catch-up must (re)start at the next tick.
    rebuild: AtomicBool,
    /// Is a tick scheduled? The timer runs only while there is something
    /// to do (leases indexed, or a catch-up pending on a master), so a
    /// server without leases pays nothing and the module can be unloaded.
    armed: AtomicBool,
    /// The id of the scheduled tick, while `armed` (to stop it when
    /// nothing is left: [`disarm_if_idle`]).
    timer: AtomicU64,
    /// The longest lease tick (catch-up turn plus expiry, µs).
    max_tick_us: AtomicU64,
    /// Most due leases one tick handled (expired or dropped).
    max_tick_leases: AtomicU64,
}

static STATE: PerLoad<State> = PerLoad::new();

/// Must a full catch-up (re)start at the next tick?
fn rebuild_due() -> bool {
    STATE.with(|state| state.rebuild.load(Ordering::Relaxed))
}

/// A command granted or extended a lease of `tenant` (of `family`, in the
/// session's database) due at `deadline_ms`.
pub fn note(session: &Session, family: &'static LeaseFamily, tenant: &str, deadline_ms: i64) {
    let db = selected_db(session.ctx());
    with_index(|index| index.note((family_index(family), db, tenant.to_owned()), deadline_ms));
    arm(session.ctx(), TICK_MS);
}

/// Hand the work now in `key` (a ready list or inbox) to the first waiter
/// blocked on it (`waiters`), as a push from FIRE/RECOVER/SEND does.
/// The one place where expiry wakes receivers.
pub fn wake_receivers(session: &Session, key: &[u8]) {
    super::waiters::work_arrived(session.ctx(), key);
}

/// Register the families, subscribe to the server events that call for a
/// catch-up and start one (a module loaded into a running server). Called
/// once when the module loads.
pub fn start(ctx: Ctx, all: Vec<&'static LeaseFamily>) -> Result<(), String> {
    lease_index::set_families(all);
    if !server_events::available() || !timer::available() {
        return Err("this server lacks module timers or server events (needed for leases)".into());
    }
    server_events::subscribe::<RoleAndLoadEvents>(
        ctx,
        &[Subscription::ReplicationRoleChanged, Subscription::Loading, Subscription::ReplAsyncLoad],
    )?;
    // Loaded into a running server (MODULE LOAD): its leases are indexed
    // by a catch-up from the first tick. At startup the dataset loads
    // later, and the loading event starts it then; an empty keyspace has
    // nothing to find (and no timer then keeps `MODULE UNLOAD` waiting).
    // The limits index is trusted at once only on a master with nothing
    // to find; else once that catch-up (or a promotion's) completes.
    if is_master(ctx) && !keyspace_is_empty(ctx) {
        restart_catch_up(ctx);
    } else if is_master(ctx) {
        super::limits_index::trust();
    }
    Ok(())
}

/// Does no database hold a key? O(databases).
fn keyspace_is_empty(ctx: Ctx) -> bool {
    let scope = DbScope::new(ctx);
    let mut db = 0;
    let mut empty = true;
    while empty && scope.select(db) {
        empty = scope.size() == 0;
        db += 1;
    }
    empty
}

/// Start a full catch-up at the next tick (dropping one under way).
fn restart_catch_up(ctx: Ctx) {
    STATE.with(|state| state.rebuild.store(true, Ordering::Relaxed));
    super::limits_index::untrust();
    arm(ctx, CATCH_UP_MS);
}

/// Slot-migration hook: a key arrived in the selected database of `ctx`
/// (a `RESTORE`, an imported key): index its tenant if it is a lease set.
/// O(log n) in the lease set; a no-op on a replica.
pub fn index_key(ctx: Ctx, name: &[u8]) {
    if !is_master(ctx) {
        return;
    }
    let session = Session::internal(ctx);
    for family in families() {
        let Some(tenant) = (family.tenant_of)(name) else { continue };
        if let Some(earliest) = (family.earliest)(&session, &tenant) {
            note(&session, family, &tenant, earliest);
        }
    }
}

/// Slot-migration hook: the keys of `ranges` arrived here (an import
/// completed). Queues a catch-up that indexes the lease sets of those
/// slots, in bounded turns like every catch-up (it walks the keyspace:
/// the module API has no per-slot scan on every server). Nothing happens
/// on a replica. Calls made while one runs are merged and run after it.
pub fn index_slots(ctx: Ctx, ranges: &[SlotRange]) {
    if ranges.is_empty() {
        return;
    }
    lease_catch_up::queue_slots(ranges);
    // Until that catch-up has looked, limits keys of those slots may be
    // unknown to the limits index.
    super::limits_index::untrust();
    arm(ctx, CATCH_UP_MS);
}

/// Slot-migration hook: the slots of `ranges` left this node (an export
/// completed): drop their tenants from the index now, O(tenants indexed).
/// Optional: an entry whose lease set is gone is dropped when it comes due.
pub fn forget_slots(ranges: &[SlotRange]) {
    let families = families();
    let scope = Scope::Slots(ranges.to_vec());
    with_index(|index| {
        index.forget_where(|(family, _, tenant)| {
            families.get(*family).is_some_and(|family| scope.wants((family.slot_tenant)(tenant)))
        })
    });
}

/// Schedule a tick in `delay_ms` unless one is scheduled.
fn arm(ctx: Ctx, delay_ms: i64) {
    if STATE.with(|state| state.armed.swap(true, Ordering::Relaxed)) {
        return;
    }
    let tick = timer::after(ctx, delay_ms, on_tick).id();
    STATE.with(|state| state.timer.store(tick, Ordering::Relaxed));
}

fn is_master(ctx: Ctx) -> bool {
    let flags = ContextFlags::of(ctx);
    flags.is_master() && !flags.loading()
}

fn loading(ctx: Ctx) -> bool {
    ContextFlags::of(ctx).loading()
}

/// Promotions and the ends of loads restart the catch-up.
struct RoleAndLoadEvents;

impl ServerEventHandler for RoleAndLoadEvents {
    fn on_event(ctx: Ctx, event: ServerEvent) {
        if restarts_catch_up(event) {
            restart_catch_up(ctx);
        }
    }
}

fn restarts_catch_up(event: ServerEvent) -> bool {
    // An async (swapdb) load that completed swapped the whole dataset; one
    // that was aborted left the old one. Only a replica loads async and a
    // replica keeps no index, so either way the next promotion's catch-up
    // is what counts; restarting here keeps the rule "a dataset swap
    // restarts the catch-up" without a case of its own.
    matches!(event, ServerEvent::BecameMaster | ServerEvent::LoadingEnded | ServerEvent::AsyncLoadEnded)
}

/// `SWAPDB` (`server_events`) exchanged two databases under the index's
/// database numbers (and under a catch-up's cursor): index them again.
pub fn databases_swapped(ctx: Ctx) {
    restart_catch_up(ctx);
}

/// Database `db` (`None`: every database) was emptied (`server_events`):
/// forget its tenants, O(tenants indexed) (a flush is O(keys) itself).
/// After a `FLUSHALL` there is nothing to catch up with either: a pending
/// or running catch-up is dropped. When nothing is left, the timer is
/// stopped at once, so that `MODULE UNLOAD` is not refused for it.
pub fn flushed(ctx: Ctx, db: Option<c_int>) {
    match db {
        None => {
            with_index(DeadlineIndex::clear);
            lease_catch_up::stop();
            STATE.with(|state| state.rebuild.store(false, Ordering::Relaxed));
            // No limits key is left anywhere.
            super::limits_index::clear();
            if is_master(ctx) {
                super::limits_index::trust();
            }
        }
        // A catch-up under way finds nothing in the emptied database.
        Some(db) => with_index(|index| index.forget_where(|(_, in_db, _)| *in_db == db)),
    }
    disarm_if_idle(ctx);
}

/// Keyspace events (`keyspace_events`). A key arrived by `RESTORE` (a
/// cluster slot migration, or by hand): if it is a lease set, index its
/// tenant. A lease set gone: deleted by the module's own write (an
/// acknowledgement, `TOWN.REQUEUE`, `DREAMS.RECOVER` ... removed its last
/// lease: `ZREM` fires `del` after it), or by someone else (`DEL`,
/// `UNLINK`, a TTL, eviction): forget its tenant now, O(log n), instead of
/// when its old deadline comes, so the index holds only tenants with
/// leases and the timer stops once none is left. (A lease set that still
/// holds expiry markers, leases that ran out whose late ACK is honoured,
/// is not gone: its entry goes when its deadline comes and the tick finds
/// nothing due.) Every other event returns at the first test, so the hot
/// commands' own events cost one comparison each here.
pub(super) fn on_keyspace_event(ctx: Ctx, event: &[u8], key: RawString) {
    if !matches!(event, b"del" | b"expired" | b"evicted" | b"move_from" | b"rename_from" | b"restore") {
        return;
    }
    if event == b"restore" {
        return index_key(ctx, crate::glue::string::bytes_of(key));
    }
    if with_index(|index| index.is_empty()) {
        return;
    }
    let Some((family, tenant)) = lease_index::lease_set_tenant(crate::glue::string::bytes_of(key)) else {
        return;
    };
    let db = selected_db(ctx);
    if with_index(|index| index.forget(&(family, db, tenant))) {
        disarm_if_idle(ctx);
    }
}

/// Stop the scheduled tick if nothing is left for it to do: no tenant
/// indexed, no catch-up running, queued or due to start.
fn disarm_if_idle(ctx: Ctx) {
    let idle = with_index(|index| index.is_empty()) && !rebuild_due() && !lease_catch_up::pending();
    if !idle || !STATE.with(|state| state.armed.swap(false, Ordering::Relaxed)) {
        return;
    }
    timer::stop(ctx, Timer::from_id(STATE.with(|state| state.timer.swap(0, Ordering::Relaxed))));
}

fn on_tick(ctx: Ctx) {
    STATE.with(|state| {
        state.armed.store(false, Ordering::Relaxed);
        state.timer.store(0, Ordering::Relaxed);
    });
    let started = Instant::now();
    let next = catch_unwind(AssertUnwindSafe(|| tick(ctx))).unwrap_or(Some(TICK_MS));
    let took = micros(started);
    STATE.with(|state| state.max_tick_us.fetch_max(took, Ordering::Relaxed));
    crate::glue::latency::report(crate::glue::latency::LEASE_TICK, started);
    if let Some(delay) = next {
        let _ = catch_unwind(AssertUnwindSafe(|| arm(ctx, delay)));
    }
}

/// One tick; when the next is needed (ms), if at all.
fn tick(ctx: Ctx) -> Option<i64> {
    // Only a master expires; a replica applies its master's expiries. A
    // replica keeps no index and runs no catch-up: becoming master (or a
    // load ending) starts one.
    if !is_master(ctx) {
        with_index(DeadlineIndex::clear);
        super::limits_index::untrust();
        lease_catch_up::stop();
        if !loading(ctx) {
            // A replica's sync ended: nothing to catch up until promoted.
            STATE.with(|state| state.rebuild.store(false, Ordering::Relaxed));
        }
        return None;
    }
    // A paused master (CLIENT PAUSE, FAILOVER) is still a master: its index
    // and catch-up stay as they are, nothing is written, and the next look
    // is soon, so due leases expire as soon as the pause ends (write_gate).
    if !super::write_gate::may_write_now(ctx) {
        super::write_gate::held_lease_tick();
        return Some(super::write_gate::POLL_MS);
    }
    let session = Session::internal(ctx);
    let families = families();
    if STATE.with(|state| state.rebuild.swap(false, Ordering::Relaxed)) {
        lease_catch_up::begin(Scope::Everything, session.now_ms());
    }
    let catching_up = lease_catch_up::turn(&session, &families);
    if !catching_up && !rebuild_due() && !lease_catch_up::pending() {
        // Every limits key of the keyspace has been found or noted.
        super::limits_index::trust();
    }
    let left_over = expire_due(&session, &families);
    if catching_up || left_over {
        Some(CATCH_UP_MS)
    } else if with_index(|index| index.is_empty()) {
        None
    } else {
        Some(TICK_MS)
    }
}

/// Expire what is due, within the tick's budget; true when due tenants
/// are left for the next tick.
fn expire_due(session: &Session, families: &[&'static LeaseFamily]) -> bool {
    let ctx = session.ctx();
    let started = Instant::now();
    let now = session.now_ms();
    let in_cluster = session.in_cluster();
    let scope = DbScope::new(ctx);
    let mut left_over = false;
    let mut handled = 0u64;
    'batches: loop {
        let due = with_index(|index| index.take_due(now, BATCH));
        if due.is_empty() {
            break;
        }
        let mut due = due.into_iter();
        while let Some((family, db, tenant)) = due.next() {
            if handled >= TICK_LEASES || started.elapsed().as_micros() >= TICK_BUDGET_US {
                // Put back what this tick will not reach.
                let rest: Vec<Tenant> = std::iter::once((family, db, tenant)).chain(due).collect();
                with_index(|index| rest.into_iter().for_each(|tenant| index.note(tenant, now)));
                left_over = true;
                break 'batches;
            }
            let Some(lease_family) = families.get(family) else { continue };
            if !scope.select(db) {
                continue;
            }
            // In a cluster, leave a tenant alone while its slot moves or
            // when another node owns it (migration_guard). A node importing
            // the slot already holds the lease set (it arrived by RESTORE):
            // keep such a tenant and look again in a second; forget one
            // whose lease set is not here.
            if in_cluster {
                let here = (lease_family.slot_tenant)(&tenant)
                    .is_some_and(|slot_tenant| migration_guard::may_touch(ctx, slot_tenant.as_bytes()));
                if !here {
                    if (lease_family.earliest)(session, &tenant).is_some() {
                        with_index(|index| index.note((family, db, tenant), now.saturating_add(1_000)));
                    }
                    continue;
                }
            }
            let limit = STEP_LEASES.min(TICK_LEASES - handled).max(1);
            let (done, next) = (lease_family.expire)(session, &tenant, now, limit);
            handled += done;
            if let Some(next) = next {
                with_index(|index| index.note((family, db, tenant), next));
            }
        }
    }
    drop(scope);
    STATE.with(|state| state.max_tick_leases.fetch_max(handled, Ordering::Relaxed));
    left_over
}

/// The `dreamtown_leases` section of `INFO dreamtown`: the index, the
/// timer, then the catch-up.
pub fn info_fields() -> Vec<(&'static CStr, u64)> {
    let (tenants, names) = with_index(|index| (index.len() as u64, index.name_bytes() as u64));
    let mut fields = vec![
        (c"lease_tenants_indexed", tenants),
        (c"lease_index_bytes", tenants * DeadlineIndex::bytes_per_entry() as u64 + names),
        (c"lease_max_tick_us", STATE.with(|state| state.max_tick_us.load(Ordering::Relaxed))),
        (c"lease_max_tick_expired", STATE.with(|state| state.max_tick_leases.load(Ordering::Relaxed))),
        (c"catching_up", u64::from(lease_catch_up::pending() || rebuild_due())),
    ];
    fields.extend(lease_catch_up::info_fields());
    fields
}
