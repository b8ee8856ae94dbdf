//! Redis commands run from inside a command (`RM_Call`), for what the key
//! API cannot do: sets have no key API in Redis 7.0. The raw call, without
//! the `redis-module` crate's argument and reply conversions (on the
//! counted-once record path those cost as much as the command itself).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use redis_module::raw;

use super::api::api;
use super::string::OwnedString;

/// Run `command key member` as the module (no ACL or OOM check: the caller
/// checked), replicating it to replicas and the AOF if it changed anything
/// (`RM_Call` flag `!`); its integer reply, or `None` for any other reply.
pub fn integer_replicated(
    ctx: *mut raw::RedisModuleCtx,
    command: &CStr,
    key: &OwnedString,
    member: &[u8],
) -> Option<i64> {
    let reply = unsafe {
        api!(RedisModule_Call)(
            ctx,
            command.as_ptr(),
            c"!sb".as_ptr(),
            key.as_ptr(),
            member.as_ptr().cast::<c_char>(),
            member.len(),
        )
    };
    if reply.is_null() {
        return None;
    }
    let integer = raw::REDISMODULE_REPLY_INTEGER as c_int;
    let value = (unsafe { api!(RedisModule_CallReplyType)(reply) } == integer)
        .then(|| unsafe { api!(RedisModule_CallReplyInteger)(reply) });
    unsafe { api!(RedisModule_FreeCallReply)(reply) };
    value
}
