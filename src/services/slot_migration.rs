//! Atomic slot migration (Valkey 9 `CLUSTER MIGRATESLOTS`, and Redis 8.4's
//! `CLUSTER MIGRATION`, untested: below): what this node
//! is importing or exporting right now, and what the module does at each
//! step of a move.
//!
//! Valkey 9 refuses `CLUSTER MIGRATESLOTS` while a loaded module has not
//! declared `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION`. The module
//! declares it only on a server that knows the option (Valkey 9.0 or newer,
//! told by `INFO server`'s `server_name`/`valkey_version`): Redis gives the
//! same bit no meaning today, or another one tomorrow.
//!
//! How a move looks from a module (Valkey's `cluster_migrateslots.c`): the
//! source forks a snapshot of the slots, then streams every later write of
//! them to the target, where an import client (context flag `REPLICATED`)
//! runs them; the target does not own the slots until one atomic switch at
//! the end (clients get `MOVED` from it, and so does a module's `RM_Call`),
//! but its keyspace events, timers and key API see the importing keys.
//! Just before the switch the source pauses client writes; after it, the
//! source deletes the slots' keys. Server event `AtomicSlotMigration`
//! (id 19) reports IMPORT/EXPORT STARTED/ABORTED/COMPLETED with the slot
//! ranges, on masters and their replicas alike.
//!
//! What the module does:
//! * While a node imports a slot, nothing of the module acts on it: the
//!   keyspace events the import client's writes fire reach no waiter (no
//!   client of that slot can be blocked here) and only teach the lease
//!   index which tenants arrived with leases (`lease_timer::index_key`);
//!   timers and waiter passes leave the slot alone (`migration_guard::
//!   may_touch` asks [`tenant_is_moving`]). When the import completes, the
//!   lease timer finds those tenants here and expires their leases; when
//!   it is aborted the server has deleted the keys and the index forgets
//!   the tenants.
//! * While a node exports a slot it keeps serving client commands (their
//!   writes stream to the target), but nothing runs on its own: a module
//!   timer is not stopped by the write pause before the switch, and a write
//!   made after the source granted the switch would never reach the target.
//!   So the lease timer leaves exporting tenants for later (the new owner
//!   or, after an abort, this node expires them) and the waiter pass
//!   answers a blocked drainer or receiver `-TRYAGAIN` (its client retries
//!   the command, which the source serves) instead of serving it. Clients
//!   still blocked when the slot has moved get `MOVED` from the cluster
//!   cron: each waits on a key of its tenant's slot (`waiters`). When the
//!   export completes, the lease index forgets the tenants.
//! * Every effect a command replicates is single-slot (keys of the
//!   tenant's hash tag; Valkey fails a migration on a cross-slot one), and
//!   the only keyless one, a Town broadcast's `PUBLISH` outside a cluster,
//!   is never made in one (Valkey drops keyless commands from the stream).
//!
//! Redis 8.4 (`CLUSTER MIGRATION IMPORT`) has its own atomic slot
//! migration and asks modules for no claim. On a server whose `INFO
//! server` says Redis 8.4 or newer (`redis_version`, and no
//! `server_name` other than `redis`) and that says it knows the events
//! (`RedisModule_IsSubEventSupported`), the module subscribes to
//! `ClusterSlotMigration` (id 18) and `ClusterSlotMigrationTrim` (id 19;
//! Valkey's 19 is its own migration event, hence the gate) and feeds the
//! same tracking: IMPORT/MIGRATE STARTED, FAILED (= aborted), COMPLETED.
//! After a move Redis trims the keys of slots the node no longer owns:
//! in the background by default (one `TRIM_BACKGROUND` event, the keys
//! leave the keyspace at once; the lease index forgets the slots), or,
//! when some loaded module listens to `key_trimmed`, key by key between
//! `TRIM_STARTED` and `TRIM_COMPLETED`, during which the slots count as
//! moving (nothing acts on them) and after which the index forgets them.
//! When an import completes, a bounded catch-up (`lease_timer::index_slots`)
//! also indexes the arrived slots' lease sets, since whether the snapshot
//! fires keyspace events there is not something we could check. Relied
//! on, from Redis 8.4's `redismodule.h` (as the `redis-module` 2.0.8
//! crate carries it): the event and subevent numbers, the layouts of
//! `RedisModuleClusterSlotMigrationInfoV1` / `...TrimInfoV1` /
//! `RedisModuleSlotRangeArray` (`u16` ranges); keyspace events of
//! importing keys, if Redis fires any, are handled as on Valkey.
//! `RedisModule_ClusterCanAccessKeysInSlot`
//! is not used: the events say the same, on every node. None of it is
//! tested against a server (no package carries Redis 8.4 here); the
//! decoding and the gate are unit-tested. Older Redis and every Valkey
//! are untouched by this part.

