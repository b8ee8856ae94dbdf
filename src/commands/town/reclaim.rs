//! `TOWN.RECLAIM <town> <from-agent> <to-agent>`: move a dead agent's
//! messages to another agent in one atomic step: its urgent inbox (re-sent
//! as urgent), then its pending list and its inbox (re-sent by priority),
//! each head first, with `to` rewritten and every other byte kept. A stored
//! message that no longer parses moves unchanged. The old agent's lists
//! end empty. Reply: how many messages moved.

use super::TOWN_ARG;
use crate::entry::entry_point;
use crate::events::Town;
use crate::glue::access::{ReadWrite, Write};
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::stores::town::index::IdIndex;
use crate::stores::town::mailbox::{check_list, open_list, Inboxes};
use crate::town::keys::TownKeys;
use crate::town::reclaim::{reclaim, OldMail};
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::RECLAIM,
    entry: entry_point!(run),
    flags: "write",
    tenant: TenantUse::Write,
    arity: 4,
    summary: "Move all of an agent's urgent, pending and inbox messages to another agent, readdressed",
    complexity: "O(N) where N is the number of messages moved",
    args: &[TOWN_ARG, Arg::new("from-agent-id", ArgKind::String), Arg::new("to-agent-id", ArgKind::String)],
};

/// The parse step ([`request::Reclaim`]).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, &'a str, &'a str), CommandError> {
    let request = request::Reclaim::parse(argv)?;
    Ok((TownKeys::new(request.town), request.from, request.to))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, from, to) = parse(argv)?;
    let old = Inboxes::<ReadWrite>::check(session, &keys, from)?;
    let old_pending = check_list::<ReadWrite>(session, &keys.pending(from))?;
    let new = Inboxes::<Write>::check(session, &keys, to)?;
    let mailboxes = IdIndex::<Write>::mailboxes(session, &keys)?;
    let old = old.open(session)?;
    let old_pending = open_list(session, old_pending)?;
    let new = new.open(session)?;
    let mailboxes = IdIndex::open(session, mailboxes)?;
    let mail = OldMail { urgent: old.urgent.all(), pending: old_pending.all(), inbox: old.inbox.all() };
    let moves = reclaim(mail, to);
    if moves.is_empty() {
        return Ok(Reply::of(reply::Count(0)));
    }
    old.urgent.delete();
    old_pending.delete();
    old.inbox.delete();
    for delivery in &moves {
        new.deliver(delivery.destination, &delivery.message);
    }
    mailboxes.add(to);
    let moved = moves.len() as u64;
    let unparsed = moves.iter().filter(|m| !m.readdressed).count() as u64;
    count::town(&keys, Some(from), &[(Town::Reclaimed, moved)]);
    count::town(&keys, Some(from), &[(Town::ReclaimedUnparsed, unparsed)]);
    Ok(Reply::of(reply::Count(moved)))
}
