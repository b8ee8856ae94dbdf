//! The lease timer: finds leases that ran out and hands each to its family
//! (Dreams, Town) to expire, on a master only; and the catch-up that finds
//! the leases a master must take over.
//!
//! Deadlines live in the keyspace (one sorted set per tenant, scored by
//! deadline in ms), so they replicate and persist. What lives here is an
//! in-memory index, "tenant -> earliest deadline", so that a tick costs
//! nothing for tenants without leases and O(log n) per due tenant: commands
//! that grant or extend a lease [`note`] it; a tick pops the tenants due,
//! lets their family expire what is due and re-notes the tenant's next
//! deadline. An entry may be early (a lease was acknowledged or extended):
//! the family then finds nothing due and reports the real next deadline.
//!
//! The catch-up. A server that becomes a master (`REPLICAOF NO ONE`,
//! failover), ends a load (RDB, AOF, `DEBUG RELOAD`, the swap of an async
//! replica load, `SWAPDB`) or loads the module into a populated keyspace must index
//! leases no command here noted. It walks every database with
//! `RedisModule_Scan` and a cursor kept between turns, at most
//! `dreamtown.catch-up-keys-per-turn` keys (10,000) and [`CATCH_UP_BUDGET_US`] per turn, one
//! turn per timer tick [`CATCH_UP_MS`] apart, so no turn of the event loop
//! costs time that grows with the keyspace (the old synchronous `SCAN`
//! stalled a 5M-key server for 9 s). Leases are expired from the first
//! turn on, for the tenants indexed so far; one found late is expired when
//! found, so a lease runs out at most one catch-up late (`INFO dreamtown`,
//! section `dreamtown_leases`, shows progress and the longest turn).
//! Commands keep noting grants and extensions while it runs; what the
//! catch-up finds again only makes an entry earlier, which is harmless. A
//! new promotion or load restarts it from the start, becoming a replica
//! (or a load starting) stops it.
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

use std::collections::{BTreeSet, HashMap};
use std::ffi::CStr;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use redis_module::raw;

use super::api::api;
use super::migration_guard;
use super::session::Session;
use super::stats::Total;

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

/// Keys one catch-up turn examines at most: the config
/// `dreamtown.catch-up-keys-per-turn` (default 10,000; `RedisModule_Scan`
/// returns a hash bucket at a time, so a turn may pass it by a bucket).
fn keys_per_turn() -> u64 {
    u64::try_from(super::config::CATCH_UP_KEYS_PER_TURN.load(Ordering::Relaxed)).unwrap_or(10_000)
}
/// Time one catch-up turn may take (µs), checked after every
/// `RedisModule_Scan` call: one call is one hash bucket, whose keys each
/// cost a callback and a name check, so a clock read per call is cheap
/// beside it and keeps a turn within a bucket of its budget.
const CATCH_UP_BUDGET_US: u128 = 2_000;

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
type Tenant = (usize, i32, String);

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
    fn name_bytes(&self) -> usize {
        self.by_tenant.keys().map(|(_, _, name)| 2 * name.len()).sum()
    }
}

/// What a catch-up looks for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Scope {
    /// Every lease set (promotion, load, module load): the index is
    /// cleared first.
    Everything,
    /// Only lease sets in these slots (imported by a slot migration); the
    /// index keeps what it has.
    Slots(Vec<SlotRange>),
}

impl Scope {
    fn wants(&self, slot_tenant: Option<&str>) -> bool {
        match self {
            Scope::Everything => true,
            Scope::Slots(ranges) => slot_tenant.is_some_and(|tag| {
                let slot = super::cluster_slot::key_slot(tag.as_bytes());
                ranges.iter().any(|(low, high)| (*low..=*high).contains(&slot))
            }),
        }
    }
}

/// A `RedisModule_Scan` cursor (a server pointer, used on the main thread
/// only; the mutex needs `Send`).
struct Cursor(*mut raw::RedisModuleScanCursor);
// SAFETY: only touched from the server's main thread (timer callbacks and
// commands), under the CATCH_UP mutex.
unsafe impl Send for Cursor {}

