//! `TOWN.ACK <town> <agent> <message-id>`: acknowledge a message received
//! with `RELIABLE`, removing the first pending message whose `id` is
//! `<message-id>`; when that message's lease ran out, it is removed from
//! the inbox it went back to. Reply: 1 if one was removed, else 0.

use super::expiry::{open_leases, RedisMail};
use super::{id, town, AGENT_ARG, TOWN_ARG};
use crate::module::args::Args;
use crate::module::command::{entry_point, Arg, ArgKind, CommandSpec, TenantUse};
use crate::module::reply::{CommandError, CommandResult, Reply};
use crate::module::session::{Access, Session};
use crate::module::stats;
use crate::module::tenant_stats::Town;
use crate::town::lease::acknowledge;
use crate::town::keys::TownKeys;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: "TOWN.ACK",
    entry: entry_point!(run),
    flags: "write",
    tenant: TenantUse::Write,
    arity: 4,
    summary: "Acknowledge a reliably received message by its id, removing it from the agent's pending list",
    complexity: "O(N) where N is the number of pending messages",
    args: &[TOWN_ARG, AGENT_ARG, Arg::new("message-id", ArgKind::String)],
};

/// The parse step.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, String, &'a [u8]), CommandError> {
    let mut args = Args::new(argv);
    let keys = town(&mut args)?;
    let agent = id(&mut args, "agent id")?;
    let wanted = args.required("message id")?;
    args.end()?;
    Ok((keys, agent, wanted))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent, wanted) = parse(argv)?;
    let removed = acknowledge_now(session, &keys, &agent, wanted)?;
    Ok(Reply::Integer(i64::from(removed)))
}

/// Acknowledge `agent`'s message `wanted`: what `TOWN.ACK` and the `ACK`
/// clause of `TOWN.RECV` both do. Every key is checked (ACL, type) before
/// the first write. Whether a message was removed.
pub fn acknowledge_now(session: &Session, keys: &TownKeys, agent: &str, wanted: &[u8]) -> Result<bool, CommandError> {
    let mut mail = RedisMail::open(session, keys, agent)?;
    let mut leases = open_leases(session, keys, agent, Access::Write)?;
    let removed = acknowledge(&mut mail, &mut leases, wanted);
    if removed {
        stats::TOWN_ACKED.bump();
        super::count(keys, Some(agent), Town::Acked, 1);
    }
    Ok(removed)
}
