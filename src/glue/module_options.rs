//! Module options (`RedisModule_SetModuleOptions`): what the module tells
//! the server it handles.

use std::os::raw::c_int;

use redis_module::raw;

use super::api::api;
use super::ctx::Ctx;

/// A set of `REDISMODULE_OPTION*` bits, combined with `|`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleOptions(c_int);

impl ModuleOptions {
    /// Keys signal `WATCH` themselves (no implicit signal on close).
    pub const NO_IMPLICIT_SIGNAL_MODIFIED: Self = Self(raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int);
    /// Async (swapdb) replica loading is handled.
    pub const HANDLE_REPL_ASYNC_LOAD: Self = Self(raw::REDISMODULE_OPTIONS_HANDLE_REPL_ASYNC_LOAD as c_int);

    /// Options given as their bits (a server's own, e.g. Valkey's).
    pub fn from_bits(bits: c_int) -> Self {
        Self(bits)
    }

    /// Tell the server (at load).
    pub fn set(self, ctx: Ctx) {
        // SAFETY: `ctx` is the load's live context; the bits are plain.
        unsafe { api!(RedisModule_SetModuleOptions)(ctx.raw(), self.0) };
    }
}

impl std::ops::BitOr for ModuleOptions {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}