/// A catch-up under way.
struct Running {
    scope: Scope,
    db: c_int,
    cursor: Cursor,
    started_ms: i64,
}

/// The catch-up's state: the one running and the slot ranges queued
/// behind it.
#[derive(Default)]
struct CatchUp {
    running: Option<Running>,
    queued_slots: Vec<SlotRange>,
}

static INDEX: Mutex<Option<DeadlineIndex>> = Mutex::new(None);
static FAMILIES: Mutex<Vec<&'static LeaseFamily>> = Mutex::new(Vec::new());
static CATCH_UP: Mutex<Option<CatchUp>> = Mutex::new(None);
/// Set when a full catch-up must (re)start at the next tick.
static REBUILD: AtomicBool = AtomicBool::new(false);
/// Is a tick scheduled? The timer runs only while there is something to
/// do (leases indexed, or a catch-up pending on a master), so a server
/// without leases pays nothing and the module can be unloaded.
static ARMED: AtomicBool = AtomicBool::new(false);
/// The id of the scheduled tick, while [`ARMED`] (to stop it when nothing
/// is left: [`disarm_if_idle`]).
static TIMER: AtomicU64 = AtomicU64::new(0);

/// Catch-ups started (full or by slots) and completed.
static CATCH_UPS_STARTED: Total = Total::new();
static CATCH_UPS_COMPLETED: Total = Total::new();
/// Catch-ups dropped unfinished (a restart, or the server became a replica).
static CATCH_UPS_ABANDONED: Total = Total::new();
/// Of the catch-up running, or else the last one: keys examined, turns,
/// tenants indexed, and the duration when it completed (ms).
static RUN_KEYS: AtomicU64 = AtomicU64::new(0);
static RUN_TURNS: AtomicU64 = AtomicU64::new(0);
static RUN_TENANTS: AtomicU64 = AtomicU64::new(0);
static LAST_DURATION_MS: AtomicU64 = AtomicU64::new(0);
/// Since the module loaded: all keys examined and turns taken by
/// catch-ups, the most keys one turn examined, the longest turn (µs).
static KEYS_EXAMINED: Total = Total::new();
static TURNS: Total = Total::new();
static MAX_KEYS_PER_TURN: AtomicU64 = AtomicU64::new(0);
static MAX_TURN_US: AtomicU64 = AtomicU64::new(0);
/// The most CPU time of the main thread one turn used (µs): unlike the
/// wall-clock figure, not inflated when the machine preempts the server.
static MAX_TURN_CPU_US: AtomicU64 = AtomicU64::new(0);
/// The longest lease tick (catch-up turn plus expiry, µs).
static MAX_TICK_US: AtomicU64 = AtomicU64::new(0);
/// Most due leases one tick handled (expired or dropped).
static MAX_TICK_LEASES: AtomicU64 = AtomicU64::new(0);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn with_index<R>(run: impl FnOnce(&mut DeadlineIndex) -> R) -> R {
    run(lock(&INDEX).get_or_insert_with(DeadlineIndex::default))
}

fn with_catch_up<R>(run: impl FnOnce(&mut CatchUp) -> R) -> R {
    run(lock(&CATCH_UP).get_or_insert_with(CatchUp::default))
}

fn families() -> Vec<&'static LeaseFamily> {
    lock(&FAMILIES).clone()
}

fn family_index(family: &'static LeaseFamily) -> usize {
    families().iter().position(|known| std::ptr::eq(*known, family)).unwrap_or(usize::MAX)
}

