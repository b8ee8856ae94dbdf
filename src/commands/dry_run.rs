//! `DREAMTOWN.DRYRUN <username> <command> [<arg> ...]`: what `ACL DRYRUN`
//! answers for a module command. The module's command filter turns
//! `ACL DRYRUN <username> <command> ...` of a dreamtown command into this
//! (`services::acl_watch`); it can also be called by that name.
//!
//! Redis alone would check only that some selector of the user allows the
//! command (its tenant is a `NOT_KEY` key spec) and answer `OK` where the
//! real call is refused. This answers as `ACL DRYRUN` does, with the
//! verdict the real call would reach: it runs the command as `username`
//! in a dry run (`glue::session`), which makes every ACL check of the real
//! call, keys and channels derived from the arguments and (for commands
//! that find their keys in an index: `TOWN.RESET`, `TOWN.AGENT LIST`) from
//! the data as it is now, and stops before opening the first key: it
//! writes nothing and logs nothing in `ACL LOG`.
//!
//! Replies, as `ACL DRYRUN`: `OK`; a bulk string `This user has no
//! permissions to run the '<command>' command` or `... to access the
//! '<name>' key` (or `channel`); errors for an unknown user or command
//! and a wrong number of arguments. The caller needs the permission to run
//! `ACL DRYRUN` itself (checked here, logged as Redis logs it), and to run
//! `DREAMTOWN.DRYRUN`, which is in `@admin`, `@slow` and `@dangerous` as
//! `ACL DRYRUN` is.

use crate::entry::plain_entry_point;
use crate::glue::acl;
use crate::glue::command::{self, Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use dreamtown_protocol::reply::dryrun as reply;
use dreamtown_protocol::request::dryrun::DryRun;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::DRYRUN,
    entry: plain_entry_point!(run),
    flags: "admin deny-script allow-loading allow-stale",
    tenant: TenantUse::None,
    arity: -3,
    summary:
        "What ACL DRYRUN answers for a dreamtown command: the verdict of the real call, keys and channels included",
    complexity: "O(N) where N is the number of keys and channels the command checks",
    args: &[
        Arg::new("username", ArgKind::String),
        Arg::new("command", ArgKind::String),
        Arg::new("arg", ArgKind::String).optional().multiple(),
    ],
};

/// The parse step ([`DryRun`]): the user and the call (its command name first).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(&'a [u8], &'a [&'a [u8]]), CommandError> {
    let request = DryRun::parse(argv)?;
    Ok((request.user, request.call))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (user, inner) = parse(argv)?;
    // The caller may run `ACL DRYRUN <user> <command> ...` (what it stands for).
    let mut as_acl: Vec<&[u8]> = vec![b"ACL", b"DRYRUN", user];
    as_acl.extend_from_slice(inner);
    session.require_command(&as_acl, "acl|dryrun")?;
    let Some((full_name, entry, named_by)) = command::find(inner) else {
        let name = inner.first().map(|name| String::from_utf8_lossy(name).into_owned()).unwrap_or_default();
        return Err(CommandError::err(format_args!("Command '{name}' not found")));
    };
    if !command::arity_allows(&full_name, inner.len()) {
        return Err(CommandError::err(format_args!("wrong number of arguments for '{full_name}' command")));
    }
    let Some(may_run) = acl::user_may_run(user, inner) else {
        return Err(CommandError::err(format_args!("User '{}' not found", String::from_utf8_lossy(user))));
    };
    if !may_run {
        return Ok(denied(format!("This user has no permissions to run the '{full_name}' command")));
    }
    let Some(handler) = entry.handler else {
        return Ok(Reply::of(reply::DryRun::Allowed));
    };
    let dry = Session::dry_run_as(session.ctx(), user, inner)?;
    let args = inner.get(named_by..).unwrap_or_default();
    let outcome = handler(&dry, args);
    match (outcome, dry.refused_object()) {
        (Err(_), Some((name, what))) => Ok(denied(format!(
            "This user has no permissions to access the '{}' {what}",
            String::from_utf8_lossy(&name)
        ))),
        // Every check passed (the run stopped at the first key it would
        // open), or the call fails for another reason than permissions
        // (its arguments), which `ACL DRYRUN` does not judge.
        _ => Ok(Reply::of(reply::DryRun::Allowed)),
    }
}

/// A refusal, as `ACL DRYRUN` replies one: a bulk string, not an error.
fn denied(text: String) -> Reply {
    Reply::of(reply::DryRun::Denied(text))
}
