//! The module itself: what `MODULE LOAD` sets up (configuration, the
//! commands of `crate::commands`, the services of `crate::services`, INFO)
//! and what `MODULE UNLOAD` takes down. The top layer: the one place that
//! knows every other.

mod info;

use std::os::raw::c_int;

use redis_module::{raw, redis_module, Context, RedisString, Status};

use crate::glue::{acl_category, api, command, config, session, string, unload_guard};
use crate::metrics::{fire_ages, tenant_stats};
use crate::services::{keyspace_events, lease_timer, server_events, slot_migration, waiters};

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

fn initialize(ctx: &Context, args: &[RedisString]) -> Status {
    let status = set_up(ctx, args);
    if status == Status::Err {
        // A failed load is unmapped without `OnUnload` (`deinit`): the
        // detached context the macro made before calling us would be lost
        // with its client (~17.5 KB a failed `MODULE LOAD`).
        let _ = std::panic::catch_unwind(free_detached_context);
    }
    status
}

fn set_up(ctx: &Context, args: &[RedisString]) -> Status {
    let arguments: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
    if let Err(error) = crate::commands::settings::check_module_args(&arguments) {
        ctx.log_warning(&format!("dreamtown: {error}"));
        return Status::Err;
    }
    let missing = api::missing_apis();
    if !missing.is_empty() {
        ctx.log_warning(&format!("dreamtown needs Redis 7.0 or newer; this server lacks {}", missing.join(", ")));
        return Status::Err;
    }
    if let Err(error) = config::register(ctx.ctx, &arguments, &crate::commands::settings::all()) {
        ctx.log_warning(&format!("dreamtown: {error}"));
        return Status::Err;
    }
    // Keys signal WATCH themselves, and only when a command really changed
    // them. Async (swapdb) replica loading is handled (`leases`: a replica
    // keeps no index, and a completed or aborted async load restarts the
    // catch-up; nothing else here follows the keyspace): without this flag
    // the server would give up diskless swapdb loading for every module.
    // Valkey's VALKEYMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD is the same bit.
    // On Valkey 9, atomic slot migration is handled (slot_migration);
    // on Redis 8.4, which asks for no option, its events are subscribed there.
    let options = (raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED
        | raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD) as c_int
        | slot_migration::options(ctx.ctx);
    unsafe { api::api!(RedisModule_SetModuleOptions)(ctx.ctx, options) };
    unsafe { api::api!(RedisModule_RegisterInfoFunc)(ctx.ctx, Some(info::info)) };
    // Optional: a server without module ACL categories (Redis 7.0, 7.2) or
    // one that refuses it still gets every command, without `@dreamtown`.
    let module_category = acl_category::add(ctx.ctx).unwrap_or_else(|error| {
        ctx.log_warning(&format!("dreamtown: {error}; ACL rules must name the commands"));
        false
    });
    if let Err(error) = keyspace_events::subscribe(ctx.ctx) {
        ctx.log_warning(&format!("dreamtown: {error}"));
        return Status::Err;
    }
    for spec in crate::commands::all() {
        if let Err(error) = command::register(ctx.ctx, spec, module_category) {
            ctx.log_warning(&format!("dreamtown: {error}"));
            return Status::Err;
        }
    }
    for spec in crate::commands::containers() {
        if let Err(error) = command::register_container(ctx.ctx, spec, module_category) {
            ctx.log_warning(&format!("dreamtown: {error}"));
            return Status::Err;
        }
    }
    if let Err(error) = lease_timer::start(ctx.ctx, crate::commands::lease_families()) {
        ctx.log_warning(&format!("dreamtown: {error}"));
        return Status::Err;
    }
    if let Err(error) = server_events::subscribe(ctx.ctx) {
        ctx.log_warning(&format!("dreamtown: {error}"));
        return Status::Err;
    }
    // The command filter (ACL changes, ACL DRYRUN; in cluster mode the
    // migration guard's memo), and the guard's dry run.
    let filter = crate::services::command_filter::register(ctx.ctx);
    crate::services::migration_guard::init(ctx.ctx, filter);
    Status::Ok
}

/// `MODULE UNLOAD`, once the server allows it (no client blocked in a
/// module command, no module timer scheduled: `moduleUnload`). Frees what
/// the module's statics hold and resets them. Why both: the library is
/// not always unmapped (glibc keeps a library whose thread-locals
/// registered destructors, as soon as a command used one), and a later
/// `MODULE LOAD` then finds its statics as they were left; when it is
/// unmapped, whatever they held would be lost to the server's allocator.
/// The `INFO dreamtown` totals (plain counters) carry on in the first case.
fn deinit(ctx: &Context) -> Status {
    // First, whether this server can unload it at all (Valkey 8.1 cannot):
    // refusing here cancels the unload with nothing freed.
    if let Ok(Some(refusal)) = std::panic::catch_unwind(|| unload_guard::refusal(ctx.ctx)) {
        ctx.log_warning(refusal);
        return Status::Err;
    }
    let _ = std::panic::catch_unwind(|| {
        lease_timer::unload();
        crate::services::limits_index::unload();
        waiters::unload();
        tenant_stats::forget_all();
        fire_ages::forget_all();
        server_events::unload();
        crate::services::slot_memo::unload();
        slot_migration::unload();
        crate::services::migration_guard::unload();
        crate::services::acl_watch::unload();
        crate::glue::acl::unload();
        session::unload();
        string::unload();
        config::unload();
        command::unload();
        crate::stores::dreams::queue_names::unload();
        crate::stores::town::names::unload();
        free_detached_context();
    });
    Status::Ok
}

/// Free the detached thread-safe context the `redis_module!` macro makes
/// at every load (`MODULE_CONTEXT`, for logging without a context; the
/// module never uses it) and clear it, so that the next load makes its own,
/// tied to the new module rather than to the one being unloaded. Without
/// this, a load whose library was unmapped at the previous unload left a
/// context and its client (~2.5 KB) behind, and one whose library stayed
/// mapped kept a context pointing at the freed module.
fn free_detached_context() {
    use std::sync::atomic::{AtomicPtr, Ordering};
    // `DetachedContext` is one `AtomicPtr` (redis-module 2.0.8, pinned),
    // whose field is private to the crate: read it through its layout.
    const _: () = assert!(
        std::mem::size_of::<redis_module::DetachedContext>() == std::mem::size_of::<AtomicPtr<raw::RedisModuleCtx>>()
    );
    let slot = unsafe { &*(std::ptr::addr_of!(redis_module::MODULE_CONTEXT).cast::<AtomicPtr<raw::RedisModuleCtx>>()) };
    let detached = slot.swap(std::ptr::null_mut(), Ordering::Relaxed);
    if let (false, Some(free)) = (detached.is_null(), unsafe { raw::RedisModule_FreeThreadSafeContext }) {
        unsafe { free(detached) };
    }
}

redis_module! {
    name: "dreamtown",
    version: crate::version::MODULE_VERSION,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: initialize,
    deinit: deinit,
    commands: [],
}
