//! `DREAMS.RESUME <org>`: end `DREAMS.PAUSE`: blocked drainers are served
//! at once, first blocked first served, within the organization's other
//! limits. Counts the time paused (`paused_ms` in `DREAMS.STATS` and
//! `INFO dreamtown`). Reply: 1 if it was paused, else 0.

use super::wake_drainers;
use crate::entry::entry_point;
use crate::events::Dreams;
use crate::glue::command::{Arg, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::metrics::tenant_stats::TenantId;
use crate::stores::dreams::limits::RedisLimits;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::RESUME,
    entry: entry_point!(run),
    // As DEL of a field: it frees.
    flags: "write fast",
    tenant: TenantUse::Write,
    arity: 2,
    summary: "Hand out an organization's fires again after DREAMS.PAUSE (1 if it was paused)",
    complexity: "O(1)",
    args: &[Arg::tenant("org")],
};

/// The parse step ([`request::Resume`]): the organization.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<&'a str, CommandError> {
    request::Resume::parse(argv).map(|request| request.org)
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let org = parse(argv)?;
    let (mut stored, _) = RedisLimits::open_for_change(session, RedisLimits::check_for_change(session, org)?)?;
    let Some(since) = stored.limits_mut().paused_since_ms.take() else {
        return Ok(Reply::of(reply::Flag(false)));
    };
    stored.store(session, org);
    let paused_ms = session.now_ms().saturating_sub(since).max(0);
    count::dreams(TenantId::of(org), Dreams::PausedMs, paused_ms as u64);
    wake_drainers(session, org);
    Ok(Reply::of(reply::Flag(true)))
}