use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

use redis_module::raw;

use super::lease_timer;
use super::slot_moves::{self, Side};
use crate::metrics::totals::Total;

/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (valkeymodule.h).
const OPTION_HANDLE_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;
/// `VALKEYMODULE_EVENT_ATOMIC_SLOT_MIGRATION` and its subevents.
const EVENT_ATOMIC_SLOT_MIGRATION: u64 = 19;
const IMPORT_STARTED: u64 = 0;
const EXPORT_STARTED: u64 = 1;
const IMPORT_ABORTED: u64 = 2;
const EXPORT_ABORTED: u64 = 3;
const IMPORT_COMPLETED: u64 = 4;
const EXPORT_COMPLETED: u64 = 5;

/// `ValkeyModuleSlotRange`.
#[repr(C)]
struct SlotRange {
    start: c_int,
    end: c_int,
}

/// `ValkeyModuleAtomicSlotMigrationInfoV1`.
#[repr(C)]
struct MigrationInfo {
    version: u64,
    job_name: [c_char; 41],
    slot_ranges: *const SlotRange,
    num_slot_ranges: u32,
}

/// Redis 8.4's events, from its `redismodule.h` (Redis 8.4.0, as carried
/// by the `redis-module` 2.0.8 crate): the ids clash with Valkey's (19 is
/// Valkey's `AtomicSlotMigration` but Redis's trim event), hence the gate
/// on the server's name and version before subscribing.
mod redis84 {
    /// `REDISMODULE_EVENT_CLUSTER_SLOT_MIGRATION`.
    pub const EVENT_SLOT_MIGRATION: u64 = 18;
    /// `REDISMODULE_EVENT_CLUSTER_SLOT_MIGRATION_TRIM`.
    pub const EVENT_TRIM: u64 = 19;
    /// `REDISMODULE_SUBEVENT_CLUSTER_SLOT_MIGRATION_*`.
    pub const IMPORT_STARTED: u64 = 0;
    pub const IMPORT_FAILED: u64 = 1;
    pub const IMPORT_COMPLETED: u64 = 2;
    pub const MIGRATE_STARTED: u64 = 3;
    pub const MIGRATE_FAILED: u64 = 4;
    pub const MIGRATE_COMPLETED: u64 = 5;
    // 6, MIGRATE_MODULE_PROPAGATE: a chance to add commands to the
    // stream; dreamtown has nothing to add (its state is in keys).
    /// `REDISMODULE_SUBEVENT_CLUSTER_SLOT_MIGRATION_TRIM_*`.
    pub const TRIM_STARTED: u64 = 0;
    pub const TRIM_COMPLETED: u64 = 1;
    pub const TRIM_BACKGROUND: u64 = 2;

    /// `RedisModuleSlotRange`.
    #[repr(C)]
    pub struct SlotRange {
        pub start: u16,
        pub end: u16,
    }

    /// `RedisModuleSlotRangeArray`: a count, then the ranges inline.
    #[repr(C)]
    pub struct SlotRangeArray {
        pub num_ranges: i32,
        pub ranges: [SlotRange; 0],
    }

    /// `RedisModuleClusterSlotMigrationInfoV1`.
    #[repr(C)]
    pub struct MigrationInfo {
        pub version: u64,
        pub source_node_id: [std::os::raw::c_char; 41],
        pub destination_node_id: [std::os::raw::c_char; 41],
        pub task_id: *const std::os::raw::c_char,
        pub slots: *const SlotRangeArray,
    }

