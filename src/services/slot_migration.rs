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
//!   may_touch` asks
//!   [`tenant_is_moving`](super::slot_moves::tenant_is_moving)). When the
//!   import completes, the lease timer finds those tenants here and
//!   expires their leases; when it is aborted the server has deleted the
//!   keys and the index forgets the tenants.
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

use std::cell::Cell;
use std::os::raw::c_int;

use super::lease_timer;
use super::slot_moves::{self, Side};
use crate::glue::ctx::Ctx;
use crate::glue::module_state::PerLoad;
use crate::glue::server_info;
use crate::glue::slot_migration_events::{
    self, Direction, MigrationStep, SlotMigrationHandler, OPTION_HANDLE_ATOMIC_SLOT_MIGRATION,
};
use crate::metrics::totals::Total;

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

impl Step {
    fn of(step: MigrationStep) -> Self {
        let side = |direction| match direction {
            Direction::Import => Side::Import,
            Direction::Export => Side::Export,
        };
        match step {
            MigrationStep::Started(direction) => Step::Started(side(direction)),
            MigrationStep::Aborted(direction) => Step::Aborted(side(direction)),
            MigrationStep::Completed(direction) => Step::Completed(side(direction)),
            MigrationStep::TrimStarted => Step::TrimStarted,
            MigrationStep::TrimCompleted => Step::TrimCompleted,
            MigrationStep::TrimmedInBackground => Step::TrimmedInBackground,
        }
    }
}

/// This mechanism's part of the module state (the moves in progress are
/// `slot_moves`'s).
#[derive(Default)]
struct State {
    /// Does this module handle atomic slot migration here (declared on
    /// Valkey 9+, events subscribed on Redis 8.4+)?
    handled: Cell<bool>,
    /// Moves that ended here, by direction and outcome (`INFO dreamtown`).
    imports_completed: Total,
    imports_aborted: Total,
    exports_completed: Total,
    exports_aborted: Total,
}

static STATE: PerLoad<State> = PerLoad::new();

fn set_handled() {
    STATE.with(|state| state.handled.set(true));
}

/// Module options this server should get from us: the atomic-slot-migration
/// claim on Valkey 9 or newer (with the event subscribed), nothing
/// elsewhere; on Redis 8.4 or newer, which asks for no claim, the events
/// are subscribed here too. Called once when the module loads.
pub fn options(ctx: Ctx) -> c_int {
    let server = server_info(ctx);
    if is_valkey_9_or_newer(server.name.as_deref(), server.valkey_version.as_deref()) {
        return declare_for_valkey(ctx);
    }
    if is_redis_8_4_or_newer(server.name.as_deref(), server.redis_version.as_deref()) {
        subscribe_on_redis(ctx);
    }
    0
}

fn declare_for_valkey(ctx: Ctx) -> c_int {
    if !slot_migration_events::subscribe_valkey::<Moves>(ctx) {
        // Without the events the claim would be false: leave it out, and
        // Valkey keeps refusing MIGRATESLOTS.
        return 0;
    }
    set_handled();
    OPTION_HANDLE_ATOMIC_SLOT_MIGRATION
}

/// Redis 8.4+: subscribe to its two events where the server says it
/// knows them (`RedisModule_IsSubEventSupported`). Without the migration
/// event nothing is handled (as before 8.4); without the trim event the
/// moves are still followed.
fn subscribe_on_redis(ctx: Ctx) {
    if slot_migration_events::subscribe_redis::<Moves>(ctx) {
        set_handled();
    }
}

/// The `dreamtown_cluster` section of `INFO dreamtown`.
pub fn info_fields() -> Vec<(&'static std::ffi::CStr, u64)> {
    let (importing, exporting) = slot_moves::in_progress();
    STATE.with(|state| {
        vec![
            (c"atomic_slot_migration", u64::from(state.handled.get())),
            (c"slot_imports_in_progress", importing),
            (c"slot_exports_in_progress", exporting),
            (c"slot_imports_completed", state.imports_completed.get()),
            (c"slot_imports_aborted", state.imports_aborted.get()),
            (c"slot_exports_completed", state.exports_completed.get()),
            (c"slot_exports_aborted", state.exports_aborted.get()),
        ]
    })
}

/// What `INFO server` says of the server.
struct ServerInfo {
    name: Option<String>,
    valkey_version: Option<String>,
    redis_version: Option<String>,
}

fn server_info(ctx: Ctx) -> ServerInfo {
    match server_info::fields(ctx, c"server", [c"server_name", c"valkey_version", c"redis_version"]) {
        Some([name, valkey_version, redis_version]) => ServerInfo { name, valkey_version, redis_version },
        None => ServerInfo { name: None, valkey_version: None, redis_version: None },
    }
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

/// The subscriber of either server's migration events.
struct Moves;

impl SlotMigrationHandler for Moves {
    fn on_step(ctx: Ctx, step: MigrationStep, ranges: &[(u16, u16)]) {
        let step = Step::of(step);
        handle(step, ranges);
        // The arrived slots' limits keys: the keyspace events of the
        // import noted those that came by `RESTORE`; a bounded catch-up of
        // the slots finds every one, whatever the import wrote them with
        // (the limits index is not trusted until it has). On Redis 8.4,
        // how an import's snapshot reaches the target is not something
        // this module can see (untested): the same catch-up indexes the
        // arrived slots' lease sets there.
        if step == Step::Completed(Side::Import) {
            lease_timer::index_slots(ctx, ranges);
        }
    }
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
        Step::Completed(Side::Import) => STATE.with(|state| state.imports_completed.bump()),
        Step::Aborted(Side::Import) => STATE.with(|state| state.imports_aborted.bump()),
        Step::Completed(Side::Export) => STATE.with(|state| state.exports_completed.bump()),
        Step::Aborted(Side::Export) => STATE.with(|state| state.exports_aborted.bump()),
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
pub fn on_keyspace_event(ctx: Ctx, key: &[u8]) -> bool {
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
    fn moves_are_tracked_per_direction() {
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
        let export = [(5_000, 5_010)];
        handle(Step::Started(Side::Export), &export);
        assert!(slot_moves::moving(5_005, Some(false)));
        handle(Step::Completed(Side::Export), &export);
        assert!(!slot_moves::moving(5_005, None));
        handle(Step::TrimStarted, &export);
        assert!(slot_moves::moving(5_005, None) && !slot_moves::moving(5_005, Some(true)), "a trim is no import");
        handle(Step::TrimCompleted, &export);
        assert!(!slot_moves::moving(5_005, None));
        handle(Step::TrimmedInBackground, &export);
        assert!(!slot_moves::any_moving(), "a background trim holds nothing");
    }

    #[test]
    fn unload_forgets_moves_in_progress() {
        crate::glue::module_state::create();
        handle(Step::Started(Side::Import), &[(7_000, 7_001)]);
        handle(Step::Started(Side::Export), &[(9_000, 9_000)]);
        assert_eq!(slot_moves::in_progress(), (1, 1));
        set_handled();
        crate::glue::module_state::drop_state();
        crate::glue::module_state::create();
        assert_eq!(slot_moves::in_progress(), (0, 0));
        assert!(!slot_moves::any_moving() && !slot_moves::moving(7_000, None));
        assert!(!STATE.with(|state| state.handled.get()));
    }
}
