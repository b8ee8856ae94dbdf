//! The lease timer: finds leases that ran out and hands each to its family
//! (Dreams, Town) to expire, on a master only.
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
//! The index is rebuilt from the keyspace (a `SCAN` of each family's lease
//! keys in every database) when the module loads, when loading (RDB, AOF,
//! `DEBUG RELOAD/LOADAOF`) ends and when the server becomes a master
//! (`REPLICAOF NO ONE`, failover): a promoted replica then expires the
//! leases its old master granted. Replicas never expire: the master's
//! expiries reach them as effects.
//!
//! Cluster: only a master acts, and only on tenants the migration guard
//! lets it touch (`migration_guard::may_touch`: the slot is stable and
//! served here). A tenant whose slot is moving waits; one whose lease set
//! arrived by `RESTORE` on an importing node (learnt from the `restore`
//! keyspace event), or was written there by the import client of an atomic
//! slot migration (`slot_migration`), is kept until the move completes; one
//! whose lease set is gone from this node is forgotten.

use std::collections::{BTreeSet, HashMap};
use std::ffi::CString;
use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use redis_module::raw;

use super::api::api;
use super::migration_guard;
use super::session::Session;

/// How often the timer looks for due leases (ms): expiry is exact to this.
pub const TICK_MS: i64 = 100;

/// Time one tick may spend expiring (ms): a burst of due tenants spreads
/// over ticks 1 ms apart instead of stalling the server for long.
const TICK_BUDGET_MS: i64 = 25;
/// Due tenants taken from the index at a time, between budget checks.
const BATCH: usize = 256;
/// Delay before the next tick when due tenants are left over (ms).
const CATCH_UP_MS: i64 = 1;

/// What a family of tenants (Dreams organizations, towns) provides.
pub struct LeaseFamily {
    /// `SCAN MATCH` pattern of its lease keys.
    pub pattern: &'static str,
    /// The tenant of a lease key name, if it is one.
    pub tenant_of: fn(&[u8]) -> Option<String>,
    /// Expire what is due for `tenant` at `now_ms` (replicating effects,
    /// waking receivers); the tenant's next deadline, if any lease is left.
    pub expire: fn(&Session, &str, i64) -> Option<i64>,
    /// The tenant's earliest live deadline (for the rebuild).
    pub earliest: fn(&Session, &str) -> Option<i64>,
    /// The tenant whose hash tag names the slot of an index entry (the
    /// organization; the town of an agent's lease key), for the cluster
    /// check (`migration_guard::may_touch`).
    pub slot_tenant: fn(&str) -> Option<&str>,
}

/// One tenant in the index: family, database, name.
type Tenant = (usize, i32, String);

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

    /// Keep only the tenants `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&Tenant) -> bool) {
        self.by_tenant.retain(|tenant, _| keep(tenant));
        let by_tenant = &self.by_tenant;
        self.by_deadline.retain(|(_, tenant)| by_tenant.contains_key(tenant));
    }

    /// Forget everything (before a rebuild).
    pub fn clear(&mut self) {
        self.by_deadline.clear();
        self.by_tenant.clear();
    }

    /// Tenants indexed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_tenant.len()
    }

    /// Is the index empty?
    pub fn is_empty(&self) -> bool {
        self.by_tenant.is_empty()
    }
}

static INDEX: Mutex<Option<DeadlineIndex>> = Mutex::new(None);
static FAMILIES: Mutex<Vec<&'static LeaseFamily>> = Mutex::new(Vec::new());
/// Set when the index must be rebuilt from the keyspace at the next tick.
static REBUILD: AtomicBool = AtomicBool::new(false);
/// Is a tick scheduled? The timer runs only while there is something to
/// do (leases indexed, or a rebuild pending on a master), so a server
/// without leases pays nothing and the module can be unloaded.
static ARMED: AtomicBool = AtomicBool::new(false);

fn with_index<R>(run: impl FnOnce(&mut DeadlineIndex) -> R) -> R {
    let mut guard = match INDEX.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    run(guard.get_or_insert_with(DeadlineIndex::default))
}

