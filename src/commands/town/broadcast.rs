//! `TOWN.BROADCAST <town> <message-json>`: publish a message (a JSON
//! object) to every subscriber of `tt:{<town>}:broadcast`. Reply: the
//! number of clients that received it, as `PUBLISH` replies.

use super::{invalid_message, TOWN_ARG};
use crate::entry::entry_point;
use crate::events::Town;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::effects::publish;
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::town::keys::TownKeys;
use crate::town::message::is_object;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::BROADCAST,
    entry: entry_point!(run),
    flags: "pubsub fast may-replicate",
    tenant: TenantUse::Read,
    arity: 3,
    summary: "Publish a message to every agent of the town on its broadcast channel",
    complexity: "O(N+M) where N is the number of subscribers and M the number of subscribed patterns",
    args: &[TOWN_ARG, Arg::new("message-json", ArgKind::String)],
};

/// The parse step ([`request::Broadcast`]), then the check that the
/// message is a JSON object (last, as before the request type).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, &'a [u8]), CommandError> {
    let request = request::Broadcast::parse(argv)?;
    is_object(request.message).map_err(invalid_message)?;
    Ok((TownKeys::new(request.town), request.message))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, message) = parse(argv)?;
    let channel = keys.broadcast();
    let channel = session.check_publish(channel.as_bytes())?;
    let receivers = publish(session.ctx(), channel.publish_to(session)?, message, session.in_cluster());
    count::town(&keys, None, &[(Town::Broadcasts, 1)]);
    // PUBLISH's count (never negative).
    Ok(Reply::of(reply::Count(u64::try_from(receivers).unwrap_or(0))))
}
