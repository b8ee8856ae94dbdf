//! The module itself: what `MODULE LOAD` sets up (configuration, the
//! commands of `crate::commands`, the services of `crate::services`, INFO)
//! and what `MODULE UNLOAD` takes down. The top layer: the one place that
//! knows every other.

mod info;

use crate::glue::ctx::{log_warning_text, Ctx};
use crate::glue::module_options::ModuleOptions;
use crate::glue::{acl_category, api, command, config, load, unload_guard};
use crate::services::{keyspace_events, lease_timer, server_events, slot_migration};

#[cfg(not(any(test, feature = "fuzzing")))]
type Allocator = redis_module::alloc::RedisAlloc;
#[cfg(not(any(test, feature = "fuzzing")))]
const ALLOCATOR: Allocator = redis_module::alloc::RedisAlloc;
// Outside redis-server (unit tests, fuzz targets) the Redis allocator does
// not exist.
#[cfg(any(test, feature = "fuzzing"))]
type Allocator = std::alloc::System;
#[cfg(any(test, feature = "fuzzing"))]
const ALLOCATOR: Allocator = std::alloc::System;

#[global_allocator]
static MODULE_ALLOCATOR: Allocator = ALLOCATOR;

load::entry_points! {
    name: c"dreamtown",
    version: crate::version::MODULE_VERSION,
    load: set_up,
    unload: deinit,
}

/// `MODULE LOAD` (or the server's start): true when the module is ready;
/// a refusal is logged.
fn set_up(ctx: Ctx, arguments: &[&[u8]]) -> bool {
    if let Err(error) = crate::commands::settings::check_module_args(arguments) {
        log_warning_text(ctx, &format!("dreamtown: {error}"));
        return false;
    }
    let missing = api::missing_apis();
    if !missing.is_empty() {
        log_warning_text(ctx, &format!("dreamtown needs Redis 7.0 or newer; this server lacks {}", missing.join(", ")));
        return false;
    }
    if let Err(error) = config::register(ctx, arguments, &crate::commands::settings::all()) {
        log_warning_text(ctx, &format!("dreamtown: {error}"));
        return false;
    }
    // Keys signal WATCH themselves, and only when a command really changed
    // them. Async (swapdb) replica loading is handled (`leases`: a replica
    // keeps no index, and a completed or aborted async load restarts the
    // catch-up; nothing else here follows the keyspace): without this flag
    // the server would give up diskless swapdb loading for every module.
    // Valkey's VALKEYMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD is the same bit.
    // On Valkey 9, atomic slot migration is handled (slot_migration);
    // on Redis 8.4, which asks for no option, its events are subscribed there.
    let options = ModuleOptions::NO_IMPLICIT_SIGNAL_MODIFIED
        | ModuleOptions::HANDLE_REPL_ASYNC_LOAD
        | ModuleOptions::from_bits(slot_migration::options(ctx));
    options.set(ctx);
    crate::glue::info::register::<info::DreamtownInfo>(ctx);
    // Optional: a server without module ACL categories (Redis 7.0, 7.2) or
    // one that refuses it still gets every command, without `@dreamtown`.
    let module_category = acl_category::add(ctx).unwrap_or_else(|error| {
        log_warning_text(ctx, &format!("dreamtown: {error}; ACL rules must name the commands"));
        false
    });
    if let Err(error) = keyspace_events::subscribe(ctx) {
        log_warning_text(ctx, &format!("dreamtown: {error}"));
        return false;
    }
    for spec in crate::commands::all() {
        if let Err(error) = command::register(ctx, spec, module_category) {
            log_warning_text(ctx, &format!("dreamtown: {error}"));
            return false;
        }
    }
    for spec in crate::commands::containers() {
        if let Err(error) = command::register_container(ctx, spec, module_category) {
            log_warning_text(ctx, &format!("dreamtown: {error}"));
            return false;
        }
    }
    if let Err(error) = lease_timer::start(ctx, crate::commands::lease_families()) {
        log_warning_text(ctx, &format!("dreamtown: {error}"));
        return false;
    }
    if let Err(error) = server_events::subscribe(ctx) {
        log_warning_text(ctx, &format!("dreamtown: {error}"));
        return false;
    }
    // The command filter (ACL changes, ACL DRYRUN; in cluster mode the
    // migration guard's memo), and the guard's dry run.
    let filter = crate::services::command_filter::register(ctx);
    crate::services::migration_guard::init(ctx, filter);
    true
}

/// `MODULE UNLOAD`, once the server allows it (no client blocked in a
/// module command, no module timer scheduled: `moduleUnload`): whether the
/// module lets itself go. Nothing is freed or reset here: everything a
/// load made is in its `glue::module_state`, which `glue::load` drops once
/// this agrees, so a later `MODULE LOAD` starts from nothing whether or
/// not the server unmapped the library in between (glibc keeps a library
/// mapped once a thread-local registered a destructor).
fn deinit(ctx: Ctx) -> bool {
    // Whether this server can unload it at all (Valkey 8.1 cannot):
    // refusing here cancels the unload with nothing freed.
    match std::panic::catch_unwind(|| unload_guard::refusal(ctx)) {
        Ok(Some(refusal)) => {
            log_warning_text(ctx, refusal);
            false
        }
        _ => true,
    }
}
