//! `TOWN.PEEK <town> <agent> <count>`: the first `count` messages of the
//! agent's inbox, head first, without removing them. Every stored message
//! is returned, whether or not it still parses (tinytown's `peek_inbox`
//! silently skipped those, hiding them from whoever inspected the inbox).

use super::{AGENT_ARG, TOWN_ARG};
use crate::entry::entry_point;
use crate::glue::access::Read;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::town::mailbox::{check_list, open_list};
use crate::town::keys::TownKeys;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::PEEK,
    entry: entry_point!(run),
    flags: "readonly",
    tenant: TenantUse::Read,
    arity: 4,
    summary: "The first messages of an agent's inbox, without removing them",
    complexity: "O(N) where N is the number of messages returned",
    args: &[TOWN_ARG, AGENT_ARG, Arg::new("count", ArgKind::Integer)],
};

/// The parse step ([`request::Peek`]).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, &'a str, u64), CommandError> {
    let request = request::Peek::parse(argv)?;
    Ok((TownKeys::new(request.town), request.agent, request.count))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent, count) = parse(argv)?;
    let inbox = check_list::<Read>(session, &keys.inbox(agent))?;
    let inbox = open_list(session, inbox)?;
    Ok(Reply::of(reply::Peek { items: inbox.range(0, count) }))
}
