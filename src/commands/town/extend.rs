//! `TOWN.EXTEND <town> <agent> <message-id> <secs>`: an agent still busy
//! with a message received `RELIABLE LEASE` pushes its lease out to now +
//! `<secs>`. Reply 1, or 0 when the message is leased to no one
//! (acknowledged, or its lease ran out and it went back to the inbox).

use super::{id, town, AGENT_ARG, TOWN_ARG};
use crate::commands::options::lease_secs;
use crate::entry::entry_point;
use crate::glue::access::ReadWrite;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::lease::{deadline, extend};
use crate::stores::leases::RedisLeases;
use crate::stores::town::leases::{self, check_leases};
use crate::town::keys::TownKeys;
use dreamtown_protocol::args::Args;

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

/// The parse step: the town's keys, agent, message id, lease seconds.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, String, &'a [u8], f64), CommandError> {
    let mut args = Args::new(argv);
    let keys = town(&mut args)?;
    let agent = id(&mut args, "agent id")?;
    let message = args.required("message id")?;
    let secs = lease_secs(&mut args)?;
    args.end()?;
    Ok((keys, agent, message, secs))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent, message, secs) = parse(argv)?;
    let until = deadline(session.now_ms(), secs).ok_or_else(|| CommandError::err("lease out of range"))?;
    let leases = check_leases::<ReadWrite>(session, &keys, &agent)?;
    let mut leases = RedisLeases::open(session, leases)?;
    if !extend(&mut leases, message, until) {
        return Ok(Reply::Integer(0));
    }
    leases::note(session, &keys, &agent, until);
    Ok(Reply::Integer(1))
}
