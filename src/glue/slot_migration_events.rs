//! The atomic slot migration events of Valkey 9
//! (`AtomicSlotMigration`) and Redis 8.4 (`ClusterSlotMigration`,
//! `ClusterSlotMigrationTrim`), subscribed and decoded: the C layouts of
//! their data, checked slot ranges, and one [`MigrationStep`] whichever
//! server sent it. Which server gets which subscription is decided above
//! (the event ids clash: 19 is Valkey's migration event but Redis's trim).

use std::os::raw::{c_char, c_int, c_void};

use redis_module::raw;

use super::ctx::Ctx;
use super::server_events::subscribe_raw;

/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (valkeymodule.h).
pub const OPTION_HANDLE_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;
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

/// Which way slots move, seen from this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Import,
    Export,
}

/// One step of a move, as either server reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationStep {
    Started(Direction),
    Aborted(Direction),
    Completed(Direction),
    /// Redis 8.4: the slots' keys are deleted key by key from now until
    /// [`MigrationStep::TrimCompleted`] (active trim, chosen when some
    /// loaded module listens to `key_trimmed`).
    TrimStarted,
    TrimCompleted,
    /// Redis 8.4: the slots' keys left the keyspace at once (background
    /// trim, the default: freed by a background thread, no key events).
    TrimmedInBackground,
}

/// Who gets the steps.
pub trait SlotMigrationHandler {
    /// `step` of a move of the slot `ranges` (checked: `start <= end <
    /// 16384`) happened; `ctx` is valid while this runs.
    fn on_step(ctx: Ctx, step: MigrationStep, ranges: &[(u16, u16)]);
}

/// Valkey 9+: subscribe `H` to `AtomicSlotMigration`; false if refused.
pub fn subscribe_valkey<H: SlotMigrationHandler>(ctx: Ctx) -> bool {
    subscribe_raw(ctx, EVENT_ATOMIC_SLOT_MIGRATION, on_valkey_event::<H>)
}

/// Redis 8.4+: subscribe `H` to its two events where the server says it
/// knows them (`RedisModule_IsSubEventSupported`); true when the migration
/// event is subscribed (the trim event is optional: without it the moves
/// are still followed).
pub fn subscribe_redis<H: SlotMigrationHandler>(ctx: Ctx) -> bool {
    // SAFETY: reads the API table's entry, filled once at load.
    let Some(supported) = (unsafe { raw::RedisModule_IsSubEventSupported }) else { return false };
    let migration = raw::RedisModuleEvent { id: redis84::EVENT_SLOT_MIGRATION, dataver: 1 };
    let trim = raw::RedisModuleEvent { id: redis84::EVENT_TRIM, dataver: 1 };
    // SAFETY: plain values in, a flag out.
    if unsafe { supported(migration, redis84::MIGRATE_COMPLETED) } == 0
        || !subscribe_raw(ctx, redis84::EVENT_SLOT_MIGRATION, on_redis_event::<H>)
    {
        return false;
    }
    // SAFETY: as above.
    if unsafe { supported(trim, redis84::TRIM_BACKGROUND) } != 0 {
        subscribe_raw(ctx, redis84::EVENT_TRIM, on_redis_event::<H>);
    }
    true
}

unsafe extern "C" fn on_valkey_event<H: SlotMigrationHandler>(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    let ctx = Ctx::from_raw(ctx);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(step) = valkey_step(subevent) else { return };
        // SAFETY: Valkey passes an `AtomicSlotMigrationInfoV1` (or null)
        // with this event, valid during the callback.
        let ranges = unsafe { ranges_of(data.cast::<MigrationInfo>()) };
        H::on_step(ctx, step, &ranges);
    }));
}

unsafe extern "C" fn on_redis_event<H: SlotMigrationHandler>(
    ctx: *mut raw::RedisModuleCtx,
    event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    let ctx = Ctx::from_raw(ctx);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Some(step) = redis_step(event.id, subevent) else { return };
        let slots = if event.id == redis84::EVENT_TRIM {
            // SAFETY: Redis passes a `ClusterSlotMigrationTrimInfoV1` (or
            // null) with the trim event, valid during the callback.
            unsafe { data.cast::<redis84::TrimInfo>().as_ref() }.map(|info| info.slots)
        } else {
            // SAFETY: and a `ClusterSlotMigrationInfoV1` (or null) with the
            // migration event.
            unsafe { data.cast::<redis84::MigrationInfo>().as_ref() }.map(|info| info.slots)
        };
        // SAFETY: `slots` is null or the info's range array, valid during
        // the callback.
        let ranges = unsafe { redis_ranges_of(slots.unwrap_or(std::ptr::null())) };
        H::on_step(ctx, step, &ranges);
    }));
}

fn valkey_step(subevent: u64) -> Option<MigrationStep> {
    use Direction::{Export, Import};
    Some(match subevent {
        IMPORT_STARTED => MigrationStep::Started(Import),
        EXPORT_STARTED => MigrationStep::Started(Export),
        IMPORT_ABORTED => MigrationStep::Aborted(Import),
        EXPORT_ABORTED => MigrationStep::Aborted(Export),
        IMPORT_COMPLETED => MigrationStep::Completed(Import),
        EXPORT_COMPLETED => MigrationStep::Completed(Export),
        _ => return None,
    })
}