/// A command granted or extended a lease of `tenant` (of `family`, in the
/// session's database) due at `deadline_ms`.
pub fn note(session: &Session, family: &'static LeaseFamily, tenant: &str, deadline_ms: i64) {
    let db = unsafe { api!(RedisModule_GetSelectedDb)(session.ctx()) };
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
pub fn start(ctx: *mut raw::RedisModuleCtx, all: Vec<&'static LeaseFamily>) -> Result<(), String> {
    *lock(&FAMILIES) = all;
    let (Some(subscribe), Some(_)) =
        (unsafe { raw::RedisModule_SubscribeToServerEvent }, unsafe { raw::RedisModule_CreateTimer })
    else {
        return Err("this server lacks module timers or server events (needed for leases)".into());
    };
    for id in [
        raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
        raw::REDISMODULE_EVENT_LOADING,
        raw::REDISMODULE_EVENT_REPL_ASYNC_LOAD,
    ] {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        if unsafe { subscribe(ctx, event, Some(on_server_event)) } != raw::REDISMODULE_OK as c_int {
            return Err(format!("could not subscribe to server event {id}"));
        }
    }
    // Loaded into a running server (MODULE LOAD): its leases are indexed
    // by a catch-up from the first tick. At startup the dataset loads
    // later, and the loading event starts it then; an empty keyspace has
    // nothing to find (and no timer then keeps `MODULE UNLOAD` waiting).
    if is_master(ctx) && !keyspace_is_empty(ctx) {
        restart_catch_up(ctx);
    }
    Ok(())
}

/// Does no database hold a key? O(databases).
fn keyspace_is_empty(ctx: *mut raw::RedisModuleCtx) -> bool {
    let select = api!(RedisModule_SelectDb);
    let size = api!(RedisModule_DbSize);
    let mut db = 0;
    let mut empty = true;
    while empty && unsafe { select(ctx, db) } == raw::REDISMODULE_OK as c_int {
        empty = unsafe { size(ctx) } == 0;
        db += 1;
    }
    unsafe { select(ctx, 0) };
    empty
}

/// Start a full catch-up at the next tick (dropping one under way).
fn restart_catch_up(ctx: *mut raw::RedisModuleCtx) {
    REBUILD.store(true, Ordering::Relaxed);
    arm(ctx, CATCH_UP_MS);
}

/// Slot-migration hook: a key arrived in the selected database of `ctx`
/// (a `RESTORE`, an imported key): index its tenant if it is a lease set.
/// O(log n) in the lease set; a no-op on a replica.
pub fn index_key(ctx: *mut raw::RedisModuleCtx, name: &[u8]) {
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
pub fn index_slots(ctx: *mut raw::RedisModuleCtx, ranges: &[SlotRange]) {
    if ranges.is_empty() {
        return;
    }
    with_catch_up(|catch_up| catch_up.queued_slots.extend_from_slice(ranges));
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
fn arm(ctx: *mut raw::RedisModuleCtx, delay_ms: i64) {
    if ARMED.swap(true, Ordering::Relaxed) {
        return;
    }
    if let Some(create) = unsafe { raw::RedisModule_CreateTimer } {
        let timer = unsafe { create(ctx, delay_ms, Some(on_tick), std::ptr::null_mut()) };
        TIMER.store(timer, Ordering::Relaxed);
    }
}

fn is_master(ctx: *mut raw::RedisModuleCtx) -> bool {
    let flags = unsafe { api!(RedisModule_GetContextFlags)(ctx) as u32 };
    flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0 && flags & raw::REDISMODULE_CTX_FLAGS_LOADING == 0
}

fn loading(ctx: *mut raw::RedisModuleCtx) -> bool {
    let flags = unsafe { api!(RedisModule_GetContextFlags)(ctx) as u32 };
    flags & raw::REDISMODULE_CTX_FLAGS_LOADING != 0
}

unsafe extern "C" fn on_server_event(
    ctx: *mut raw::RedisModuleCtx,
    event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    let becomes_master = event.id == raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED
        && subevent == raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_MASTER;
    let loaded = event.id == raw::REDISMODULE_EVENT_LOADING && subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED;
    // An async (swapdb) load that completed swapped the whole dataset; one
    // that was aborted left the old one. Only a replica loads async and a
    // replica keeps no index, so either way the next promotion's catch-up
    // is what counts; restarting here keeps the rule "a dataset swap
    // restarts the catch-up" without a case of its own.
    let swapped = event.id == raw::REDISMODULE_EVENT_REPL_ASYNC_LOAD
        && subevent != raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_STARTED;
    if becomes_master || loaded || swapped {
        let _ = catch_unwind(AssertUnwindSafe(|| restart_catch_up(ctx)));
    }
}

/// `SWAPDB` (`server_events`) exchanged two databases under the index's
/// database numbers (and under a catch-up's cursor): index them again.
pub fn databases_swapped(ctx: *mut raw::RedisModuleCtx) {
    restart_catch_up(ctx);
}

/// Database `db` (`None`: every database) was emptied (`server_events`):
/// forget its tenants, O(tenants indexed) (a flush is O(keys) itself).
/// After a `FLUSHALL` there is nothing to catch up with either: a pending
/// or running catch-up is dropped. When nothing is left, the timer is
/// stopped at once, so that `MODULE UNLOAD` is not refused for it.
pub fn flushed(ctx: *mut raw::RedisModuleCtx, db: Option<c_int>) {
    match db {
        None => {
            with_index(DeadlineIndex::clear);
            stop_catch_up();
            REBUILD.store(false, Ordering::Relaxed);
        }
        // A catch-up under way finds nothing in the emptied database.
        Some(db) => with_index(|index| index.forget_where(|(_, in_db, _)| *in_db == db)),
    }
    disarm_if_idle(ctx);
}

/// Keyspace events (`keyspace_events`). A key arrived by `RESTORE` (a
/// cluster slot migration, or by hand): if it is a lease set, index its
/// tenant. A lease set deleted, expired or evicted by someone else than
/// the module (`DEL`, `UNLINK`, a TTL, eviction; `own_write` is false):
/// forget its tenant now, O(log n), instead of when its deadline comes,
/// so the timer stops once no lease is left. (The module's own writes
/// that empty a lease set leave the entry to its deadline, when the tick
/// finds nothing due and drops it: nothing is added to the hot commands.)
pub(super) fn on_keyspace_event(
    ctx: *mut raw::RedisModuleCtx,
    event: &[u8],
    key: *mut raw::RedisModuleString,
    own_write: bool,
) {
    if event == b"restore" {
        return index_key(ctx, super::string::bytes_of(key));
    }
    // The module's own writes first (the hot commands'), at one test.
    if own_write || !matches!(event, b"del" | b"expired" | b"evicted" | b"move_from" | b"rename_from") {
        return;
    }
    if with_index(|index| index.is_empty()) {
        return;
    }
    let name = super::string::bytes_of(key);
    let db = unsafe { api!(RedisModule_GetSelectedDb)(ctx) };
    let mut forgot = false;
    for (number, family) in families().into_iter().enumerate() {
        if let Some(tenant) = (family.tenant_of)(name) {
            forgot |= with_index(|index| index.forget(&(number, db, tenant)));
        }
    }
    if forgot {
        disarm_if_idle(ctx);
    }
}

/// Stop the scheduled tick if nothing is left for it to do: no tenant
/// indexed, no catch-up running, queued or due to start.
fn disarm_if_idle(ctx: *mut raw::RedisModuleCtx) {
    let idle = with_index(|index| index.is_empty())
        && !REBUILD.load(Ordering::Relaxed)
        && with_catch_up(|catch_up| catch_up.running.is_none() && catch_up.queued_slots.is_empty());
    if !idle || !ARMED.swap(false, Ordering::Relaxed) {
        return;
    }
    let timer = TIMER.swap(0, Ordering::Relaxed);
    let mut data: *mut c_void = std::ptr::null_mut();
    unsafe { api!(RedisModule_StopTimer)(ctx, timer, &mut data) };
}

/// `MODULE UNLOAD` (the server refuses it while a tick is scheduled, so
/// none is): drop everything, as a fresh load would find it. The library
/// may stay mapped (a thread-local registered a destructor), and a later
/// `MODULE LOAD` would see these statics as they were left.
pub fn unload() {
    *lock(&INDEX) = None;
    stop_catch_up();
    *lock(&CATCH_UP) = None;
    *lock(&FAMILIES) = Vec::new();
    REBUILD.store(false, Ordering::Relaxed);
    ARMED.store(false, Ordering::Relaxed);
    TIMER.store(0, Ordering::Relaxed);
}

unsafe extern "C" fn on_tick(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    ARMED.store(false, Ordering::Relaxed);
    TIMER.store(0, Ordering::Relaxed);
    let started = Instant::now();
    let next = catch_unwind(AssertUnwindSafe(|| tick(ctx))).unwrap_or(Some(TICK_MS));
    MAX_TICK_US.fetch_max(micros(started), Ordering::Relaxed);
    if let Some(delay) = next {
        let _ = catch_unwind(AssertUnwindSafe(|| arm(ctx, delay)));
    }
}

/// CPU time used by the calling thread so far (µs).
fn thread_cpu_us() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return 0;
    }
    u64::try_from(now.tv_sec).unwrap_or(0).saturating_mul(1_000_000) + u64::try_from(now.tv_nsec).unwrap_or(0) / 1_000
}

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// One tick; when the next is needed (ms), if at all.
fn tick(ctx: *mut raw::RedisModuleCtx) -> Option<i64> {
    // Only a master expires; a replica applies its master's expiries. A
    // replica keeps no index and runs no catch-up: becoming master (or a
    // load ending) starts one.
    if !is_master(ctx) {
        with_index(DeadlineIndex::clear);
        stop_catch_up();
        if !loading(ctx) {
            // A replica's sync ended: nothing to catch up until promoted.
            REBUILD.store(false, Ordering::Relaxed);
        }
        return None;
    }
    // A paused master (CLIENT PAUSE, FAILOVER) is still a master: its index
    // and catch-up stay as they are, nothing is written, and the next look
    // is soon, so due leases expire as soon as the pause ends (write_gate).
    if !super::write_gate::may_write_now(ctx) {
        super::write_gate::HELD_LEASE_TICKS.bump();
        return Some(super::write_gate::POLL_MS);
    }
    let session = Session::internal(ctx);
    let families = families();
    if REBUILD.swap(false, Ordering::Relaxed) {
        begin(Scope::Everything, session.now_ms());
    }
    let catching_up = catch_up_turn(&session, &families);
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
    let select = api!(RedisModule_SelectDb);
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
            if unsafe { select(ctx, db) } != raw::REDISMODULE_OK as c_int {
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
    unsafe { select(ctx, 0) };
    MAX_TICK_LEASES.fetch_max(handled, Ordering::Relaxed);
    left_over
}

/// Start a catch-up of `scope`, dropping one under way (a full one clears
/// the index and the queued slot ranges: it covers them).
fn begin(scope: Scope, now: i64) {
    let cursor = unsafe { api!(RedisModule_ScanCursorCreate)() };
    let dropped = with_catch_up(|catch_up| {
        if scope == Scope::Everything {
            catch_up.queued_slots.clear();
        }
        catch_up.running.replace(Running { scope: scope.clone(), db: 0, cursor: Cursor(cursor), started_ms: now })
    });
    if let Some(dropped) = dropped {
        CATCH_UPS_ABANDONED.bump();
        unsafe { api!(RedisModule_ScanCursorDestroy)(dropped.cursor.0) };
    }
    if scope == Scope::Everything {
        with_index(DeadlineIndex::clear);
    }
    CATCH_UPS_STARTED.bump();
    RUN_KEYS.store(0, Ordering::Relaxed);
    RUN_TURNS.store(0, Ordering::Relaxed);
    RUN_TENANTS.store(0, Ordering::Relaxed);
}

/// Drop the catch-up under way and the queued slot ranges (the server
/// became a replica or started loading).
fn stop_catch_up() {
    let dropped = with_catch_up(|catch_up| {
        catch_up.queued_slots.clear();
        catch_up.running.take()
    });
    if let Some(dropped) = dropped {
        CATCH_UPS_ABANDONED.bump();
        unsafe { api!(RedisModule_ScanCursorDestroy)(dropped.cursor.0) };
    }
}

/// What the scan callback gathers: keys seen, and the names of lease sets.
#[derive(Default)]
struct Gathered {
    examined: u64,
    found: Vec<(usize, String)>,
    families: Vec<&'static LeaseFamily>,
}

unsafe extern "C" fn on_scanned(
    _ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    _key: *mut raw::RedisModuleKey,
    data: *mut c_void,
) {
    // Only names are read here: opening other keys inside the scan could
    // rehash the dictionary under it.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let Some(gathered) = (unsafe { data.cast::<Gathered>().as_mut() }) else { return };
        gathered.examined += 1;
        let name = super::string::bytes_of(name);
        for (number, family) in gathered.families.iter().enumerate() {
            if let Some(tenant) = (family.tenant_of)(name) {
                gathered.found.push((number, tenant));
            }
        }
    }));
}

