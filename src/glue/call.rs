//! Redis commands run from inside a command (`RM_Call`), for what the key
//! API cannot do: sets have no key API in Redis 7.0. The raw call, without
//! the `redis-module` crate's argument and reply conversions (on the
//! counted-once record path those cost as much as the command itself).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use redis_module::raw;

use super::api::api;
use super::string::OwnedString;

/// The called command replied with an error (for `SADD`/`SREM`: the key
/// holds another type; nothing was written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused;

/// The member of an [`integer_replicated`] call.
#[derive(Clone, Copy, Debug)]
pub enum Member<'a> {
    /// Bytes, made into a new string for the call.
    Bytes(&'a [u8]),
    /// A string Redis holds for the whole command (one of its arguments):
    /// passed on with a reference of the call's own, not copied (about
    /// 200 instructions less).
    String(*mut raw::RedisModuleString),
}

/// Run `command key member` as the module (no ACL or OOM check: the caller
/// checked), replicating it to replicas and the AOF if it changed anything
/// (`RM_Call` flag `!`); its integer reply, `None` for a call that did not
/// run or replied something else, `Err` for an error reply.
pub fn integer_replicated(
    ctx: *mut raw::RedisModuleCtx,
    command: &CStr,
    key: &OwnedString,
    member: Member<'_>,
) -> Result<Option<i64>, Refused> {
    let call = api!(RedisModule_Call);
    let reply = unsafe {
        match member {
            Member::Bytes(bytes) => {
                call(ctx, command.as_ptr(), c"!sb".as_ptr(), key.as_ptr(), bytes.as_ptr().cast::<c_char>(), bytes.len())
            }
            Member::String(string) => call(ctx, command.as_ptr(), c"!ss".as_ptr(), key.as_ptr(), string),
        }
    };
    if reply.is_null() {
        return Ok(None);
    }
    let kind = unsafe { api!(RedisModule_CallReplyType)(reply) };
    let value = match kind {
        k if k == raw::REDISMODULE_REPLY_INTEGER as c_int => {
            Ok(Some(unsafe { api!(RedisModule_CallReplyInteger)(reply) }))
        }
        k if k == raw::REDISMODULE_REPLY_ERROR as c_int => Err(Refused),
        _ => Ok(None),
    };
    unsafe { api!(RedisModule_FreeCallReply)(reply) };
    value
}

/// `ZCOUNT key min max` as the module (read-only, not replicated): the
/// number of members scored in `[min, max]`, O(log n) — the key API can
/// only count by walking the range. `None` when the call did not answer an
/// integer (the caller checked the key's type first).
pub fn zcount(ctx: *mut raw::RedisModuleCtx, key: &OwnedString, min: &CStr, max: &CStr) -> Option<i64> {
    let reply = unsafe {
        api!(RedisModule_Call)(ctx, c"ZCOUNT".as_ptr(), c"scc".as_ptr(), key.as_ptr(), min.as_ptr(), max.as_ptr())
    };
    if reply.is_null() {
        return None;
    }
    let kind = unsafe { api!(RedisModule_CallReplyType)(reply) };
    let value =
        (kind == raw::REDISMODULE_REPLY_INTEGER as c_int).then(|| unsafe { api!(RedisModule_CallReplyInteger)(reply) });
    unsafe { api!(RedisModule_FreeCallReply)(reply) };
    value
}
