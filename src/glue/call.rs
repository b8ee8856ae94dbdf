//! Redis commands run from inside a command (`RM_Call`), for what the key
//! API cannot do: sets have no key API in Redis 7.0. The raw call, without
//! the `redis-module` crate's argument and reply conversions (on the
//! counted-once record path those cost as much as the command itself).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use redis_module::raw;

use super::api::api;
use super::ctx::Ctx;
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
    ctx: Ctx,
    command: &CStr,
    key: &OwnedString,
    member: Member<'_>,
) -> Result<Option<i64>, Refused> {
    let call = api!(RedisModule_Call);
    // SAFETY: `ctx` is the running command's live context; each format letter matches one argument
    // (`s`: a live string, `b`: a pointer and length valid for the call).
    let reply = unsafe {
        match member {
            Member::Bytes(bytes) => call(
                ctx.raw(),
                command.as_ptr(),
                c"!sb".as_ptr(),
                key.as_ptr(),
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
            ),
            Member::String(string) => call(ctx.raw(), command.as_ptr(), c"!ss".as_ptr(), key.as_ptr(), string),
        }
    };
    if reply.is_null() {
        return Ok(None);
    }
    // SAFETY: `reply` is the call's live reply (not null here), freed once below.
    let kind = unsafe { api!(RedisModule_CallReplyType)(reply) };
    let value = match kind {
        k if k == raw::REDISMODULE_REPLY_INTEGER as c_int => {
            // SAFETY: as above.
            Ok(Some(unsafe { api!(RedisModule_CallReplyInteger)(reply) }))
        }
        k if k == raw::REDISMODULE_REPLY_ERROR as c_int => Err(Refused),
        _ => Ok(None),
    };
    // SAFETY: the reply is freed once and not used after.
    unsafe { api!(RedisModule_FreeCallReply)(reply) };
    value
}

/// `ZCOUNT key min max` as the module (read-only, not replicated): the
/// number of members scored in `[min, max]`, O(log n) — the key API can
/// only count by walking the range. `None` when the call did not answer an
/// integer (the caller checked the key's type first).
pub fn zcount(ctx: Ctx, key: &OwnedString, min: &CStr, max: &CStr) -> Option<i64> {
    // SAFETY: `ctx` is live; the format `scc` matches a live string and two NUL-terminated strings.
    let reply = unsafe {
        api!(RedisModule_Call)(ctx.raw(), c"ZCOUNT".as_ptr(), c"scc".as_ptr(), key.as_ptr(), min.as_ptr(), max.as_ptr())
    };
    if reply.is_null() {
        return None;
    }
    // SAFETY: `reply` is the call's live reply (not null here), freed once below.
    let kind = unsafe { api!(RedisModule_CallReplyType)(reply) };
    // SAFETY: as above.
    let value =
        (kind == raw::REDISMODULE_REPLY_INTEGER as c_int).then(|| unsafe { api!(RedisModule_CallReplyInteger)(reply) });
    // SAFETY: the reply is freed once and not used after.
    unsafe { api!(RedisModule_FreeCallReply)(reply) };
    value
}

/// `EXISTS first second` in `ctx`, for its routing check only (the reply
/// is not read): `None` when the call gave no reply (a refusal by
/// cluster routing on 7.0, or a passed dry run), else whether it answered
/// an error. `dry_run`: with the `D` flag (Redis 7.2+), no command runs.
pub fn exists_is_refused(ctx: Ctx, first: &[u8], second: &[u8], dry_run: bool) -> Option<bool> {
    let format = if dry_run { c"bbD" } else { c"bb" };
    // SAFETY: `ctx` is the running callback's live context; the format
    // names two binary-safe strings, each given as a pointer and a length
    // that stay valid for the call.
    let reply = unsafe {
        api!(RedisModule_Call)(
            ctx.raw(),
            c"EXISTS".as_ptr(),
            format.as_ptr(),
            first.as_ptr().cast::<std::os::raw::c_char>(),
            first.len(),
            second.as_ptr().cast::<std::os::raw::c_char>(),
            second.len(),
        )
    };
    if reply.is_null() {
        return None;
    }
    // SAFETY: `reply` is the call's live reply, freed once right after.
    let is_error = unsafe { api!(RedisModule_CallReplyType)(reply) } == raw::REDISMODULE_REPLY_ERROR as c_int;
    // SAFETY: as above; not used after.
    unsafe { api!(RedisModule_FreeCallReply)(reply) };
    Some(is_error)
}