/// One bounded turn of the catch-up, if one runs (or slot ranges are
/// queued); true while it has more to do.
fn catch_up_turn(session: &Session, families: &[&'static LeaseFamily]) -> bool {
    let ctx = session.ctx();
    let Some((scope, mut db, cursor)) = with_catch_up(|catch_up| {
        if catch_up.running.is_none() && !catch_up.queued_slots.is_empty() {
            let ranges = std::mem::take(&mut catch_up.queued_slots);
            return Some(Err(ranges));
        }
        catch_up.running.as_ref().map(|running| Ok((running.scope.clone(), running.db, running.cursor.0)))
    })
    .and_then(|next| match next {
        Ok(running) => Some(running),
        Err(ranges) => {
            begin(Scope::Slots(ranges), session.now_ms());
            with_catch_up(|catch_up| catch_up.running.as_ref().map(|r| (r.scope.clone(), r.db, r.cursor.0)))
        }
    }) else {
        return false;
    };
    let started = Instant::now();
    let cpu_started = thread_cpu_us();
    let select = api!(RedisModule_SelectDb);
    let scan = api!(RedisModule_Scan);
    let mut gathered = Gathered { families: families.to_vec(), ..Gathered::default() };
    let mut indexed = 0u64;
    let mut finished = false;
    let limit = keys_per_turn();
    loop {
        if unsafe { select(ctx, db) } != raw::REDISMODULE_OK as c_int {
            // Past the last database.
            finished = true;
            break;
        }
        let more = unsafe { scan(ctx, cursor, Some(on_scanned), (&mut gathered as *mut Gathered).cast()) };
        indexed += index_found(session, &scope, db, &mut gathered.found, families);
        if more == 0 {
            // This database is done: the next one, with the cursor restarted.
            unsafe { api!(RedisModule_ScanCursorRestart)(cursor) };
            db += 1;
            continue;
        }
        if gathered.examined >= limit || started.elapsed().as_micros() >= CATCH_UP_BUDGET_US {
            break;
        }
    }
    unsafe { select(ctx, 0) };
    let took = micros(started);
    KEYS_EXAMINED.add(gathered.examined);
    TURNS.bump();
    MAX_KEYS_PER_TURN.fetch_max(gathered.examined, Ordering::Relaxed);
    MAX_TURN_US.fetch_max(took, Ordering::Relaxed);
    MAX_TURN_CPU_US.fetch_max(thread_cpu_us().saturating_sub(cpu_started), Ordering::Relaxed);
    RUN_KEYS.fetch_add(gathered.examined, Ordering::Relaxed);
    RUN_TURNS.fetch_add(1, Ordering::Relaxed);
    RUN_TENANTS.fetch_add(indexed, Ordering::Relaxed);
    let done = with_catch_up(|catch_up| {
        if finished {
            catch_up.running.take()
        } else {
            if let Some(running) = catch_up.running.as_mut() {
                running.db = db;
            }
            None
        }
    });
    if let Some(done) = done {
        unsafe { api!(RedisModule_ScanCursorDestroy)(done.cursor.0) };
        CATCH_UPS_COMPLETED.bump();
        let now = session.now_ms();
        LAST_DURATION_MS.store(u64::try_from(now.saturating_sub(done.started_ms)).unwrap_or(0), Ordering::Relaxed);
        // Slot ranges queued meanwhile run next.
        return with_catch_up(|catch_up| !catch_up.queued_slots.is_empty());
    }
    true
}

/// Index the lease sets gathered (in database `db`, selected) that the
/// scope wants; how many were indexed.
fn index_found(
    session: &Session,
    scope: &Scope,
    db: c_int,
    found: &mut Vec<(usize, String)>,
    families: &[&'static LeaseFamily],
) -> u64 {
    let mut indexed = 0;
    for (number, tenant) in found.drain(..) {
        let Some(family) = families.get(number) else { continue };
        if !scope.wants((family.slot_tenant)(&tenant)) {
            continue;
        }
        if let Some(earliest) = (family.earliest)(session, &tenant) {
            with_index(|index| index.note((number, db, tenant), earliest));
            indexed += 1;
        }
    }
    indexed
}

/// The `dreamtown_leases` section of `INFO dreamtown`.
pub fn info_fields() -> Vec<(&'static CStr, u64)> {
    let (tenants, names) = with_index(|index| (index.len() as u64, index.name_bytes() as u64));
    let catching_up = with_catch_up(|catch_up| catch_up.running.is_some() || !catch_up.queued_slots.is_empty());
    vec![
        (c"lease_tenants_indexed", tenants),
        (c"lease_index_bytes", tenants * DeadlineIndex::bytes_per_entry() as u64 + names),
        (c"lease_max_tick_us", MAX_TICK_US.load(Ordering::Relaxed)),
        (c"lease_max_tick_expired", MAX_TICK_LEASES.load(Ordering::Relaxed)),
        (c"catching_up", u64::from(catching_up || REBUILD.load(Ordering::Relaxed))),
        (c"catch_ups_started", CATCH_UPS_STARTED.get()),
        (c"catch_ups_completed", CATCH_UPS_COMPLETED.get()),
        (c"catch_ups_abandoned", CATCH_UPS_ABANDONED.get()),
        (c"catch_up_keys_examined", RUN_KEYS.load(Ordering::Relaxed)),
        (c"catch_up_turns", RUN_TURNS.load(Ordering::Relaxed)),
        (c"catch_up_tenants_indexed", RUN_TENANTS.load(Ordering::Relaxed)),
        (c"catch_up_last_duration_ms", LAST_DURATION_MS.load(Ordering::Relaxed)),
        (c"catch_up_keys_examined_total", KEYS_EXAMINED.get()),
        (c"catch_up_turns_total", TURNS.get()),
        (c"catch_up_max_keys_per_turn", MAX_KEYS_PER_TURN.load(Ordering::Relaxed)),
        (c"catch_up_max_turn_us", MAX_TURN_US.load(Ordering::Relaxed)),
        (c"catch_up_max_turn_cpu_us", MAX_TURN_CPU_US.load(Ordering::Relaxed)),
    ]
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

    #[test]
    fn a_slot_scope_wants_its_slots_only() {
        use super::super::cluster_slot::key_slot;
        let slot = key_slot(b"acme");
        let scope = Scope::Slots(vec![(slot, slot)]);
        assert!(scope.wants(Some("acme")));
        assert!(!scope.wants(Some("other-tenant-far-away")) || key_slot(b"other-tenant-far-away") == slot);
        assert!(!scope.wants(None));
        assert!(Scope::Everything.wants(None));
    }
}
