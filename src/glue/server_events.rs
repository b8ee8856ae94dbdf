//! Server events (`RedisModule_SubscribeToServerEvent`), typed: a
//! subscriber names the events it wants and gets each decoded as a
//! [`ServerEvent`], under `catch_unwind`. The server keeps one callback
//! per event and module: two subscriptions to one event would replace
//! each other, so each event belongs to one subscriber.

use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::ctx::Ctx;

/// The events a subscriber can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subscription {
    /// `FLUSHDB`, `FLUSHALL`.
    FlushDb,
    /// `SWAPDB`.
    SwapDb,
    /// The server became master or replica.
    ReplicationRoleChanged,
    /// A dataset load started or ended.
    Loading,
    /// A replica's async (swapdb) load started, completed or was aborted.
    ReplAsyncLoad,
}

impl Subscription {
    fn id(self) -> u64 {
        match self {
            Self::FlushDb => raw::REDISMODULE_EVENT_FLUSHDB,
            Self::SwapDb => raw::REDISMODULE_EVENT_SWAPDB,
            Self::ReplicationRoleChanged => raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED,
            Self::Loading => raw::REDISMODULE_EVENT_LOADING,
            Self::ReplAsyncLoad => raw::REDISMODULE_EVENT_REPL_ASYNC_LOAD,
        }
    }
}

/// One event, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// A flush ended: database `db` (`None`: every database) is empty.
    Flushed { db: Option<c_int> },
    /// Databases `a` and `b` swapped contents.
    Swapped { a: c_int, b: c_int },
    /// The server became a master.
    BecameMaster,
    /// A dataset load ended.
    LoadingEnded,
    /// A replica's async (swapdb) load completed or was aborted.
    AsyncLoadEnded,
    /// Anything else of a subscribed event (a flush starting, a load
    /// starting, becoming a replica ...).
    Other,
}

/// Who gets the events it subscribed to.
pub trait ServerEventHandler {
    /// `event` happened; `ctx` is valid while this runs.
    fn on_event(ctx: Ctx, event: ServerEvent);
}

/// Does this server have server events?
pub fn available() -> bool {
    // SAFETY: reads the API table's entry, filled once at load.
    unsafe { raw::RedisModule_SubscribeToServerEvent }.is_some()
}

/// Subscribe `H` to `events`.
pub fn subscribe<H: ServerEventHandler>(ctx: Ctx, events: &[Subscription]) -> Result<(), String> {
    for subscription in events {
        let id = subscription.id();
        if !subscribe_raw(ctx, id, on_event::<H>) {
            return Err(format!("could not subscribe to server event {id}"));
        }
    }
    Ok(())
}

/// The C callback of an event.
pub(super) type RawHandler = unsafe extern "C" fn(*mut raw::RedisModuleCtx, raw::RedisModuleEvent, u64, *mut c_void);

/// Subscribe `handler` to the event of id `id` (version 1 of its data).
pub(super) fn subscribe_raw(ctx: Ctx, id: u64, handler: RawHandler) -> bool {
    // SAFETY: reads the API table's entry, filled once at load.
    let Some(subscribe) = (unsafe { raw::RedisModule_SubscribeToServerEvent }) else { return false };
    let event = raw::RedisModuleEvent { id, dataver: 1 };
    // SAFETY: `ctx` is the load's live context; `handler` is a function
    // of the callback's signature, alive as long as the library.
    unsafe { subscribe(ctx.raw(), event, Some(handler)) == raw::REDISMODULE_OK as c_int }
}

unsafe extern "C" fn on_event<H: ServerEventHandler>(
    ctx: *mut raw::RedisModuleCtx,
    event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    let ctx = Ctx::from_raw(ctx);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the server passes, for these events and subevents, data
        // of the types named (redismodule.h), valid during the callback.
        let decoded = unsafe { decode(event.id, subevent, data) };
        H::on_event(ctx, decoded);
    }));
}

/// # Safety
/// `data` is null or the data the server passes with (`id`, `subevent`).
unsafe fn decode(id: u64, subevent: u64, data: *mut c_void) -> ServerEvent {
    match id {
        raw::REDISMODULE_EVENT_FLUSHDB if subevent == raw::REDISMODULE_SUBEVENT_FLUSHDB_END => {
            // SAFETY: a flush event's data is a `RedisModuleFlushInfo` (or null).
            match unsafe { data.cast::<raw::RedisModuleFlushInfo>().as_ref() } {
                Some(info) => ServerEvent::Flushed { db: (info.dbnum >= 0).then_some(info.dbnum) },
                None => ServerEvent::Other,
            }
        }
        raw::REDISMODULE_EVENT_SWAPDB => {
            // SAFETY: a swapdb event's data is a `RedisModuleSwapDbInfo` (or null).
            match unsafe { data.cast::<raw::RedisModuleSwapDbInfo>().as_ref() } {
                Some(info) => ServerEvent::Swapped { a: info.dbnum_first, b: info.dbnum_second },
                None => ServerEvent::Other,
            }
        }
        raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED
            if subevent == raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_MASTER =>
        {
            ServerEvent::BecameMaster
        }
        raw::REDISMODULE_EVENT_LOADING if subevent == raw::REDISMODULE_SUBEVENT_LOADING_ENDED => {
            ServerEvent::LoadingEnded
        }
        raw::REDISMODULE_EVENT_REPL_ASYNC_LOAD if subevent != raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_STARTED => {
            ServerEvent::AsyncLoadEnded
        }
        _ => ServerEvent::Other,
    }
}