    /// `RedisModuleClusterSlotMigrationTrimInfoV1`.
    #[repr(C)]
    pub struct TrimInfo {
        pub version: u64,
        pub slots: *const SlotRangeArray,
    }
}

/// One step of a move, as either server reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Started(Side),
    Aborted(Side),
    Completed(Side),
    /// Redis 8.4: the slots' keys are deleted key by key from now until
    /// [`Step::TrimCompleted`] (active trim, chosen when some loaded module
    /// listens to `key_trimmed`).
    TrimStarted,
    TrimCompleted,
    /// Redis 8.4: the slots' keys left the keyspace at once (background
    /// trim, the default: freed by a background thread, no key events).
    TrimmedInBackground,
}

/// Does this module handle atomic slot migration here (declared on Valkey
/// 9+, events subscribed on Redis 8.4+)?
static HANDLED: AtomicBool = AtomicBool::new(false);
/// Moves that ended here, by direction and outcome (`INFO dreamtown`).
static IMPORTS_COMPLETED: Total = Total::new();
static IMPORTS_ABORTED: Total = Total::new();
static EXPORTS_COMPLETED: Total = Total::new();
static EXPORTS_ABORTED: Total = Total::new();

/// `MODULE UNLOAD`: forget whether the events were subscribed (the next
/// load asks the server again) and every move in progress; the `INFO`
/// totals carry on, as the module's other totals do.
pub fn unload() {
    HANDLED.store(false, Ordering::Relaxed);
    slot_moves::unload();
}

/// Module options this server should get from us: the atomic-slot-migration
/// claim on Valkey 9 or newer (with the event subscribed), nothing
/// elsewhere; on Redis 8.4 or newer, which asks for no claim, the events
/// are subscribed here too. Called once when the module loads.
pub fn options(ctx: *mut raw::RedisModuleCtx) -> c_int {
    let server = server_info(ctx);
    if is_valkey_9_or_newer(server.name.as_deref(), server.valkey_version.as_deref()) {
        return declare_for_valkey(ctx);
    }
    if is_redis_8_4_or_newer(server.name.as_deref(), server.redis_version.as_deref()) {
        subscribe_on_redis(ctx);
    }
    0
}

fn declare_for_valkey(ctx: *mut raw::RedisModuleCtx) -> c_int {
    let event = raw::RedisModuleEvent { id: EVENT_ATOMIC_SLOT_MIGRATION, dataver: 1 };
    if !subscribe(ctx, event, on_valkey_event) {
        // Without the events the claim would be false: leave it out, and
        // Valkey keeps refusing MIGRATESLOTS.
        return 0;
    }
    HANDLED.store(true, Ordering::Relaxed);
    OPTION_HANDLE_ATOMIC_SLOT_MIGRATION
}

/// Redis 8.4+: subscribe to its two events where the server says it
/// knows them (`RedisModule_IsSubEventSupported`). Without the migration
/// event nothing is handled (as before 8.4); without the trim event the
/// moves are still followed.
fn subscribe_on_redis(ctx: *mut raw::RedisModuleCtx) {
    let Some(supported) = (unsafe { raw::RedisModule_IsSubEventSupported }) else { return };
    let migration = raw::RedisModuleEvent { id: redis84::EVENT_SLOT_MIGRATION, dataver: 1 };
    let trim = raw::RedisModuleEvent { id: redis84::EVENT_TRIM, dataver: 1 };
    if unsafe { supported(migration, redis84::MIGRATE_COMPLETED) } == 0 || !subscribe(ctx, migration, on_redis_event) {
        return;
    }
    HANDLED.store(true, Ordering::Relaxed);
    if unsafe { supported(trim, redis84::TRIM_BACKGROUND) } != 0 {
        subscribe(ctx, trim, on_redis_event);
    }
}

type EventHandler = unsafe extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void);

fn subscribe(ctx: *mut raw::RedisModuleCtx, event: raw::RedisModuleEvent, handler: EventHandler) -> bool {
    let Some(subscribe) = (unsafe { raw::RedisModule_SubscribeToServerEvent }) else { return false };
    unsafe { subscribe(ctx, event, Some(handler)) == raw::REDISMODULE_OK as c_int }
}