fn families() -> Vec<&'static LeaseFamily> {
    match FAMILIES.lock() {
        Ok(guard) => guard.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
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
/// rebuild and start the timer. Called once when the module loads.
pub fn start(ctx: *mut raw::RedisModuleCtx, all: Vec<&'static LeaseFamily>) -> Result<(), String> {
    match FAMILIES.lock() {
        Ok(mut guard) => *guard = all,
        Err(poisoned) => *poisoned.into_inner() = all,
    }
    let (Some(subscribe), Some(_)) = (unsafe { raw::RedisModule_SubscribeToServerEvent }, unsafe { raw::RedisModule_CreateTimer }) else {
        return Err("this server lacks module timers or server events (needed for leases)".into());
    };
    for id in [raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED, raw::REDISMODULE_EVENT_LOADING] {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        if unsafe { subscribe(ctx, event, Some(on_server_event)) } != raw::REDISMODULE_OK as c_int {
            return Err(format!("could not subscribe to server event {id}"));
        }
    }
    // Loaded into a running server (MODULE LOAD): its leases are indexed
    // now. At startup the dataset loads later, and the loading event
    // rebuilds then.
    if is_master(ctx) {
        rebuild(&Session::internal(ctx), &families());
        if with_index(|index| !index.is_empty()) {
            arm(ctx, TICK_MS);
        }
    }
    Ok(())
}

/// Schedule a tick in `delay_ms` unless one is scheduled.
fn arm(ctx: *mut raw::RedisModuleCtx, delay_ms: i64) {
    if ARMED.swap(true, Ordering::Relaxed) {
        return;
    }
    if let Some(create) = unsafe { raw::RedisModule_CreateTimer } {
        unsafe { create(ctx, delay_ms, Some(on_tick), std::ptr::null_mut()) };
    }
}

fn is_master(ctx: *mut raw::RedisModuleCtx) -> bool {
    let flags = unsafe { api!(RedisModule_GetContextFlags)(ctx) as u32 };
    flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0 && flags & raw::REDISMODULE_CTX_FLAGS_LOADING == 0
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
    if becomes_master || loaded {
        REBUILD.store(true, Ordering::Relaxed);
        let _ = catch_unwind(AssertUnwindSafe(|| arm(ctx, TICK_MS)));
    }
}

/// A key arrived by `RESTORE` (a cluster slot migration, or by hand): if
/// it is a lease set, index its tenant.
pub(super) fn on_keyspace_event(ctx: *mut raw::RedisModuleCtx, event: &[u8], key: *mut raw::RedisModuleString) {
    if event != b"restore" {
        return;
    }
    index_lease_key(ctx, super::string::bytes_of(key));
}

/// Index the tenant of `name` if it is a lease set with a live lease (a
/// key that arrived here: by `RESTORE`, or written by the import client of
/// an atomic slot migration, `slot_migration`).
pub(super) fn index_lease_key(ctx: *mut raw::RedisModuleCtx, name: &[u8]) {
    let session = Session::internal(ctx);
    for family in families() {
        let Some(tenant) = (family.tenant_of)(name) else { continue };
        if let Some(earliest) = (family.earliest)(&session, &tenant) {
            note(&session, family, &tenant, earliest);
        }
    }
}

/// Forget the tenants whose slot tenant (the hash tag of their keys) `gone`
/// says left this node (an atomic slot migration exported them, or an
/// aborted import deleted them, `slot_migration`): the node that holds
/// them expires their leases. Costs the number of indexed tenants, in
/// memory.
pub(super) fn forget_tenants(gone: impl Fn(&[u8]) -> bool) {
    let families = families();
    with_index(|index| {
        index.retain(|(family, _, tenant)| {
            let slot_tenant = families.get(*family).and_then(|f| (f.slot_tenant)(tenant));
            !slot_tenant.is_some_and(|t| gone(t.as_bytes()))
        })
    });
}

unsafe extern "C" fn on_tick(ctx: *mut raw::RedisModuleCtx, _data: *mut c_void) {
    ARMED.store(false, Ordering::Relaxed);
    let next = catch_unwind(AssertUnwindSafe(|| tick(ctx))).unwrap_or(Some(TICK_MS));
    if let Some(delay) = next {
        let _ = catch_unwind(AssertUnwindSafe(|| arm(ctx, delay)));
    }
}

/// One tick; when the next is needed (ms), if at all.
fn tick(ctx: *mut raw::RedisModuleCtx) -> Option<i64> {
    // Only a master expires; a replica applies its master's expiries. A
    // replica keeps no index: becoming master rebuilds it.
    if !is_master(ctx) {
        with_index(DeadlineIndex::clear);
        return None;
    }
    let session = Session::internal(ctx);
    let families = families();
    if REBUILD.swap(false, Ordering::Relaxed) {
        rebuild(&session, &families);
    }
    let now = session.now_ms();
    let in_cluster = session.in_cluster();
    let select = api!(RedisModule_SelectDb);
    let mut left_over = false;
    loop {
        let due = with_index(|index| index.take_due(now, BATCH));
        if due.is_empty() {
            break;
        }
        for (family, db, tenant) in due {
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
                    if (lease_family.earliest)(&session, &tenant).is_some() {
                        with_index(|index| index.note((family, db, tenant), now.saturating_add(1_000)));
                    }
                    continue;
                }
            }
            if let Some(next) = (lease_family.expire)(&session, &tenant, now) {
                with_index(|index| index.note((family, db, tenant), next));
            }
        }
        if session.now_ms() - now >= TICK_BUDGET_MS {
            left_over = true;
            break;
        }
    }
    unsafe { select(ctx, 0) };
    match (left_over, with_index(|index| index.is_empty())) {
        (true, _) => Some(CATCH_UP_MS),
        (false, false) => Some(TICK_MS),
        (false, true) => None,
    }
}

