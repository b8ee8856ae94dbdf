//! What the server says of itself: its version as modules see it
//! (`RedisModule_GetServerVersion`) and fields of an `INFO` section
//! (`RedisModule_GetServerInfo`).

use std::ffi::CStr;
use std::os::raw::c_int;

use redis_module::raw;

use super::ctx::Ctx;

/// The server version as `0x00MMmmpp` (Valkey 8+ says 7.2.4); 0 when the
/// server does not tell (before 7.0).
pub fn version() -> c_int {
    // SAFETY: reads the API table's entry, filled once at load; the call
    // takes no argument.
    unsafe { raw::RedisModule_GetServerVersion }.map_or(0, |get| unsafe { get() })
}

/// The values of `names` in `INFO <section>`, each `None` when absent;
/// `None` when the server cannot tell.
pub fn fields<const N: usize>(ctx: Ctx, section: &CStr, names: [&CStr; N]) -> Option<[Option<String>; N]> {
    // SAFETY: reads the API table's entries, filled once at load.
    let (Some(get), Some(field), Some(free)) = (unsafe {
        (raw::RedisModule_GetServerInfo, raw::RedisModule_ServerInfoGetFieldC, raw::RedisModule_FreeServerInfo)
    }) else {
        return None;
    };
    // SAFETY: `ctx` is the running callback's live context; `section` is
    // NUL-terminated.
    let info = unsafe { get(ctx.raw(), section.as_ptr()) };
    if info.is_null() {
        return None;
    }
    let values = names.map(|name| {
        // SAFETY: `info` is live until freed below; `name` is NUL-terminated.
        let value = unsafe { field(info, name.as_ptr()) };
        // SAFETY: a non-null field value is a NUL-terminated string owned
        // by `info`, copied out before it is freed.
        (!value.is_null()).then(|| unsafe { CStr::from_ptr(value) }.to_string_lossy().into_owned())
    });
    // SAFETY: `info` came from `get` with this context and is freed once.
    unsafe { free(ctx.raw(), info) };
    Some(values)
}
