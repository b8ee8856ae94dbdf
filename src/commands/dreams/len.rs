//! `DREAMS.LEN <org>`: `[ready, deferred, processing]` lengths.

use crate::entry::entry_point;
use crate::glue::command::{Arg, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::dreams::store::RedisQueue;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::LEN,
    entry: entry_point!(run),
    flags: "readonly fast",
    tenant: TenantUse::Read,
    arity: 2,
    summary: "Lengths of an organization's ready list, deferred set and in-flight list",
    complexity: "O(1)",
    args: &[Arg::tenant("org")],
};

/// The parse step ([`request::Len`]): the organization.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<&'a str, CommandError> {
    request::Len::parse(argv).map(|request| request.org)
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let org = parse(argv)?;
    let [ready, deferred, processing] = RedisQueue::lengths(session, org)?;
    Ok(Reply::of(reply::Len { ready, deferred, processing }))
}