/// Rebuild the index from the lease keys of every database.
fn rebuild(session: &Session, families: &[&'static LeaseFamily]) {
    with_index(DeadlineIndex::clear);
    let ctx = session.ctx();
    let select = api!(RedisModule_SelectDb);
    let mut db = 0;
    while unsafe { select(ctx, db) } == raw::REDISMODULE_OK as c_int {
        for (number, family) in families.iter().enumerate() {
            for key in scan(ctx, family.pattern) {
                let Some(tenant) = (family.tenant_of)(&key) else { continue };
                if let Some(earliest) = (family.earliest)(session, &tenant) {
                    with_index(|index| index.note((number, db, tenant), earliest));
                }
            }
        }
        db += 1;
    }
    unsafe { select(ctx, 0) };
}

/// Every sorted-set key of the selected database matching `pattern`.
fn scan(ctx: *mut raw::RedisModuleCtx, pattern: &str) -> Vec<Vec<u8>> {
    let Ok(pattern) = CString::new(pattern) else { return Vec::new() };
    let mut keys = Vec::new();
    let mut cursor = CString::from(c"0");
    loop {
        let reply = unsafe {
            api!(RedisModule_Call)(
                ctx,
                c"SCAN".as_ptr(),
                c"ccccccc".as_ptr(),
                cursor.as_ptr(),
                c"MATCH".as_ptr(),
                pattern.as_ptr(),
                c"COUNT".as_ptr(),
                c"1000".as_ptr(),
                c"TYPE".as_ptr(),
                c"zset".as_ptr(),
            )
        };
        if reply.is_null() {
            return keys;
        }
        let next = element_bytes(reply, 0);
        let batch = unsafe { api!(RedisModule_CallReplyArrayElement)(reply, 1) };
        if !batch.is_null() {
            let count = unsafe { api!(RedisModule_CallReplyLength)(batch) };
            for at in 0..count {
                if let Some(key) = element_bytes(batch, at) {
                    keys.push(key);
                }
            }
        }
        unsafe { api!(RedisModule_FreeCallReply)(reply) };
        match next.and_then(|next| CString::new(next).ok()) {
            Some(next) if next.as_bytes() != b"0" => cursor = next,
            _ => return keys,
        }
    }
}

fn element_bytes(array: *mut raw::RedisModuleCallReply, at: usize) -> Option<Vec<u8>> {
    let element = unsafe { api!(RedisModule_CallReplyArrayElement)(array, at) };
    if element.is_null() {
        return None;
    }
    let mut len = 0usize;
    let pointer = unsafe { api!(RedisModule_CallReplyStringPtr)(element, &mut len) };
    if pointer.is_null() {
        return None;
    }
    Some(unsafe { std::slice::from_raw_parts(pointer.cast::<u8>(), len) }.to_vec())
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
}
