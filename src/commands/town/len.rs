//! `TOWN.LEN <town> <agent>`: `[inbox, urgent, pending]` lengths.

use super::{AGENT_ARG, TOWN_ARG};
use crate::entry::entry_point;
use crate::glue::access::Meta;
use crate::glue::command::{CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::town::mailbox::{check_list, open_list, Inboxes};
use crate::town::keys::TownKeys;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::LEN,
    entry: entry_point!(run),
    flags: "readonly fast",
    tenant: TenantUse::Read,
    arity: 3,
    summary: "Lengths of an agent's inbox, urgent inbox and pending list",
    complexity: "O(1)",
    args: &[TOWN_ARG, AGENT_ARG],
};

/// The parse step ([`request::Len`]).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, &'a str), CommandError> {
    let request = request::Len::parse(argv)?;
    Ok((TownKeys::new(request.town), request.agent))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent) = parse(argv)?;
    let inboxes = Inboxes::<Meta>::check(session, &keys, agent)?;
    let pending = check_list::<Meta>(session, &keys.pending(agent))?;
    let inboxes = inboxes.open(session)?;
    let pending = open_list(session, pending)?;
    Ok(Reply::of(reply::Len { inbox: inboxes.inbox.len(), urgent: inboxes.urgent.len(), pending: pending.len() }))
}
