//! `TOWN.RESET <town> [AGENTS]`: delete the town's state, found through the
//! module's indexes (never `SCAN` or `KEYS`): every indexed agent's keys
//! and the agent indexes; without `AGENTS` also every indexed task, the
//! task index, the backlog, the docket streams and the event stream. Every
//! key is ACL-checked before the first is deleted. Reply: the number of
//! keys deleted (index keys included).

use super::TOWN_ARG;
use crate::entry::entry_point;
use crate::events::Town;
use crate::glue::access::{ReadWrite, Write};
use crate::glue::command::{Arg, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::metrics::tenant_stats::{self, TenantId};
use crate::stores::town::index::{AgentIndex, IdIndex};
use crate::town::keys::TownKeys;
use crate::town::reset::{doomed, Scope};
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::town::RESET,
    entry: entry_point!(run),
    flags: "write",
    tenant: TenantUse::Write,
    arity: -2,
    summary: "Delete all of a town's state, or only its agents' state, found through the module's indexes",
    complexity: "O(N) where N is the number of keys deleted",
    args: &[TOWN_ARG, Arg::flag("AGENTS")],
};

/// The parse step ([`request::Reset`]): the town's keys and what to delete.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, Scope), CommandError> {
    let request = request::Reset::parse(argv)?;
    let scope = if request.agents_only { Scope::Agents } else { Scope::All };
    Ok((TownKeys::new(request.town), scope))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, scope) = parse(argv)?;
    // Read the indexes (type-checked) and let go of them before deleting.
    // The indexes name the keys to delete: checked, read (a dry run reads
    // them too), then every key they name is checked before any opens.
    let agent_index = AgentIndex::<ReadWrite>::check(session, &keys)?;
    let mailbox_index = IdIndex::<ReadWrite>::mailboxes(session, &keys)?;
    let task_index = IdIndex::<ReadWrite>::tasks(session, &keys)?;
    let mut agents = agent_index.peek_ids(session)?;
    agents.extend(mailbox_index.peek_ids(session)?);
    let tasks = match scope {
        Scope::All => task_index.peek_ids(session)?,
        Scope::Agents => Vec::new(),
    };
    let names = doomed(&keys, &agents, &tasks, scope);
    let mut doomed_keys = Vec::with_capacity(names.len());
    for name in &names {
        doomed_keys.push(session.check::<Write>(name)?);
    }
    let mut deleted = 0u64;
    for checked in doomed_keys {
        deleted += u64::from(checked.open(session)?.delete());
    }
    count::town_server(Town::Resets, 1);
    // The agents' keys are gone: so are their totals (the town's stay).
    tenant_stats::forget_agents(TenantId::of(keys.prefix()), None);
    count::town_server(Town::ResetKeys, deleted);
    Ok(Reply::of(reply::Count(deleted)))
}