fn redis_step(event: u64, subevent: u64) -> Option<MigrationStep> {
    use redis84::*;
    use Direction::{Export, Import};
    Some(match (event, subevent) {
        (EVENT_SLOT_MIGRATION, IMPORT_STARTED) => MigrationStep::Started(Import),
        (EVENT_SLOT_MIGRATION, IMPORT_FAILED) => MigrationStep::Aborted(Import),
        (EVENT_SLOT_MIGRATION, IMPORT_COMPLETED) => MigrationStep::Completed(Import),
        (EVENT_SLOT_MIGRATION, MIGRATE_STARTED) => MigrationStep::Started(Export),
        (EVENT_SLOT_MIGRATION, MIGRATE_FAILED) => MigrationStep::Aborted(Export),
        (EVENT_SLOT_MIGRATION, MIGRATE_COMPLETED) => MigrationStep::Completed(Export),
        (EVENT_TRIM, TRIM_STARTED) => MigrationStep::TrimStarted,
        (EVENT_TRIM, TRIM_COMPLETED) => MigrationStep::TrimCompleted,
        (EVENT_TRIM, TRIM_BACKGROUND) => MigrationStep::TrimmedInBackground,
        _ => return None,
    })
}

/// The slot ranges of a Valkey event's info, checked.
///
/// # Safety
/// `info` is null or points at a live `AtomicSlotMigrationInfoV1`.
unsafe fn ranges_of(info: *const MigrationInfo) -> Vec<(u16, u16)> {
    // SAFETY: per the contract, null or live.
    let Some(info) = (unsafe { info.as_ref() }) else { return Vec::new() };
    if info.slot_ranges.is_null() || info.version < 1 {
        return Vec::new();
    }
    // SAFETY: a version 1 info holds `num_slot_ranges` ranges at `slot_ranges`.
    let all = unsafe { std::slice::from_raw_parts(info.slot_ranges, info.num_slot_ranges as usize) };
    valid(all.iter().filter_map(|r| Some((u16::try_from(r.start).ok()?, u16::try_from(r.end).ok()?))))
}

/// The slot ranges of a Redis 8.4 `RedisModuleSlotRangeArray`, checked.
///
/// # Safety
/// `array` is null or points at a live range array.
unsafe fn redis_ranges_of(array: *const redis84::SlotRangeArray) -> Vec<(u16, u16)> {
    // SAFETY: per the contract, null or live.
    let Some(header) = (unsafe { array.as_ref() }) else { return Vec::new() };
    let Ok(count) = usize::try_from(header.num_ranges) else { return Vec::new() };
    // SAFETY: the ranges follow the count inline (a flexible array member).
    let first = unsafe { std::ptr::addr_of!((*array).ranges) }.cast::<redis84::SlotRange>();
    // SAFETY: the array holds `num_ranges` ranges there.
    let all = unsafe { std::slice::from_raw_parts(first, count) };
    valid(all.iter().map(|r| (r.start, r.end)))
}

fn valid(ranges: impl Iterator<Item = (u16, u16)>) -> Vec<(u16, u16)> {
    ranges.filter(|(start, end)| start <= end && *end < 16_384).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::{Export, Import};

    #[test]
    fn redis_subevents_map_to_the_same_steps() {
        use redis84::*;
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, IMPORT_STARTED), Some(MigrationStep::Started(Import)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, IMPORT_FAILED), Some(MigrationStep::Aborted(Import)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, IMPORT_COMPLETED), Some(MigrationStep::Completed(Import)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, MIGRATE_STARTED), Some(MigrationStep::Started(Export)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, MIGRATE_FAILED), Some(MigrationStep::Aborted(Export)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, MIGRATE_COMPLETED), Some(MigrationStep::Completed(Export)));
        assert_eq!(redis_step(EVENT_SLOT_MIGRATION, 6), None, "MIGRATE_MODULE_PROPAGATE is ignored");
        assert_eq!(redis_step(EVENT_TRIM, TRIM_STARTED), Some(MigrationStep::TrimStarted));
        assert_eq!(redis_step(EVENT_TRIM, TRIM_COMPLETED), Some(MigrationStep::TrimCompleted));
        assert_eq!(redis_step(EVENT_TRIM, TRIM_BACKGROUND), Some(MigrationStep::TrimmedInBackground));
        assert_eq!(redis_step(EVENT_TRIM, 3), None);
        assert_eq!(redis_step(17, 0), None);
        // Valkey's numbering differs: its 1 is an export start, Redis's an import failure.
        assert_eq!(valkey_step(EXPORT_STARTED), Some(MigrationStep::Started(Export)));
        assert_eq!(valkey_step(IMPORT_ABORTED), Some(MigrationStep::Aborted(Import)));
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
        // SAFETY: `pointer` is a live array of the layout read.
        assert_eq!(unsafe { redis_ranges_of(pointer) }, vec![(0, 100), (16_383, 16_383)]);
        let none = ThreeRanges {
            num_ranges: -1,
            ranges: [R { start: 0, end: 1 }, R { start: 0, end: 1 }, R { start: 0, end: 1 }],
        };
        // SAFETY: a live array (whose negative count reads nothing), then null.
        assert!(unsafe { redis_ranges_of(std::ptr::addr_of!(none).cast()) }.is_empty());
        // SAFETY: null is allowed.
        assert!(unsafe { redis_ranges_of(std::ptr::null()) }.is_empty());
        let out_of_range = ThreeRanges {
            num_ranges: 1,
            ranges: [R { start: 10, end: 16_384 }, R { start: 0, end: 1 }, R { start: 0, end: 1 }],
        };
        // SAFETY: a live array of one range.
        assert!(unsafe { redis_ranges_of(std::ptr::addr_of!(out_of_range).cast()) }.is_empty());
        // The info structs put the array pointer where redismodule.h does.
        assert_eq!(std::mem::offset_of!(redis84::MigrationInfo, task_id), 96);
        assert_eq!(std::mem::offset_of!(redis84::MigrationInfo, slots), 104);
        assert_eq!(std::mem::offset_of!(redis84::TrimInfo, slots), 8);
        assert_eq!(std::mem::offset_of!(redis84::SlotRangeArray, ranges), 4);
    }
}
