//! `TOWN.REQUEUE <town> <agent>`: hand every unacknowledged pending message
//! back to the head of the agent's inbox, in the order they were received,
//! so they are the next to be received again. Reply: how many moved.

use super::{AGENT_ARG, TOWN_ARG};
use crate::entry::entry_point;
use crate::events::Town;
use crate::glue::access::{ReadWrite, Write};
use crate::glue::command::{CommandSpec, TenantUse};
use crate::glue::key::End;
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::stores::leases::RedisLeases;
use crate::stores::town::index::IdIndex;
use crate::stores::town::leases::check_leases;
use crate::stores::town::mailbox::{check_list, open_list};
use crate::town::keys::TownKeys;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::REQUEUE,
    entry: entry_point!(run),
    flags: "write",
    tenant: TenantUse::Write,
    arity: 3,
    summary: "Move an agent's unacknowledged pending messages back to the head of its inbox, keeping their order",
    complexity: "O(N) where N is the number of pending messages",
    args: &[TOWN_ARG, AGENT_ARG],
};

/// The parse step ([`request::Requeue`]).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, &'a str), CommandError> {
    let request = request::Requeue::parse(argv)?;
    Ok((TownKeys::new(request.town), request.agent))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent) = parse(argv)?;
    let pending = check_list::<ReadWrite>(session, &keys.pending(agent))?;
    let inbox = check_list::<Write>(session, &keys.inbox(agent))?;
    let mailboxes = IdIndex::<Write>::mailboxes(session, &keys)?;
    let leases = check_leases::<Write>(session, &keys, agent)?;
    let pending = open_list(session, pending)?;
    let inbox = open_list(session, inbox)?;
    let mailboxes = IdIndex::open(session, mailboxes)?;
    let leases = RedisLeases::open(session, leases)?;
    let messages = pending.all();
    // Nothing stays pending, so nothing stays leased.
    leases.clear();
    if messages.is_empty() {
        return Ok(Reply::of(reply::Count(0)));
    }
    // Pushed one by one at the head, the last pushed ends first: push the
    // oldest last so the inbox starts with them in received order.
    let reversed: Vec<&[u8]> = messages.iter().rev().map(Vec::as_slice).collect();
    pending.delete();
    inbox.push(End::Head, &reversed);
    mailboxes.add(agent);
    let moved = messages.len() as u64;
    count::town(&keys, Some(agent), &[(Town::Requeued, moved)]);
    Ok(Reply::of(reply::Count(moved)))
}
