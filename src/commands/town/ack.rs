//! `TOWN.ACK <town> <agent> <message-id>`: acknowledge a message received
//! with `RELIABLE`, removing the first pending message whose `id` is
//! `<message-id>`. Reply: 1 if one was removed, else 0.

use super::mailbox::open_list;
use super::{end, id, town, AGENT_ARG, TOWN_ARG};
use crate::module::args::Args;
use crate::module::command::{entry_point, Arg, ArgKind, CommandSpec, TenantUse};
use crate::module::reply::{CommandResult, Reply};
use crate::module::session::{Access, Session};
use crate::module::stats;
use crate::town::message::message_id;

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

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let mut args = Args::new(argv);
    let keys = town(&mut args)?;
    let agent = id(&mut args, "agent id")?;
    let wanted = args.required("message id")?;
    end(&args)?;
    let pending = open_list(session, &keys.pending(&agent), Access::Write)?;
    let found = pending
        .all()
        .into_iter()
        .find(|message| message_id(message).is_some_and(|id| id.as_bytes() == wanted));
    let removed = found.is_some_and(|message| pending.remove_first(&message));
    if removed {
        stats::TOWN_ACKED.bump();
    }
    Ok(Reply::Integer(i64::from(removed)))
}
