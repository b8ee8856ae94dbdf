//! The module's one keyspace-event subscription, shared by the mechanisms
//! that listen: waiters (work arriving in a watched list or sorted set),
//! leases (a lease set arriving by `RESTORE`, or gone: its last lease
//! removed, or the key deleted, expired or evicted), limits (a limits key
//! arriving by `RESTORE`, `RENAME`, `COPY` or `MOVE`) and fire ages (a
//! Dreams list deleted, expired or evicted by someone else: its timings go
//! with it); a key of a slot this node is importing by atomic slot
//! migration goes to `slot_migration` only. The module's own writes are
//! told apart (`effects::own_write`) where whoever wrote them already kept
//! the side tables (fire ages).
//!
//! Why one: Redis gives every subscriber an event reaches a context of its
//! own, a temporary client set up and torn down around the callback
//! (module.c `moduleNotifyKeyspaceEvent`), several hundred instructions
//! each. A generic event (`del`, `restore`, `rename_to` ...) reached two
//! subscribers, and an acknowledgement that empties the in-flight list
//! fires one; one subscriber that hands each event to both pays that once.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::{lease_timer, limits_index, slot_migration, waiters};
use crate::glue::api::api;
use crate::metrics::fire_ages;

/// Subscribe to the event classes any listener needs (module load).
pub fn subscribe(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    // Expired and evicted keys (their own classes): a Dreams list or a
    // lease set gone by a TTL or eviction takes its side-table entries
    // along. Each costs the server one callback (a prefix check here).
    let types = raw::REDISMODULE_NOTIFY_LIST
        | raw::REDISMODULE_NOTIFY_ZSET
        | raw::REDISMODULE_NOTIFY_GENERIC
        | raw::REDISMODULE_NOTIFY_EXPIRED
        | raw::REDISMODULE_NOTIFY_EVICTED;
    let done = unsafe { api!(RedisModule_SubscribeToKeyspaceEvents)(ctx, types as c_int, Some(on_keyspace_event)) };
    if done != raw::REDISMODULE_OK as c_int {
        return Err("could not subscribe to keyspace events".into());
    }
    Ok(())
}

/// Every listener sees the event, in this order (waiters first, as when
/// they subscribed on their own), each under its own `catch_unwind`.
unsafe extern "C" fn on_keyspace_event(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    if event.is_null() || key.is_null() {
        return raw::REDISMODULE_OK as c_int;
    }
    let event = unsafe { CStr::from_ptr(event) }.to_bytes();
    // A key of a slot this node is importing (atomic slot migration)
    // reaches no listener: it only teaches the lease index. Nothing is
    // importing unless some slot is moving: then the key's name is not
    // even read (a `RedisModule_StringPtrLen` call per event).
    let importing = catch_unwind(AssertUnwindSafe(|| {
        super::slot_moves::any_moving() && slot_migration::on_keyspace_event(ctx, crate::glue::string::bytes_of(key))
    }));
    if importing.unwrap_or(true) {
        return raw::REDISMODULE_OK as c_int;
    }
    let own_write = crate::glue::effects::own_write();
    let _ = catch_unwind(AssertUnwindSafe(|| waiters::on_keyspace_event(ctx, event, key)));
    let _ = catch_unwind(AssertUnwindSafe(|| lease_timer::on_keyspace_event(ctx, event, key)));
    if limits_index::wants(event) {
        let _ = catch_unwind(AssertUnwindSafe(|| limits_index::on_keyspace_event(ctx, key)));
    }
    if !own_write {
        let _ = catch_unwind(AssertUnwindSafe(|| fire_ages::on_keyspace_event(ctx, event, key)));
    }
    raw::REDISMODULE_OK as c_int
}
