//! The module's `INFO` callback (`RedisModule_RegisterInfoFunc`): a
//! provider adds sections and fields through an [`Info`], under
//! `catch_unwind`.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::api::api;
use super::ctx::Ctx;

/// What `INFO` is being filled with.
pub struct Info(*mut raw::RedisModuleInfoCtx);

impl Info {
    /// Start section `<module>_<name>`.
    pub fn section(&self, name: &CStr) {
        // SAFETY: the info context is live during the callback that made
        // this `Info` (it is not kept); `name` is NUL-terminated.
        unsafe { api!(RedisModule_InfoAddSection)(self.0, name.as_ptr()) };
    }

    /// A text field of the current section.
    pub fn text(&self, field: &CStr, value: &CStr) {
        // SAFETY: as above; both strings NUL-terminated and copied.
        unsafe { api!(RedisModule_InfoAddFieldCString)(self.0, field.as_ptr(), value.as_ptr()) };
    }

    /// A number field of the current section.
    pub fn number(&self, field: &CStr, value: u64) {
        // SAFETY: as above.
        unsafe { api!(RedisModule_InfoAddFieldULongLong)(self.0, field.as_ptr(), value) };
    }
}

/// Who fills the module's `INFO`.
pub trait InfoProvider {
    /// `INFO` (or a crash report) asks for the module's sections.
    fn fill(info: &Info);
}

/// Register `P` as the module's `INFO` callback.
pub fn register<P: InfoProvider>(ctx: Ctx) {
    // SAFETY: `ctx` is the load's live context; `fill::<P>` has the
    // callback's signature and lives as long as the library.
    unsafe { api!(RedisModule_RegisterInfoFunc)(ctx.raw(), Some(fill::<P>)) };
}

extern "C" fn fill<P: InfoProvider>(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    let _ = catch_unwind(AssertUnwindSafe(|| P::fill(&Info(ctx))));
}
