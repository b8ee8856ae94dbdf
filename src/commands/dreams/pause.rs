//! `DREAMS.PAUSE <org>`: hand out nothing of the organization's queue
//! until `DREAMS.RESUME`: its drains answer as if nothing were ready (a
//! blocking one waits), everything else goes on (fires queue, workers
//! acknowledge what they hold, leases expire back to ready). Kept in its
//! limits key, so a pause replicates, persists and survives a failover.
//! Reply: 1 if it was not paused, else 0 (it stays paused since then).

use crate::entry::entry_point;
use crate::glue::command::{Arg, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::dreams::limits::RedisLimits;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::PAUSE,
    entry: entry_point!(run),
    // As SET: it writes a small key.
    flags: "write deny-oom fast",
    tenant: TenantUse::Write,
    arity: 2,
    summary: "Stop handing out an organization's fires until DREAMS.RESUME (1 if it was not paused)",
    complexity: "O(1)",
    args: &[Arg::tenant("org")],
};

/// The parse step ([`request::Pause`]): the organization.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<&'a str, CommandError> {
    request::Pause::parse(argv).map(|request| request.org)
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let org = parse(argv)?;
    let (mut stored, _) = RedisLimits::open_for_change(session, RedisLimits::check_for_change(session, org)?)?;
    if stored.limits().paused_since_ms.is_some() {
        return Ok(Reply::of(reply::Flag(false)));
    }
    stored.limits_mut().paused_since_ms = Some(session.now_ms());
    stored.store(session, org);
    Ok(Reply::of(reply::Flag(true)))
}
