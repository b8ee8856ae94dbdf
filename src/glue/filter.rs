//! The command filter (`RedisModule_RegisterCommandFilter`): a filter
//! sees every command before it runs (not the module's own calls), reads
//! and rewrites its arguments, and asks about its client. Registered with
//! [`register`], called under `catch_unwind`.

use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::api::api;

use super::ctx::Ctx;

/// Who filters commands.
pub trait CommandFilter {
    /// `command` is about to run.
    fn on_command(command: &Filtered);
}

/// Register `F` as the module's filter, if the server has every API a
/// filter uses; false (nothing registered) otherwise.
pub fn register<F: CommandFilter>(ctx: Ctx) -> bool {
    // SAFETY: reads the API table's entries, filled once at load.
    let apis = unsafe {
        (
            raw::RedisModule_RegisterCommandFilter,
            raw::RedisModule_CommandFilterArgsCount,
            raw::RedisModule_CommandFilterArgGet,
            raw::RedisModule_CommandFilterArgReplace,
            raw::RedisModule_CommandFilterArgDelete,
            raw::RedisModule_GetClientInfoById,
        )
    };
    let (Some(register), Some(_), Some(_), Some(_), Some(_), Some(_)) = apis else {
        return false;
    };
    // NOSELF: the module's own `RM_Call`s (`ACL GETUSER`, ...) are not filtered.
    // SAFETY: `ctx` is the load's live context; `on_command::<F>` has the
    // callback's signature and lives as long as the library.
    let filter = unsafe { register(ctx.raw(), Some(on_command::<F>), raw::REDISMODULE_CMDFILTER_NOSELF as c_int) };
    !filter.is_null()
}

extern "C" fn on_command<F: CommandFilter>(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    let _ = catch_unwind(AssertUnwindSafe(|| F::on_command(&Filtered(fctx))));
}

/// One filtered command.
pub struct Filtered(*mut raw::RedisModuleCommandFilterCtx);

impl Filtered {
    /// How many arguments (the name included).
    pub fn argc(&self) -> usize {
        // SAFETY: the filter context is live during the filter callback that made this `Filtered`
        // (it is not kept).
        usize::try_from(unsafe { api!(RedisModule_CommandFilterArgsCount)(self.0) }).unwrap_or(0)
    }

    /// Argument `pos` (0: the name; empty if absent).
    pub fn arg(&self, pos: usize) -> &[u8] {
        let Ok(pos) = c_int::try_from(pos) else { return &[] };
        // SAFETY: as above; the server checks `pos`.
        let string = unsafe { api!(RedisModule_CommandFilterArgGet)(self.0, pos) };
        if string.is_null() {
            return &[];
        }
        let mut len = 0usize;
        // SAFETY: `string` is a live argument of the filtered command.
        let ptr = unsafe { api!(RedisModule_StringPtrLen)(string, &mut len) };
        if ptr.is_null() {
            return &[];
        }
        // SAFETY: the argument outlives this callback's use of it.
        unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }
    }

    /// Replace argument `pos` with `bytes`.
    pub fn replace(&self, pos: usize, bytes: &[u8]) {
        let Ok(pos) = c_int::try_from(pos) else { return };
        // A string of its own, not auto-memory: the server keeps it.
        let string =
            // SAFETY: a pointer and length valid for the call.
            unsafe { api!(RedisModule_CreateString)(std::ptr::null_mut(), bytes.as_ptr().cast(), bytes.len()) };
        // SAFETY: the filter context is live; the server takes `string` over.
        unsafe { api!(RedisModule_CommandFilterArgReplace)(self.0, pos, string) };
    }

    /// Delete argument `pos`.
    pub fn delete(&self, pos: usize) {
        let Ok(pos) = c_int::try_from(pos) else { return };
        // SAFETY: the filter context is live; the server checks `pos`.
        unsafe { api!(RedisModule_CommandFilterArgDelete)(self.0, pos) };
    }

    /// The command's client, where the server tells (Redis 7.2+, Valkey 8+).
    pub fn client_id(&self) -> Option<u64> {
        // SAFETY: reads the API table's entry, filled once at load.
        let get = unsafe { raw::RedisModule_CommandFilterGetClientId }?;
        // SAFETY: the filter context is live.
        let id = unsafe { get(self.0) };
        (id != 0).then_some(id)
    }
}

/// The flags of client `id` (`REDISMODULE_CLIENTINFO_FLAG_*`), `None` when
/// there is no such client.
pub fn client_flags(id: u64) -> Option<u64> {
    // SAFETY: reads the API table's entry, filled once at load.
    let get = unsafe { raw::RedisModule_GetClientInfoById }?;
    let mut info = raw::RedisModuleClientInfo { version: 1, flags: 0, id: 0, addr: [0; 46], port: 0, db: 0 };
    // SAFETY: `info` is a version 1 `RedisModuleClientInfo`, writable for the call.
    let status = unsafe { get((&raw mut info).cast::<c_void>(), id) };
    (status == raw::REDISMODULE_OK as c_int).then_some(info.flags)
}

/// Is client `id` blocked (in a blocking command)?
pub fn is_blocked(id: u64) -> bool {
    client_flags(id).is_some_and(|flags| flags & u64::from(raw::REDISMODULE_CLIENTINFO_FLAG_BLOCKED) != 0)
}

/// Is client `id` in `MULTI` (queueing)?
pub fn in_multi(id: u64) -> bool {
    client_flags(id).is_some_and(|flags| flags & u64::from(raw::REDISMODULE_CLIENTINFO_FLAG_MULTI) != 0)
}
