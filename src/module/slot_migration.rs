//! Atomic slot migration (Valkey 9 `CLUSTER MIGRATESLOTS`): what this node
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
//!   index which tenants arrived with leases (`leases::index_key`);
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
//! Redis 8.4 has its own atomic slot migration (`CLUSTER MIGRATION
//! IMPORT`, event `ClusterSlotMigration`) with no opt-in; it is not handled
//! here nor tested (no package carries 8.4): there the module relies on
//! the migration guard's `RM_Call` routing alone.

use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use redis_module::raw;

use super::leases;
use super::stats::Total;

/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (valkeymodule.h).
const OPTION_HANDLE_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;
/// `VALKEYMODULE_EVENT_ATOMIC_SLOT_MIGRATION`.
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

/// A move in progress on this node: its slot ranges (inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Move {
    importing: bool,
    ranges: Vec<(u16, u16)>,
}

/// Did this module declare atomic slot migration support (Valkey 9+)?
static DECLARED: AtomicBool = AtomicBool::new(false);
/// Moves that ended here, by direction and outcome (`INFO dreamtown`).
static IMPORTS_COMPLETED: Total = Total::new();
static IMPORTS_ABORTED: Total = Total::new();
static EXPORTS_COMPLETED: Total = Total::new();
static EXPORTS_ABORTED: Total = Total::new();

/// Moves in progress (a handful at most).
static MOVES: Mutex<Vec<Move>> = Mutex::new(Vec::new());
/// Is any move in progress? The fast path of every check.
static ANY: AtomicBool = AtomicBool::new(false);

fn with_moves<R>(run: impl FnOnce(&mut Vec<Move>) -> R) -> R {
    let mut guard = match MOVES.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    let result = run(&mut guard);
    ANY.store(!guard.is_empty(), Ordering::Relaxed);
    result
}

/// Module options this server should get from us: the atomic-slot-migration
/// claim on Valkey 9 or newer (with the event subscribed), nothing
/// elsewhere. Called once when the module loads.
pub fn options(ctx: *mut raw::RedisModuleCtx) -> c_int {
    if !server_knows_the_option(ctx) {
        return 0;
    }
    let Some(subscribe) = (unsafe { raw::RedisModule_SubscribeToServerEvent }) else { return 0 };
    let event = raw::RedisModuleEvent { id: EVENT_ATOMIC_SLOT_MIGRATION, dataver: 1 };
    if unsafe { subscribe(ctx, event, Some(on_event)) } != raw::REDISMODULE_OK as c_int {
        // Without the events the claim would be false: leave it out, and
        // Valkey keeps refusing MIGRATESLOTS.
        return 0;
    }
    DECLARED.store(true, Ordering::Relaxed);
    OPTION_HANDLE_ATOMIC_SLOT_MIGRATION
}

/// The `dreamtown_cluster` section of `INFO dreamtown`.
pub fn info_fields() -> Vec<(&'static std::ffi::CStr, u64)> {
    let (importing, exporting) = with_moves(|moves| {
        let importing = moves.iter().filter(|m| m.importing).count() as u64;
        (importing, moves.len() as u64 - importing)
    });
    vec![
        (c"atomic_slot_migration", u64::from(DECLARED.load(Ordering::Relaxed))),
        (c"slot_imports_in_progress", importing),
        (c"slot_exports_in_progress", exporting),
        (c"slot_imports_completed", IMPORTS_COMPLETED.get()),
        (c"slot_imports_aborted", IMPORTS_ABORTED.get()),
        (c"slot_exports_completed", EXPORTS_COMPLETED.get()),
        (c"slot_exports_aborted", EXPORTS_ABORTED.get()),
    ]
}

/// Valkey 9.0 or newer (`server_name:valkey`, `valkey_version:9.x`).
fn server_knows_the_option(ctx: *mut raw::RedisModuleCtx) -> bool {
    let (Some(get), Some(field), Some(free)) = (unsafe {
        (raw::RedisModule_GetServerInfo, raw::RedisModule_ServerInfoGetFieldC, raw::RedisModule_FreeServerInfo)
    }) else {
        return false;
    };
    let info = unsafe { get(ctx, c"server".as_ptr()) };
    if info.is_null() {
        return false;
    }
    let text = |name: &std::ffi::CStr| {
        let value = unsafe { field(info, name.as_ptr()) };
        (!value.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(value) }.to_string_lossy().into_owned())
    };
    let name = text(c"server_name");
    let version = text(c"valkey_version");
    unsafe { free(ctx, info) };
    is_valkey_9_or_newer(name.as_deref(), version.as_deref())
}

