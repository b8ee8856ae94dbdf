//! `TOWN.BACKLOG <town> PUSH <task-id>` (the new length), `POP` (the oldest
//! task id, or nil), `LIST` (every task id, oldest first), `LEN` and
//! `REMOVE <task-id>` (1 if it was there, else 0): the town's FIFO of task
//! ids waiting for an agent. Every stored id is listed, whatever it holds.

use super::mailbox::open_list;
use super::{id, subcommand, town, TASK_ARG, TOWN_ARG};
use crate::module::args::Args;
use crate::module::command::{entry_point, Arg, ArgKind, CommandSpec, TenantUse};
use crate::module::key::End;
use crate::module::reply::{CommandError, CommandResult, Reply};
use crate::town::keys::TownKeys;
use crate::module::session::{Access, Session};

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: "TOWN.BACKLOG",
    entry: entry_point!(run),
    flags: "write",
    tenant: TenantUse::Write,
    arity: -3,
    summary: "The town's FIFO backlog of task ids: push, pop, list, length, remove",
    complexity: "O(1) for PUSH, POP and LEN; O(N) for LIST and REMOVE (N task ids in the backlog)",
    args: &[
        TOWN_ARG,
        Arg::new(
            "action",
            ArgKind::OneOf(&[
                Arg::new("push", ArgKind::Block(&[TASK_ARG])).token("PUSH"),
                Arg::keyword("POP"),
                Arg::keyword("LIST"),
                Arg::keyword("LEN"),
                Arg::new("remove", ArgKind::Block(&[TASK_ARG])).token("REMOVE"),
            ]),
        ),
    ],
};

const SUBCOMMANDS: &[&str] = &["PUSH", "POP", "LIST", "LEN", "REMOVE"];

/// The parse step: the town's keys, the subcommand, the task (PUSH, REMOVE).
pub(crate) fn parse(argv: &[&[u8]]) -> Result<(TownKeys, String, Option<String>), CommandError> {
    let mut args = Args::new(argv);
    let keys = town(&mut args)?;
    let action = subcommand(&mut args, "TOWN.BACKLOG", SUBCOMMANDS)?;
    let task = match action.as_str() {
        "PUSH" | "REMOVE" => Some(id(&mut args, "task id")?),
        _ => None,
    };
    args.end()?;
    Ok((keys, action, task))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, action, task) = parse(argv)?;
    let name = keys.backlog();
    match (action.as_str(), task) {
        ("PUSH", Some(task)) => {
            session.deny_oom()?;
            let backlog = open_list(session, &name, Access::Write)?;
            backlog.push(End::Tail, &[task.as_bytes()]);
            Ok(Reply::count(backlog.len()))
        }
        ("REMOVE", Some(task)) => {
            let backlog = open_list(session, &name, Access::Write)?;
            Ok(Reply::Integer(i64::from(backlog.remove_first(task.as_bytes()))))
        }
        ("POP", _) => {
            let backlog = open_list(session, &name, Access::Write)?;
            Ok(Reply::bulk_or_nil(backlog.pop(End::Head)))
        }
        ("LIST", _) => {
            let backlog = open_list(session, &name, Access::Read)?;
            Ok(Reply::bulks(backlog.all()))
        }
        _ => {
            let backlog = open_list(session, &name, Access::Read)?;
            Ok(Reply::count(backlog.len()))
        }
    }
}
