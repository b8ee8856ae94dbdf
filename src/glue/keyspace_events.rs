//! Keyspace events (`RedisModule_SubscribeToKeyspaceEvents`), typed: one
//! listener gets every event of the classes it asked for, with the
//! event's name and the key, under `catch_unwind`. Each subscription costs
//! the server a callback per event, so the module has one listener that
//! hands each event on.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::api::api;
use super::ctx::{Ctx, RawString};

/// Classes of keyspace events (`REDISMODULE_NOTIFY_*`), combined with `|`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventClasses(c_int);

impl EventClasses {
    /// List commands.
    pub const LIST: Self = Self(raw::REDISMODULE_NOTIFY_LIST as c_int);
    /// Sorted-set commands.
    pub const ZSET: Self = Self(raw::REDISMODULE_NOTIFY_ZSET as c_int);
    /// Generic commands (`DEL`, `RENAME`, `RESTORE`, `MOVE` ...).
    pub const GENERIC: Self = Self(raw::REDISMODULE_NOTIFY_GENERIC as c_int);
    /// Keys that expired.
    pub const EXPIRED: Self = Self(raw::REDISMODULE_NOTIFY_EXPIRED as c_int);
    /// Keys evicted under `maxmemory`.
    pub const EVICTED: Self = Self(raw::REDISMODULE_NOTIFY_EVICTED as c_int);
}

impl std::ops::BitOr for EventClasses {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// Who gets the events.
pub trait KeyspaceListener {
    /// `event` (`del`, `lpush`, `expired` ...) happened to `key` in the
    /// database selected in `ctx`; both valid while this runs.
    fn on_event(ctx: Ctx, event: &[u8], key: RawString);
}

/// Subscribe `L` to the events of `classes`.
pub fn subscribe<L: KeyspaceListener>(ctx: Ctx, classes: EventClasses) -> Result<(), String> {
    // SAFETY: `ctx` is the load's live context; `on_event::<L>` has the
    // callback's signature and lives as long as the library.
    let done = unsafe { api!(RedisModule_SubscribeToKeyspaceEvents)(ctx.raw(), classes.0, Some(on_event::<L>)) };
    if done != raw::REDISMODULE_OK as c_int {
        return Err("could not subscribe to keyspace events".into());
    }
    Ok(())
}

extern "C" fn on_event<L: KeyspaceListener>(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    event: *const c_char,
    key: RawString,
) -> c_int {
    let ctx = Ctx::from_raw(ctx);
    if event.is_null() || key.is_null() {
        return raw::REDISMODULE_OK as c_int;
    }
    // SAFETY: the server passes the event's name NUL-terminated, valid
    // during the callback.
    let event = unsafe { CStr::from_ptr(event) }.to_bytes();
    let _ = catch_unwind(AssertUnwindSafe(|| L::on_event(ctx, event, key)));
    raw::REDISMODULE_OK as c_int
}