fn is_valkey_9_or_newer(name: Option<&str>, version: Option<&str>) -> bool {
    let major = version.and_then(|v| v.split('.').next()).and_then(|m| m.parse::<u32>().ok());
    name == Some("valkey") && major.is_some_and(|m| m >= 9)
}

unsafe extern "C" fn on_event(_ctx: *mut raw::RedisModuleCtx, _event: raw::RedisModuleEvent, subevent: u64, data: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let ranges = unsafe { ranges_of(data.cast::<MigrationInfo>()) };
        handle(subevent, ranges);
    }));
}

/// The slot ranges of an event's info, checked.
unsafe fn ranges_of(info: *const MigrationInfo) -> Vec<(u16, u16)> {
    let Some(info) = (unsafe { info.as_ref() }) else { return Vec::new() };
    if info.slot_ranges.is_null() || info.version < 1 {
        return Vec::new();
    }
    let all = unsafe { std::slice::from_raw_parts(info.slot_ranges, info.num_slot_ranges as usize) };
    all.iter()
        .filter_map(|r| Some((u16::try_from(r.start).ok()?, u16::try_from(r.end).ok()?)))
        .filter(|(start, end)| start <= end && *end < 16_384)
        .collect()
}

fn handle(subevent: u64, ranges: Vec<(u16, u16)>) {
    match subevent {
        IMPORT_STARTED | EXPORT_STARTED => {
            let importing = subevent == IMPORT_STARTED;
            with_moves(|moves| moves.push(Move { importing, ranges }));
        }
        IMPORT_ABORTED | EXPORT_ABORTED | IMPORT_COMPLETED | EXPORT_COMPLETED => {
            let importing = subevent == IMPORT_ABORTED || subevent == IMPORT_COMPLETED;
            match subevent {
                IMPORT_COMPLETED => IMPORTS_COMPLETED.bump(),
                IMPORT_ABORTED => IMPORTS_ABORTED.bump(),
                EXPORT_COMPLETED => EXPORTS_COMPLETED.bump(),
                _ => EXPORTS_ABORTED.bump(),
            }
            let finished = Move { importing, ranges };
            with_moves(|moves| {
                if let Some(at) = moves.iter().position(|m| *m == finished) {
                    moves.remove(at);
                }
            });
            // The tenants now elsewhere (an export that completed) or gone
            // (an import aborted: the server deleted what had arrived)
            // leave the lease index; an aborted export keeps them here,
            // and a completed import found its own in the keyspace events.
            if subevent == EXPORT_COMPLETED || subevent == IMPORT_ABORTED {
                leases::forget_slots(&finished.ranges);
            }
        }
        _ => {}
    }
}

fn in_ranges(ranges: &[(u16, u16)], slot: u16) -> bool {
    ranges.iter().any(|(start, end)| (*start..=*end).contains(&slot))
}

/// Is `slot` being imported (`importing`) or exported here?
fn moving(slot: u16, importing: Option<bool>) -> bool {
    if !ANY.load(Ordering::Relaxed) {
        return false;
    }
    with_moves(|moves| {
        moves.iter().any(|m| importing.is_none_or(|i| i == m.importing) && in_ranges(&m.ranges, slot))
    })
}

/// Is `tenant`'s slot being imported or exported by this node (atomic
/// slot migration)? Then nothing runs on it on its own (timers, waiter
/// passes).
pub fn tenant_is_moving(tenant: &[u8]) -> bool {
    ANY.load(Ordering::Relaxed) && moving(tenant_slot(tenant), None)
}

/// Is `key`'s slot being imported by this node?
fn key_is_importing(key: &[u8]) -> bool {
    ANY.load(Ordering::Relaxed) && moving(super::cluster_slot::key_slot(key), Some(true))
}

/// A keyspace event on `key`: if its slot is being imported, learn what
/// it brought (lease sets) and say so, for the caller to hand it to no
/// other listener (no client of the slot is blocked here, and nothing
/// acts on the slot until it is ours).
pub fn on_keyspace_event(ctx: *mut raw::RedisModuleCtx, key: &[u8]) -> bool {
    if !key_is_importing(key) {
        return false;
    }
    leases::index_key(ctx, key);
    true
}

/// The slot of a tenant: a valid tenant has no braces, so it hashes as
/// the hash tag of all its keys does.
fn tenant_slot(tenant: &[u8]) -> u16 {
    super::cluster_slot::key_slot(tenant)
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
    fn moves_are_tracked_per_direction() {
        handle(EXPORT_STARTED, vec![(100, 200)]);
        assert!(moving(150, None) && moving(150, Some(false)) && !moving(150, Some(true)));
        assert!(!moving(201, None));
        handle(EXPORT_ABORTED, vec![(100, 200)]);
        assert!(!moving(150, None));
        assert!(!ANY.load(Ordering::Relaxed));
    }
}
