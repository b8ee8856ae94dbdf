//! `DREAMS.RECOVER <org>`: move everything in flight back to the tail of
//! ready (after a worker died) and drop their leases. Reply: how many moved.

use crate::dreams::drain::recover;
use crate::entry::entry_point;
use crate::events::Dreams;
use crate::glue::command::{Arg, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::stores::dreams::store::RedisQueue;
use crate::stores::leases::RedisLeases;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::RECOVER,
    entry: entry_point!(run),
    flags: "write",
    tenant: TenantUse::Write,
    arity: 2,
    summary: "Move every in-flight fire back to the ready list",
    complexity: "O(N) where N is the number of in-flight items",
    args: &[Arg::tenant("org")],
};

/// The parse step ([`request::Recover`]): the organization.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<&'a str, CommandError> {
    request::Recover::parse(argv).map(|request| request.org)
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let org = parse(argv)?;
    let queue = RedisQueue::check(session, org, false)?;
    let leases = RedisLeases::check(session, org)?;
    let mut queue = queue.open(session)?;
    let leases = RedisLeases::open(session, leases)?;
    let moved = recover(&mut queue);
    // Nothing is in flight any more, so nothing is leased.
    leases.clear();
    count::dreams(queue.tenant(), Dreams::Recovered, moved);
    Ok(Reply::of(reply::Recover { moved }))
}
