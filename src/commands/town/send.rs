//! `TOWN.SEND <town> <message-json> [URGENT]`: store a message for its
//! recipient (`to`): urgent and high priority at the head of the inbox,
//! normal, low or none at the tail; with `URGENT` at the head of the urgent
//! inbox. Reply: the length of the list it went to.

use super::{invalid_message, TOWN_ARG};
use crate::entry::entry_point;
use crate::events::Town;
use crate::glue::access::Write;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::stores::town::index::IdIndex;
use crate::stores::town::mailbox::Inboxes;
use crate::town::keys::TownKeys;
use crate::town::message::Envelope;
use crate::town::priority::Destination;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::SEND,
    entry: entry_point!(run),
    flags: "write deny-oom fast",
    tenant: TenantUse::Write,
    arity: -3,
    summary: "Send a message to the agent named by its 'to': by priority into the inbox, or into the urgent inbox",
    complexity: "O(1) (plus O(M) to validate a message of M bytes)",
    args: &[TOWN_ARG, Arg::new("message-json", ArgKind::String), Arg::flag("URGENT")],
};

/// The parse step ([`request::Send`]), then the message's envelope (its
/// checks last, as before the request type).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, &'a [u8], Envelope, bool), CommandError> {
    let request = request::Send::parse(argv)?;
    let envelope = Envelope::parse(request.message).map_err(invalid_message)?;
    Ok((TownKeys::new(request.town), request.message, envelope, request.urgent))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, message, envelope, urgent) = parse(argv)?;
    let destination = envelope.destination(urgent);
    let inboxes = Inboxes::<Write>::check(session, &keys, &envelope.to)?;
    let mailboxes = IdIndex::<Write>::mailboxes(session, &keys)?;
    let inboxes = inboxes.open(session)?;
    let mailboxes = IdIndex::open(session, mailboxes)?;
    let length = inboxes.deliver(destination, message);
    mailboxes.add(&envelope.to);
    count::town(&keys, Some(&envelope.to), &[(Town::Sent, 1)]);
    if destination == Destination::Urgent {
        count::town(&keys, Some(&envelope.to), &[(Town::SentUrgent, 1)]);
    }
    Ok(Reply::of(reply::Count(length)))
}