/// The `dreamtown_cluster` section of `INFO dreamtown`.
pub fn info_fields() -> Vec<(&'static std::ffi::CStr, u64)> {
    let (importing, exporting) = slot_moves::in_progress();
    vec![
        (c"atomic_slot_migration", u64::from(HANDLED.load(Ordering::Relaxed))),
        (c"slot_imports_in_progress", importing),
        (c"slot_exports_in_progress", exporting),
        (c"slot_imports_completed", IMPORTS_COMPLETED.get()),
        (c"slot_imports_aborted", IMPORTS_ABORTED.get()),
        (c"slot_exports_completed", EXPORTS_COMPLETED.get()),
        (c"slot_exports_aborted", EXPORTS_ABORTED.get()),
    ]
}

/// What `INFO server` says of the server.
struct ServerInfo {
    name: Option<String>,
    valkey_version: Option<String>,
    redis_version: Option<String>,
}

fn server_info(ctx: *mut raw::RedisModuleCtx) -> ServerInfo {
    let unknown = ServerInfo { name: None, valkey_version: None, redis_version: None };
    let (Some(get), Some(field), Some(free)) = (unsafe {
        (raw::RedisModule_GetServerInfo, raw::RedisModule_ServerInfoGetFieldC, raw::RedisModule_FreeServerInfo)
    }) else {
        return unknown;
    };
    let info = unsafe { get(ctx, c"server".as_ptr()) };
    if info.is_null() {
        return unknown;
    }
    let text = |name: &std::ffi::CStr| {
        let value = unsafe { field(info, name.as_ptr()) };
        (!value.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(value) }.to_string_lossy().into_owned())
    };
    let server = ServerInfo {
        name: text(c"server_name"),
        valkey_version: text(c"valkey_version"),
        redis_version: text(c"redis_version"),
    };
    unsafe { free(ctx, info) };
    server
}

/// Valkey 9.0 or newer (`server_name:valkey`, `valkey_version:9.x`).
fn is_valkey_9_or_newer(name: Option<&str>, version: Option<&str>) -> bool {
    let major = version.and_then(|v| v.split('.').next()).and_then(|m| m.parse::<u32>().ok());
    name == Some("valkey") && major.is_some_and(|m| m >= 9)
}

/// Redis 8.4 or newer: `redis_version` 8.4+ on a server that does not call
/// itself anything but Redis (Valkey says `server_name:valkey` and
/// `redis_version:7.2.4`).
fn is_redis_8_4_or_newer(name: Option<&str>, version: Option<&str>) -> bool {
    let mut parts = version.unwrap_or("").split('.').map(|p| p.parse::<u32>().ok());
    let (Some(Some(major)), Some(Some(minor))) = (parts.next(), parts.next()) else { return false };
    name.is_none_or(|n| n == "redis") && (major, minor) >= (8, 4)
}

unsafe extern "C" fn on_valkey_event(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let Some(step) = valkey_step(subevent) else { return };
        let ranges = unsafe { ranges_of(data.cast::<MigrationInfo>()) };
        handle(step, &ranges);
        // The arrived slots' limits keys: the keyspace events of the
        // import noted those that came by `RESTORE`; a bounded catch-up of
        // the slots finds every one, whatever the import wrote them with
        // (the limits index is not trusted until it has).
        if step == Step::Completed(Side::Import) {
            lease_timer::index_slots(ctx, &ranges);
        }
    }));
}

unsafe extern "C" fn on_redis_event(
    ctx: *mut raw::RedisModuleCtx,
    event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let Some(step) = redis_step(event.id, subevent) else { return };
        let slots = if event.id == redis84::EVENT_TRIM {
            unsafe { data.cast::<redis84::TrimInfo>().as_ref() }.map(|info| info.slots)
        } else {
            unsafe { data.cast::<redis84::MigrationInfo>().as_ref() }.map(|info| info.slots)
        };
        let ranges = unsafe { redis_ranges_of(slots.unwrap_or(std::ptr::null())) };
        handle(step, &ranges);
        // How Redis 8.4 streams an import's snapshot to the target is not
        // something this module can see here (untested): index the
        // arrived slots' lease sets by a bounded catch-up as well.
        if step == Step::Completed(Side::Import) {
            lease_timer::index_slots(ctx, &ranges);
        }
    }));
}

