//! The way into the module: the C entry point every client command (and
//! subcommand) runs through. Under `catch_unwind` (a bug becomes an error
//! reply instead of a panic unwinding into redis-server and aborting it),
//! it reads the arguments without copying them, asks the migration guard
//! (`services::migration_guard`: in a cluster, nothing runs while the
//! tenant's slot moves), notes the database for the per-tenant tables
//! (`services::server_events`), opens the session and sends the handler's
//! reply.

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::glue::argv::{skip_subcommand, with_arguments, Argv, STATUS_ERR, STATUS_OK};
use crate::glue::command::{Handler, BUG};
use crate::glue::ctx::{selected_db, Ctx};
use crate::glue::reply::{self, CommandResult};
use crate::glue::session::Session;
use crate::services::{migration_guard, server_events};

/// Wrap a [`Handler`] as a command's [`Entry`](crate::glue::command::Entry):
/// its C entry point, and the handler for dry runs.
macro_rules! entry_point {
    ($handler:path) => {{
        extern "C" fn __dreamtown_entry(
            ctx: $crate::glue::ctx::Ctx,
            argv: $crate::glue::argv::Argv,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            $crate::entry::dispatch(ctx, argv, argc, $handler)
        }
        $crate::glue::command::Entry {
            raw: __dreamtown_entry as $crate::glue::command::RawCommand,
            handler: Some($handler),
        }
    }};
}
pub(crate) use entry_point;

/// Wrap `$run(session, $word, args)` as the C entry point of subcommand
/// `$word` (upper case, as the spec names it): the arguments it gets start
/// after the subcommand's name, at the tenant.
macro_rules! subcommand_entry_point {
    ($run:path, $word:literal) => {{
        extern "C" fn __dreamtown_subcommand_entry(
            ctx: $crate::glue::ctx::Ctx,
            argv: $crate::glue::argv::Argv,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            $crate::entry::dispatch_subcommand(ctx, argv, argc, |session, args| $run(session, $word, args))
        }
        $crate::glue::command::Entry {
            raw: __dreamtown_subcommand_entry as $crate::glue::command::RawCommand,
            handler: Some(|session, args| $run(session, $word, args)),
        }
    }};
}
pub(crate) use subcommand_entry_point;

/// Wrap a handler of a command with no tenant (`DREAMTOWN.DRYRUN`) as its
/// [`Entry`](crate::glue::command::Entry): no migration guard, and no dry
/// run of it.
macro_rules! plain_entry_point {
    ($handler:path) => {{
        extern "C" fn __dreamtown_plain_entry(
            ctx: $crate::glue::ctx::Ctx,
            argv: $crate::glue::argv::Argv,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            $crate::entry::dispatch_plain(ctx, argv, argc, $handler)
        }
        $crate::glue::command::Entry {
            raw: __dreamtown_plain_entry as $crate::glue::command::RawCommand,
            handler: None,
        }
    }};
}
pub(crate) use plain_entry_point;

/// Run `handler` for one call and send its reply.
pub fn dispatch(ctx: Ctx, argv: Argv, argc: c_int, handler: Handler) -> c_int {
    guarded::<1>(ctx, argv, argc, |session, args| Some(handler(session, args)))
}

/// Run `handler`, a command with no tenant, for one call and send its
/// reply: under `catch_unwind`, without the migration guard.
pub fn dispatch_plain(ctx: Ctx, argv: Argv, argc: c_int, handler: Handler) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        with_arguments::<1, _>(argv, argc, |args| {
            let flags = Session::context_flags(ctx);
            let call_len = usize::try_from(argc).unwrap_or(0);
            let session = Session::for_command(ctx, flags, argv, call_len, argv, call_len);
            reply::send(ctx, &handler(&session, args));
        })
    }));
    if outcome.is_err() {
        reply::send_error(ctx, BUG);
    }
    STATUS_OK
}

/// Run the subcommand `run` for one call (its arguments start at the
/// tenant, after the subcommand's name) and send its reply.
pub fn dispatch_subcommand(
    ctx: Ctx,
    argv: Argv,
    argc: c_int,
    run: impl FnOnce(&Session, &[&[u8]]) -> CommandResult,
) -> c_int {
    guarded::<2>(ctx, argv, argc, |session, args| Some(run(session, args)))
}

/// Run `run` under `catch_unwind` with the arguments after the first
/// `SKIP` (the name; a subcommand's name too), the tenant first, and send
/// what it answers. In a cluster, a call whose tenant's slot this node may
/// not touch now answers `-TRYAGAIN` without running (`migration_guard`).
fn guarded<const SKIP: usize>(
    ctx: Ctx,
    argv: Argv,
    argc: c_int,
    run: impl FnOnce(&Session, &[&[u8]]) -> Option<CommandResult>,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        with_arguments::<SKIP, _>(argv, argc, |args| {
            // In a cluster, refuse before anything is opened while the
            // tenant's slot is moving (see migration_guard).
            // The context flags, read once for the guard and the session
            // (about 130 instructions a read).
            let flags = Session::context_flags(ctx);
            let tenant = args.first().copied().unwrap_or_default();
            if let Err(error) = migration_guard::check(ctx, flags, tenant) {
                reply::send(ctx, &Err(error));
                return true;
            }
            // The session's arguments, as the handler's, start after the
            // subcommand's name: its argv begins one before them.
            let (call, call_len) = (argv, usize::try_from(argc).unwrap_or(0));
            let (argv, argc) = skip_subcommand::<SKIP>(argv, argc);
            // Which databases the per-tenant tables may describe (`FLUSHDB`).
            server_events::note_db(selected_db(ctx));
            let session = Session::for_command(ctx, flags, argv, argc, call, call_len);
            let result = run(&session, args);
            if let Some(result) = &result {
                reply::send(ctx, result);
            }
            result.is_some()
        })
    }));
    match outcome {
        Ok(true) => STATUS_OK,
        Ok(false) => STATUS_ERR,
        Err(_) => {
            reply::send_error(ctx, BUG);
            STATUS_OK
        }
    }
}
