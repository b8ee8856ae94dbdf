//! The Redis glue: the module definition, its configuration and INFO, and
//! the pieces every command is built from (guarded entry points, sessions
//! with ACL checks, keys that replicate and notify their writes, replies).

pub mod acl_category;
pub mod api;
pub mod args;
pub mod call;
pub mod cluster_slot;
pub mod command;
pub mod config;
pub mod effects;
pub mod fire_ages;
pub mod key;
pub mod keyspace_events;
pub mod leases;
pub mod migration_guard;
pub mod reply;
pub mod session;
pub mod slot_migration;
pub mod stats;
pub mod tenant_stats;
pub mod string;
pub mod waiters;

use std::os::raw::c_int;

use redis_module::configuration::ConfigurationFlags;
use redis_module::{raw, redis_module, Context, RedisString, Status};

use self::config::*;

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
    let arguments: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
    if let Err(error) = config::check_module_args(&arguments) {
        ctx.log_warning(&format!("dreamtown: {error}"));
        return Status::Err;
    }
    let missing = api::missing_apis();
    if !missing.is_empty() {
        ctx.log_warning(&format!(
            "dreamtown needs Redis 7.0 or newer; this server lacks {}",
            missing.join(", ")
        ));
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
    let options = (raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED | raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD)
        as c_int
        | slot_migration::options(ctx.ctx);
    unsafe { api::api!(RedisModule_SetModuleOptions)(ctx.ctx, options) };
    unsafe { api::api!(RedisModule_RegisterInfoFunc)(ctx.ctx, Some(stats::info)) };
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
    if let Err(error) = leases::start(ctx.ctx, crate::commands::lease_families()) {
        ctx.log_warning(&format!("dreamtown: {error}"));
        return Status::Err;
    }
    Status::Ok
}

redis_module! {
    name: "dreamtown",
    version: 1,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: initialize,
    commands: [],
    configurations: [
        i64: [
            ["queue-max", &QUEUE_MAX, 1000, QUEUE_MAX_RANGE.0, QUEUE_MAX_RANGE.1, ConfigurationFlags::DEFAULT, None],
            ["quiet-utc-offset", &QUIET_UTC_OFFSET, 0, QUIET_UTC_OFFSET_RANGE.0, QUIET_UTC_OFFSET_RANGE.1, ConfigurationFlags::DEFAULT, None],
            ["quiet-backlog-min", &QUIET_BACKLOG_MIN, 32, QUIET_BACKLOG_MIN_RANGE.0, QUIET_BACKLOG_MIN_RANGE.1, ConfigurationFlags::DEFAULT, None],
            ["memory-threshold", &MEMORY_THRESHOLD, 50, THRESHOLD_RANGE.0, THRESHOLD_RANGE.1, ConfigurationFlags::DEFAULT, None],
            ["edge-threshold", &EDGE_THRESHOLD, 200, THRESHOLD_RANGE.0, THRESHOLD_RANGE.1, ConfigurationFlags::DEFAULT, None],
            ["min-interval", &MIN_INTERVAL, 3_600, SECONDS_RANGE.0, SECONDS_RANGE.1, ConfigurationFlags::DEFAULT, None],
            ["lease", &LEASE, 0, LEASE_RANGE.0, LEASE_RANGE.1, ConfigurationFlags::DEFAULT, None],
            ["town-lease", &TOWN_LEASE, 0, LEASE_RANGE.0, LEASE_RANGE.1, ConfigurationFlags::DEFAULT, None],
            ["age-floor", &AGE_FLOOR, 604_800, SECONDS_RANGE.0, SECONDS_RANGE.1, ConfigurationFlags::DEFAULT, None],
            ["catch-up-keys-per-turn", &CATCH_UP_KEYS_PER_TURN, 10_000, CATCH_UP_KEYS_RANGE.0, CATCH_UP_KEYS_RANGE.1, ConfigurationFlags::DEFAULT, None],
        ],
        string: [
            ["quiet-hours", &QUIET_HOURS, QUIET_HOURS_DEFAULT, ConfigurationFlags::DEFAULT, None],
        ],
        bool: [],
        enum: [],
        module_args_as_configuration: true,
    ]
}
