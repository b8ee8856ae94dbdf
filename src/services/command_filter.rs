//! The module's one command filter, registered at load: it sees every
//! command before it runs (clients, the replication link, scripts, other
//! modules' `RM_Call`s; a command queued in `MULTI` when it is queued)
//! and tells the two mechanisms that must know:
//!
//! * `acl_watch`: an `ACL` command or an `EXEC` may change the ACL rules
//!   the module evaluates (`glue::acl`), and `ACL DRYRUN` of a module
//!   command is answered by the module (`DREAMTOWN.DRYRUN`);
//! * `slot_memo` (cluster mode only): `CLUSTER`, `REPLICAOF`, `EXEC` and
//!   `DISCARD` may change slot states.
//!
//! It runs for every command, so it rejects by length and first letter
//! before comparing names: `ACL`, `EXEC`, `CLUSTER`, `DISCARD`, `SLAVEOF`,
//! `REPLICAOF`.

use std::os::raw::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::{acl_watch, slot_memo};
use crate::glue::api::api;

/// Register the filter (module load). Without the filter API the module
/// still works: `ACL DRYRUN` then answers for module commands as Redis
/// does (the command alone), ACL changes are seen only through the
/// per-user re-read on every call (see `acl_watch::register`), and in a
/// cluster every command gets the migration guard's full check.
pub fn register(ctx: *mut raw::RedisModuleCtx) -> bool {
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
    let filter = unsafe { register(ctx, Some(on_command), raw::REDISMODULE_CMDFILTER_NOSELF as c_int) };
    !filter.is_null()
}

/// One filtered command.
pub struct Filtered(*mut raw::RedisModuleCommandFilterCtx);

impl Filtered {
    /// How many arguments (the name included).
    pub fn argc(&self) -> usize {
        usize::try_from(unsafe { api!(RedisModule_CommandFilterArgsCount)(self.0) }).unwrap_or(0)
    }

    /// Argument `pos` (0: the name; empty if absent).
    pub fn arg(&self, pos: usize) -> &[u8] {
        let Ok(pos) = c_int::try_from(pos) else { return &[] };
        let string = unsafe { api!(RedisModule_CommandFilterArgGet)(self.0, pos) };
        if string.is_null() {
            return &[];
        }
        let mut len = 0usize;
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
            unsafe { api!(RedisModule_CreateString)(std::ptr::null_mut(), bytes.as_ptr().cast(), bytes.len()) };
        unsafe { api!(RedisModule_CommandFilterArgReplace)(self.0, pos, string) };
    }

    /// Delete argument `pos`.
    pub fn delete(&self, pos: usize) {
        let Ok(pos) = c_int::try_from(pos) else { return };
        unsafe { api!(RedisModule_CommandFilterArgDelete)(self.0, pos) };
    }

    /// The command's client, where the server tells (Redis 7.2+, Valkey 8+).
    pub fn client_id(&self) -> Option<u64> {
        let get = unsafe { raw::RedisModule_CommandFilterGetClientId }?;
        let id = unsafe { get(self.0) };
        (id != 0).then_some(id)
    }
}

/// The flags of client `id` (`REDISMODULE_CLIENTINFO_FLAG_*`), `None` when
/// there is no such client.
pub fn client_flags(id: u64) -> Option<u64> {
    let get = unsafe { raw::RedisModule_GetClientInfoById }?;
    let mut info = raw::RedisModuleClientInfo { version: 1, flags: 0, id: 0, addr: [0; 46], port: 0, db: 0 };
    let status = unsafe { get((&raw mut info).cast::<c_void>(), id) };
    (status == raw::REDISMODULE_OK as c_int).then_some(info.flags)
}

/// Is client `id` in `MULTI` (queueing)?
pub fn in_multi(id: u64) -> bool {
    client_flags(id).is_some_and(|flags| flags & u64::from(raw::REDISMODULE_CLIENTINFO_FLAG_MULTI) != 0)
}

unsafe extern "C" fn on_command(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let command = Filtered(fctx);
        let name = command.arg(0);
        if !matches!(name.len(), 3 | 4 | 7 | 9)
            || !matches!(
                name.first(),
                Some(b'a' | b'A' | b'c' | b'C' | b'e' | b'E' | b'd' | b'D' | b's' | b'S' | b'r' | b'R')
            )
        {
            return;
        }
        if name.eq_ignore_ascii_case(b"ACL") {
            acl_watch::on_acl(&command);
            return;
        }
        if name.eq_ignore_ascii_case(b"EXEC") {
            acl_watch::on_exec(command.client_id());
        } else if name.eq_ignore_ascii_case(b"DISCARD") {
            acl_watch::on_discard(command.client_id());
        }
        if slot_memo::is_active() {
            slot_memo::on_command(&command, name);
        }
    }));
}
