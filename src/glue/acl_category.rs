//! The module's own ACL category, `@dreamtown`: `ACL SETUSER u +@dreamtown`
//! grants every DREAMS.* and TOWN.* command at once (and `-@dreamtown`
//! takes them all away), on servers that let a module add a category.
//!
//! `RedisModule_AddACLCategory` exists on Redis 7.4 and newer and on Valkey
//! 8; Redis 7.0 and 7.2 lack it. It is looked up at run time and never
//! required: without it the module loads as before and ACL rules name the
//! commands (`+dreams.fire ...`) or, from 7.2, use `@write`/`@read`.
//! The server only accepts it while the module is loading (OnLoad), and the
//! category must exist before a command's categories may name it, so
//! [`add`] runs before the commands are registered.

use std::os::raw::c_int;

use redis_module::raw;

use super::ctx::Ctx;

/// The category's name (without the `@`).
pub const NAME: &str = "dreamtown";

/// Add `@dreamtown` if this server can. `Ok(true)`: the category exists and
/// the commands' categories should include it; `Ok(false)`: this server
/// has no module categories.
pub fn add(ctx: Ctx) -> Result<bool, String> {
    // SAFETY: reads the API table's entry, filled once at load.
    let Some(add_category) = (unsafe { raw::RedisModule_AddACLCategory }) else {
        return Ok(false);
    };
    let name = c"dreamtown";
    // SAFETY: `ctx` is the load's live context and `name` NUL-terminated.
    if unsafe { add_category(ctx.raw(), name.as_ptr()) } == raw::REDISMODULE_OK as c_int {
        return Ok(true);
    }
    // EBUSY: a category of that name exists. The server keeps a module's
    // categories when the module is unloaded, so this is us being loaded
    // again (MODULE UNLOAD, then MODULE LOAD): the category is ours to use.
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EBUSY) {
        return Ok(true);
    }
    Err(format!("could not add the ACL category @{NAME}: {error}"))
}