fn valkey_step(subevent: u64) -> Option<Step> {
    Some(match subevent {
        IMPORT_STARTED => Step::Started(Side::Import),
        EXPORT_STARTED => Step::Started(Side::Export),
        IMPORT_ABORTED => Step::Aborted(Side::Import),
        EXPORT_ABORTED => Step::Aborted(Side::Export),
        IMPORT_COMPLETED => Step::Completed(Side::Import),
        EXPORT_COMPLETED => Step::Completed(Side::Export),
        _ => return None,
    })
}

fn redis_step(event: u64, subevent: u64) -> Option<Step> {
    use redis84::*;
    Some(match (event, subevent) {
        (EVENT_SLOT_MIGRATION, IMPORT_STARTED) => Step::Started(Side::Import),
        (EVENT_SLOT_MIGRATION, IMPORT_FAILED) => Step::Aborted(Side::Import),
        (EVENT_SLOT_MIGRATION, IMPORT_COMPLETED) => Step::Completed(Side::Import),
        (EVENT_SLOT_MIGRATION, MIGRATE_STARTED) => Step::Started(Side::Export),
        (EVENT_SLOT_MIGRATION, MIGRATE_FAILED) => Step::Aborted(Side::Export),
        (EVENT_SLOT_MIGRATION, MIGRATE_COMPLETED) => Step::Completed(Side::Export),
        (EVENT_TRIM, TRIM_STARTED) => Step::TrimStarted,
        (EVENT_TRIM, TRIM_COMPLETED) => Step::TrimCompleted,
        (EVENT_TRIM, TRIM_BACKGROUND) => Step::TrimmedInBackground,
        _ => return None,
    })
}

/// The slot ranges of a Valkey event's info, checked.
unsafe fn ranges_of(info: *const MigrationInfo) -> Vec<(u16, u16)> {
    let Some(info) = (unsafe { info.as_ref() }) else { return Vec::new() };
    if info.slot_ranges.is_null() || info.version < 1 {
        return Vec::new();
    }
    let all = unsafe { std::slice::from_raw_parts(info.slot_ranges, info.num_slot_ranges as usize) };
    valid(all.iter().filter_map(|r| Some((u16::try_from(r.start).ok()?, u16::try_from(r.end).ok()?))))
}

/// The slot ranges of a Redis 8.4 `RedisModuleSlotRangeArray`, checked.
unsafe fn redis_ranges_of(array: *const redis84::SlotRangeArray) -> Vec<(u16, u16)> {
    let Some(header) = (unsafe { array.as_ref() }) else { return Vec::new() };
    let Ok(count) = usize::try_from(header.num_ranges) else { return Vec::new() };
    let first = unsafe { std::ptr::addr_of!((*array).ranges) }.cast::<redis84::SlotRange>();
    let all = unsafe { std::slice::from_raw_parts(first, count) };
    valid(all.iter().map(|r| (r.start, r.end)))
}

fn valid(ranges: impl Iterator<Item = (u16, u16)>) -> Vec<(u16, u16)> {
    ranges.filter(|(start, end)| start <= end && *end < 16_384).collect()
}

fn handle(step: Step, ranges: &[(u16, u16)]) {
    let (side, ended) = match step {
        Step::Started(side) => {
            slot_moves::started(side, ranges);
            return;
        }
        Step::TrimStarted => {
            slot_moves::started(Side::Trim, ranges);
            return;
        }
        Step::TrimmedInBackground => {
            lease_timer::forget_slots(ranges);
            return;
        }
        Step::Aborted(side) | Step::Completed(side) => (side, step),
        Step::TrimCompleted => (Side::Trim, step),
    };
    match ended {
        Step::Completed(Side::Import) => IMPORTS_COMPLETED.bump(),
        Step::Aborted(Side::Import) => IMPORTS_ABORTED.bump(),
        Step::Completed(Side::Export) => EXPORTS_COMPLETED.bump(),
        Step::Aborted(Side::Export) => EXPORTS_ABORTED.bump(),
        _ => {}
    }
    slot_moves::ended(side, ranges);
    // The tenants now elsewhere (an export that completed) or gone (an
    // import aborted: the server deleted what had arrived; a trim done)
    // leave the lease index; an aborted export keeps them here, and a
    // completed import found its own in the keyspace events.
    if matches!(ended, Step::Completed(Side::Export) | Step::Aborted(Side::Import) | Step::TrimCompleted) {
        lease_timer::forget_slots(ranges);
    }
}

