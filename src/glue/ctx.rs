//! The server's context handle as the layers above pass it around, and
//! what a context tells of itself: the selected database, the server
//! clock, the log. Only glue reads through a context; the layers above
//! hold it and hand it back.

use std::ffi::{CStr, CString};
use std::os::raw::c_int;

use redis_module::raw;

use super::api::api;

/// A module context (`RedisModuleCtx *`) as the server passed it to a
/// command, callback or timer: valid while that runs. Holding or copying
/// it is safe; only glue reads the pointer in it (the layers above hold it
/// and hand it back), and it is neither `Send` nor `Sync`, so it stays on
/// the main thread. `repr(transparent)`: the module API's callbacks take
/// it in the pointer's place.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ctx(*mut raw::RedisModuleCtx);

impl Ctx {
    /// The context of a pointer the server passed.
    pub(in crate::glue) fn from_raw(ctx: *mut raw::RedisModuleCtx) -> Self {
        Ctx(ctx)
    }

    /// The pointer, for the module API.
    #[inline]
    pub(in crate::glue) fn raw(self) -> *mut raw::RedisModuleCtx {
        self.0
    }
}

/// A module string the server passed (an argument, a key name in an
/// event): valid while the callback that got it runs. Read it with
/// [`super::string::bytes_of`].
pub type RawString = *mut raw::RedisModuleString;

/// The database selected in `ctx`.
#[inline]
pub fn selected_db(ctx: Ctx) -> c_int {
    // SAFETY: `ctx` is a live context the server passed to the running
    // callback (the contract of `Ctx`); the call only reads its client's db.
    unsafe { api!(RedisModule_GetSelectedDb)(ctx.raw()) }
}

/// The server clock in unix milliseconds.
#[inline]
pub fn milliseconds() -> i64 {
    // SAFETY: takes no argument; the API table was filled at load.
    unsafe { api!(RedisModule_Milliseconds)() }
}

/// Write `message` to the server log at level `warning`.
pub fn log_warning(ctx: Ctx, message: &CStr) {
    // SAFETY: the strings are NUL-terminated and outlive the call; the
    // format takes exactly the one string given (a `%` in the message is
    // printed, not read as a format); `ctx` is live (or null, which the
    // server accepts: it logs as the module).
    unsafe { raw::RedisModule_Log.map(|log| log(ctx.raw(), c"warning".as_ptr(), c"%s".as_ptr(), message.as_ptr())) };
}

/// [`log_warning`] of a Rust string (a NUL in it ends the message there).
pub fn log_warning_text(ctx: Ctx, message: &str) {
    let text = message.split('\0').next().unwrap_or_default();
    if let Ok(message) = CString::new(text) {
        log_warning(ctx, &message);
    }
}
