//! The module's two C entry points, `RedisModule_OnLoad` and
//! `RedisModule_OnUnload`, made by [`entry_points!`] (the `module` layer
//! names its load and unload functions). They fill the API table
//! (`Export_RedisModule_Init`), read the load arguments as bytes, and run
//! the module's functions under `catch_unwind`; they make the load's
//! [`super::module_state`] and drop it at unload (or when the load fails).
//! Nothing else is made at load: unlike the `redis_module!` macro of `redis-module`, no detached
//! thread-safe context (the module logs through the context it is given),
//! so nothing is left to free when a load fails or the module unloads.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::argv::{Argv, STATUS_ERR, STATUS_OK};
use super::ctx::Ctx;
use super::string::bytes_of;

/// Define `RedisModule_OnLoad` (running `$load(ctx, args) -> bool`) and
/// `RedisModule_OnUnload` (running `$unload(ctx) -> bool`; false refuses
/// the unload) for the module `$name` (a C string) of version `$version`.
macro_rules! entry_points {
    (name: $name:expr, version: $version:expr, load: $load:path, unload: $unload:path $(,)?) => {
        #[no_mangle]
        #[allow(non_snake_case)]
        pub extern "C" fn RedisModule_OnLoad(
            ctx: $crate::glue::ctx::Ctx,
            argv: $crate::glue::argv::Argv,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            $crate::glue::load::on_load(ctx, argv, argc, $name, $version, $load)
        }

        #[no_mangle]
        #[allow(non_snake_case)]
        pub extern "C" fn RedisModule_OnUnload(ctx: $crate::glue::ctx::Ctx) -> std::os::raw::c_int {
            $crate::glue::load::on_unload(ctx, $unload)
        }
    };
}
pub(crate) use entry_points;

/// The body of `RedisModule_OnLoad`.
pub fn on_load(
    ctx: Ctx,
    argv: Argv,
    argc: c_int,
    name: &CStr,
    version: c_int,
    load: fn(Ctx, &[&[u8]]) -> bool,
) -> c_int {
    // Nothing may allocate before this: the module's allocator is the
    // server's, reached through the table it fills.
    // SAFETY: `ctx` is the load's live context and `name` a NUL-terminated
    // string that outlives the call (the server copies it).
    let status =
        unsafe { raw::Export_RedisModule_Init(ctx.raw(), name.as_ptr(), version, raw::REDISMODULE_APIVER_1 as c_int) };
    if status == STATUS_ERR {
        return STATUS_ERR;
    }
    let count = usize::try_from(argc).unwrap_or(0);
    let strings = if argv.is_null() || count == 0 {
        &[][..]
    } else {
        // SAFETY: the server passes `argc` live strings at `argv`, valid
        // during the load.
        unsafe { std::slice::from_raw_parts(argv, count) }
    };
    let args: Vec<&[u8]> = strings.iter().map(|string| bytes_of(*string)).collect();
    // The load's state (`module_state`): made before anything uses it,
    // dropped again if the load fails (the server then unmaps the library
    // without calling `OnUnload`).
    super::module_state::create();
    match catch_unwind(AssertUnwindSafe(|| load(ctx, &args))) {
        Ok(true) => STATUS_OK,
        _ => {
            super::module_state::drop_state();
            STATUS_ERR
        }
    }
}

/// The body of `RedisModule_OnUnload`.
pub fn on_unload(ctx: Ctx, unload: fn(Ctx) -> bool) -> c_int {
    match catch_unwind(AssertUnwindSafe(|| unload(ctx))) {
        Ok(false) => STATUS_ERR,
        _ => {
            // The reset: every part of the load's state goes with it.
            let _ = catch_unwind(super::module_state::drop_state);
            STATUS_OK
        }
    }
}
