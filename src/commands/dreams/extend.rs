//! `DREAMS.EXTEND <org> <payload> <secs>`: a worker still busy with a
//! drained fire pushes its lease out to now + `<secs>`. Reply 1, or 0 when
//! the payload is leased to no one (acknowledged, or its lease ran out and
//! it went back to ready).

use crate::entry::entry_point;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::lease::{deadline, extend};
use crate::stores::dreams::leases;
use crate::stores::leases::RedisLeases;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::EXTEND,
    entry: entry_point!(run),
    flags: "write fast",
    tenant: TenantUse::Write,
    arity: 4,
    summary: "Push the lease of a drained fire out to now + seconds",
    complexity: "O(log N) where N is the number of leased items",
    args: &[Arg::tenant("org"), Arg::new("payload", ArgKind::String), Arg::new("secs", ArgKind::Double)],
};

/// The parse step ([`request::Extend`]): organization, payload, lease seconds.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(&'a str, &'a [u8], f64), CommandError> {
    let request = request::Extend::parse(argv)?;
    Ok((request.org, request.payload, request.lease_secs))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (org, payload, secs) = parse(argv)?;
    let until = deadline(session.now_ms(), secs).ok_or_else(|| CommandError::err("lease out of range"))?;
    let leases = RedisLeases::check(session, org)?;
    let mut leases = RedisLeases::open(session, leases)?;
    if !extend(&mut leases, payload, until) {
        return Ok(Reply::of(reply::Flag(false)));
    }
    leases::note(session, org, until);
    Ok(Reply::of(reply::Flag(true)))
}
