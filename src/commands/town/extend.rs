//! `TOWN.EXTEND <town> <agent> <message-id> <secs>`: an agent still busy
//! with a message received `RELIABLE LEASE` pushes its lease out to now +
//! `<secs>`. Reply 1, or 0 when the message is leased to no one
//! (acknowledged, or its lease ran out and it went back to the inbox).

use super::{AGENT_ARG, TOWN_ARG};
use crate::entry::entry_point;
use crate::glue::access::ReadWrite;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::lease::{deadline, extend};
use crate::stores::leases::RedisLeases;
use crate::stores::town::leases::{self, check_leases};
use crate::town::keys::TownKeys;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::EXTEND,
    entry: entry_point!(run),
    flags: "write fast",
    tenant: TenantUse::Write,
    arity: 5,
    summary: "Push the lease of a reliably received message out to now + seconds",
    complexity: "O(log N) where N is the number of the agent's leased messages",
    args: &[TOWN_ARG, AGENT_ARG, Arg::new("message-id", ArgKind::String), Arg::new("secs", ArgKind::Double)],
};

/// The parse step ([`request::Extend`]): the town's keys, agent, message
/// id, lease seconds.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, &'a str, &'a [u8], f64), CommandError> {
    let request = request::Extend::parse(argv)?;
    Ok((TownKeys::new(request.town), request.agent, request.message_id, request.lease))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent, message, secs) = parse(argv)?;
    let until = deadline(session.now_ms(), secs).ok_or_else(|| CommandError::err("lease out of range"))?;
    let leases = check_leases::<ReadWrite>(session, &keys, agent)?;
    let mut leases = RedisLeases::open(session, leases)?;
    if !extend(&mut leases, message, until) {
        return Ok(Reply::of(reply::Flag(false)));
    }
    leases::note(session, &keys, agent, until);
    Ok(Reply::of(reply::Flag(true)))
}
