//! Whether this server can unload the module without crashing, asked by
//! `MODULE UNLOAD` before anything is freed.
//!
//! Valkey 8.1 crashes (SIGSEGV in `hashtableNext` under
//! `moduleFreeCommand` <- `moduleUnregisterCommands`) when it unloads a
//! module that registered subcommands: it frees each subcommand while a
//! safe iterator still walks the container's subcommand table, and the
//! iterator then reads the freed entries. dreamtown registers subcommands
//! (`TOWN.AGENT GET` ...), so on Valkey 8.1 its `OnUnload` refuses, which
//! makes the server cancel the unload with everything in place ("module
//! OnUnload failed. Unload canceled."): a module must never be the reason
//! the server dies. Redis 7.0-8.2, Valkey 8.0 and 9.1 unload it cleanly
//! (`tests/server_events.rs`, `tests/acl.rs`); to remove it from a Valkey
//! 8.1 server, restart the server without it.

use super::ctx::Ctx;

/// Why this server must keep the module loaded, if it must.
pub fn refusal(ctx: Ctx) -> Option<&'static str> {
    let version = valkey_version(ctx)?;
    let mut parts = version.split('.');
    let (major, minor) = (parts.next()?, parts.next()?);
    (major == "8" && minor == "1").then_some(
        "dreamtown: MODULE UNLOAD refused on Valkey 8.1, which crashes freeing a module's subcommands; restart the server without the module to remove it",
    )
}

/// `valkey_version` of `INFO server`, on Valkey (Redis has no such field).
fn valkey_version(ctx: Ctx) -> Option<String> {
    let [version] = super::server_info::fields(ctx, c"server", [c"valkey_version"])?;
    version
}