/// A keyspace event on `key`: if its slot is being imported, learn what
/// it brought (lease sets) and say so, for the caller to hand it to no
/// other listener (no client of the slot is blocked here, and nothing
/// acts on the slot until it is ours).
pub fn on_keyspace_event(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> bool {
    if !slot_moves::key_is_importing(key) {
        return false;
    }
    lease_timer::index_key(ctx, key);
    if let Some(org) = crate::dreams::region::org_of_limits_key(key) {
        super::limits_index::note(ctx, org);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_valkey_9_or_newer_gets_the_option() {
        assert!(is_valkey_9_or_newer(Some("valkey"), Some("9.1.2")));
        assert!(is_valkey_9_or_newer(Some("valkey"), Some("10.0.0")));
        assert!(!is_valkey_9_or_newer(Some("valkey"), Some("8.1.1")));
        assert!(!is_valkey_9_or_newer(None, None));
        assert!(!is_valkey_9_or_newer(Some("redis"), Some("9.0.0")));
    }

    #[test]
    fn only_redis_8_4_or_newer_gets_the_redis_events() {
        assert!(is_redis_8_4_or_newer(None, Some("8.4.0")));
        assert!(is_redis_8_4_or_newer(Some("redis"), Some("8.6.1")));
        assert!(is_redis_8_4_or_newer(None, Some("9.0.0")));
        assert!(!is_redis_8_4_or_newer(None, Some("8.2.3")));
        assert!(!is_redis_8_4_or_newer(None, Some("8.0.2")));
        assert!(!is_redis_8_4_or_newer(None, Some("7.0.15")));
        assert!(!is_redis_8_4_or_newer(None, Some("8")));
        assert!(!is_redis_8_4_or_newer(None, None));
        // Valkey reports an old redis_version; a Valkey that reported a
        // new one would still be told apart by its name.
        assert!(!is_redis_8_4_or_newer(Some("valkey"), Some("7.2.4")));
        assert!(!is_redis_8_4_or_newer(Some("valkey"), Some("9.0.0")));
    }

    #[test]
    fn redis_subevents_map_to_the_same_steps() {
        use redis84::*;
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, IMPORT_STARTED), Some(Step::Started(Side::Import)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, IMPORT_FAILED), Some(Step::Aborted(Side::Import)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, IMPORT_COMPLETED), Some(Step::Completed(Side::Import)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, MIGRATE_STARTED), Some(Step::Started(Side::Export)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, MIGRATE_FAILED), Some(Step::Aborted(Side::Export)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, MIGRATE_COMPLETED), Some(Step::Completed(Side::Export)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, 6), None, "MIGRATE_MODULE_PROPAGATE is ignored");
        assert_eq!(redis_step(EVENT_TRIM, TRIM_STARTED), Some(Step::TrimStarted));
        assert_eq!(redis_step(EVENT_TRIM, TRIM_COMPLETED), Some(Step::TrimCompleted));
        assert_eq!(redis_step(EVENT_TRIM, TRIM_BACKGROUND), Some(Step::TrimmedInBackground));
        assert_eq!(redis_step(EVENT_TRIM, 3), None);
        assert_eq!(redis_step(17, 0), None);
        // Valkey's numbering differs: its 1 is an export start, Redis's an import failure.
        assert_eq!(valkey_step(EXPORT_STARTED), Some(Step::Started(Side::Export)));
        assert_eq!(valkey_step(IMPORT_ABORTED), Some(Step::Aborted(Side::Import)));
        assert_eq!(valkey_step(6), None);
    }

    /// The layout Redis 8.4 hands over: a count, then the ranges inline.
    #[repr(C)]
    struct ThreeRanges {
        num_ranges: i32,
        ranges: [redis84::SlotRange; 3],
    }

    #[test]
    fn redis_slot_range_arrays_are_read_and_checked() {
        use redis84::SlotRange as R;
        let array = ThreeRanges {
            num_ranges: 3,
            ranges: [R { start: 0, end: 100 }, R { start: 300, end: 200 }, R { start: 16_383, end: 16_383 }],
        };
        let pointer = std::ptr::addr_of!(array).cast::<redis84::SlotRangeArray>();
        // The reversed range is dropped, the others kept in order.
        assert_eq!(unsafe { redis_ranges_of(pointer) }, vec![(0, 100), (16_383, 16_383)]);
        let none = ThreeRanges {
            num_ranges: -1,
            ranges: [R { start: 0, end: 1 }, R { start: 0, end: 1 }, R { start: 0, end: 1 }],
        };
        assert!(unsafe { redis_ranges_of(std::ptr::addr_of!(none).cast()) }.is_empty());
        assert!(unsafe { redis_ranges_of(std::ptr::null()) }.is_empty());
        let out_of_range = ThreeRanges {
            num_ranges: 1,
            ranges: [R { start: 10, end: 16_384 }, R { start: 0, end: 1 }, R { start: 0, end: 1 }],
        };
        assert!(unsafe { redis_ranges_of(std::ptr::addr_of!(out_of_range).cast()) }.is_empty());
        // The info structs put the array pointer where redismodule.h does.
        assert_eq!(std::mem::offset_of!(redis84::MigrationInfo, task_id), 96);
        assert_eq!(std::mem::offset_of!(redis84::MigrationInfo, slots), 104);
        assert_eq!(std::mem::offset_of!(redis84::TrimInfo, slots), 8);
        assert_eq!(std::mem::offset_of!(redis84::SlotRangeArray, ranges), 4);
    }

    #[test]
    fn moves_are_tracked_per_direction() {
        let _serial = SERIAL.lock();
        handle(Step::Started(Side::Export), &[(100, 200)]);
        assert!(
            slot_moves::moving(150, None)
                && slot_moves::moving(150, Some(false))
                && !slot_moves::moving(150, Some(true))
        );
        assert!(!slot_moves::moving(201, None));
        handle(Step::Aborted(Side::Export), &[(100, 200)]);
        assert!(!slot_moves::moving(150, None));
        assert!(!slot_moves::any_moving());
    }

    #[test]
    fn a_redis_trim_keeps_the_slots_out_of_reach_until_it_ends() {
        let _serial = SERIAL.lock();
        let export = [(5_000, 5_010)];
        handle(redis_step(redis84::EVENT_SLOT_MIGRATION, redis84::MIGRATE_STARTED).unwrap(), &export);
        assert!(slot_moves::moving(5_005, Some(false)));
        handle(redis_step(redis84::EVENT_SLOT_MIGRATION, redis84::MIGRATE_COMPLETED).unwrap(), &export);
        assert!(!slot_moves::moving(5_005, None));
        handle(redis_step(redis84::EVENT_TRIM, redis84::TRIM_STARTED).unwrap(), &export);
        assert!(slot_moves::moving(5_005, None) && !slot_moves::moving(5_005, Some(true)), "a trim is no import");
        handle(redis_step(redis84::EVENT_TRIM, redis84::TRIM_COMPLETED).unwrap(), &export);
        assert!(!slot_moves::moving(5_005, None));
        handle(redis_step(redis84::EVENT_TRIM, redis84::TRIM_BACKGROUND).unwrap(), &export);
        assert!(!slot_moves::any_moving(), "a background trim holds nothing");
    }

    #[test]
    fn unload_forgets_moves_in_progress() {
        let _serial = SERIAL.lock();
        handle(Step::Started(Side::Import), &[(7_000, 7_001)]);
        handle(Step::Started(Side::Export), &[(9_000, 9_000)]);
        assert_eq!(slot_moves::in_progress(), (1, 1));
        HANDLED.store(true, Ordering::Relaxed);
        unload();
        assert_eq!(slot_moves::in_progress(), (0, 0));
        assert!(!slot_moves::any_moving() && !slot_moves::moving(7_000, None));
        assert!(!HANDLED.load(Ordering::Relaxed));
    }

    /// The moves are process-wide: tests that change them take turns.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
}
