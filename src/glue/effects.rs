//! Effects a command leaves outside its keys: the commands replicated to
//! replicas and the AOF, keyspace notifications and pub/sub messages. Commands replicate what
//! they did (never themselves), because they read the clock and make UUIDs;
//! several replicated commands of one call reach replicas as one MULTI/EXEC.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use redis_module::raw;

use super::api::api;
use super::ctx::Ctx;
use super::string::OwnedString;

/// A keyspace event, by class, with the event name Redis's own command for
/// the same change would use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Generic (`del`, `expire`).
    Generic(&'static CStr),
    /// String (`set`).
    String(&'static CStr),
    /// List (`rpush`, `lpop`, `lrem` ...).
    List(&'static CStr),
    /// Hash (`hset`, `hdel`).
    Hash(&'static CStr),
    /// Sorted set (`zadd`, `zrem`).
    ZSet(&'static CStr),
}

impl Event {
    fn class(self) -> c_int {
        match self {
            Self::Generic(_) => raw::REDISMODULE_NOTIFY_GENERIC,
            Self::String(_) => raw::REDISMODULE_NOTIFY_STRING,
            Self::List(_) => raw::REDISMODULE_NOTIFY_LIST,
            Self::Hash(_) => raw::REDISMODULE_NOTIFY_HASH,
            Self::ZSet(_) => raw::REDISMODULE_NOTIFY_ZSET,
        }
    }

    fn name(self) -> &'static CStr {
        match self {
            Self::Generic(name) | Self::String(name) | Self::List(name) | Self::Hash(name) | Self::ZSet(name) => name,
        }
    }
}

/// Replicate `command argv...`, arguments the caller already holds as Redis
/// strings (Redis takes its own references; nothing is copied).
///
/// Up to eight arguments go one by one (`"s"` each), longer ones as a
/// vector (`"v"`): Redis sizes its argv from the format, so a vector costs
/// it a second allocation (a `realloc`) per replicated command. For strings
/// the module created, `s` and `v` take the same reference.
pub fn replicate_strings(ctx: Ctx, command: &CStr, argv: &[*mut raw::RedisModuleString]) {
    let replicate = api!(RedisModule_Replicate);
    let name = command.as_ptr();
    // SAFETY: `ctx` is the running command's live context; each format has one `s` per live string
    // passed (or `v` with a live array and its length).
    unsafe {
        match *argv {
            [a] => replicate(ctx.raw(), name, c"s".as_ptr(), a),
            [a, b] => replicate(ctx.raw(), name, c"ss".as_ptr(), a, b),
            [a, b, c] => replicate(ctx.raw(), name, c"sss".as_ptr(), a, b, c),
            [a, b, c, d] => replicate(ctx.raw(), name, c"ssss".as_ptr(), a, b, c, d),
            [a, b, c, d, e] => replicate(ctx.raw(), name, c"sssss".as_ptr(), a, b, c, d, e),
            [a, b, c, d, e, f] => replicate(ctx.raw(), name, c"ssssss".as_ptr(), a, b, c, d, e, f),
            [a, b, c, d, e, f, g] => replicate(ctx.raw(), name, c"sssssss".as_ptr(), a, b, c, d, e, f, g),
            [a, b, c, d, e, f, g, h] => replicate(ctx.raw(), name, c"ssssssss".as_ptr(), a, b, c, d, e, f, g, h),
            _ => replicate(ctx.raw(), name, c"v".as_ptr(), argv.as_ptr(), argv.len()),
        };
    }
}

/// Fire a keyspace notification for `key`.
pub fn notify(ctx: Ctx, event: Event, key: *mut raw::RedisModuleString) {
    let notify = api!(RedisModule_NotifyKeyspaceEvent);
    // Our own subscriber is called from inside this call; it tells the
    // module's writes (whose side tables the writer keeps itself) from
    // everyone else's by this flag (`keyspace_events`).
    OWN_WRITE.store(true, Ordering::Relaxed);
    // SAFETY: `ctx` is live, the event name NUL-terminated and `key` a live string.
    unsafe { notify(ctx.raw(), event.class(), event.name().as_ptr(), key) };
    OWN_WRITE.store(false, Ordering::Relaxed);
}

/// Set while the module fires a notification of its own write (main
/// thread only: an atomic for a `static`, plain loads and stores).
static OWN_WRITE: AtomicBool = AtomicBool::new(false);

/// Is the keyspace event being delivered one the module fired for its own
/// write?
pub fn own_write() -> bool {
    OWN_WRITE.load(Ordering::Relaxed)
}

/// Publish `message` on `channel`; the number of clients that received it.
/// Outside a cluster the `PUBLISH` is also sent to replicas (not the AOF),
/// as Redis's own `PUBLISH` does, so their subscribers hear it too; in a
/// cluster the server spreads it over the cluster bus itself.
pub fn publish(ctx: Ctx, channel: &[u8], message: &[u8], in_cluster: bool) -> i64 {
    let channel_string = OwnedString::new(channel);
    let message_string = OwnedString::new(message);
    // SAFETY: `ctx` is live and both strings are live for the call.
    let receivers =
        unsafe { api!(RedisModule_PublishMessage)(ctx.raw(), channel_string.as_ptr(), message_string.as_ptr()) };
    if !in_cluster {
        let argv = [channel_string.as_ptr(), message_string.as_ptr()];
        // "A": keep it out of the AOF (a replayed message reaches no one).
        // SAFETY: `ctx` is live; `vA` takes a live array of strings and its length.
        unsafe {
            api!(RedisModule_Replicate)(ctx.raw(), c"PUBLISH".as_ptr(), c"vA".as_ptr(), argv.as_ptr(), argv.len())
        };
    }
    i64::from(receivers)
}
