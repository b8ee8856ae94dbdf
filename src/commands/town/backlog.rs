//! `TOWN.BACKLOG PUSH <town> <task-id>` (the new length), `POP <town>` (the
//! oldest task id, or nil), `LIST <town>` (every task id, oldest first),
//! `LEN <town>` and `REMOVE <town> <task-id>` (1 if it was there, else 0):
//! the town's FIFO of task ids waiting for an agent. Every stored id is
//! listed, whatever it holds. Each subcommand is a Redis subcommand with
//! the flags of its native analogue (RPUSH, LPOP, LRANGE, LLEN, LREM).

use super::{unknown_subcommand, TASK_ARG, TOWN_ARG};
use crate::entry::subcommand_entry_point;
use crate::glue::access::{Meta, Read, ReadWrite, Write};
use crate::glue::command::{CommandSpec, ContainerSpec, TenantUse};
use crate::glue::key::End;
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::town::mailbox::{check_list, open_list};
use crate::town::keys::TownKeys;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command: a container of subcommands.
pub const SPEC: ContainerSpec = ContainerSpec {
    name: dreamtown_protocol::commands::town::BACKLOG,
    summary: "The town's FIFO backlog of task ids: push, pop, list, length, remove",
    subcommands: &[
        CommandSpec {
            name: "PUSH",
            entry: subcommand_entry_point!(run, "PUSH"),
            flags: "write deny-oom fast",
            tenant: TenantUse::Write,
            arity: 4,
            summary: "Append a task id to the backlog; the new length (as RPUSH)",
            complexity: "O(1)",
            args: &[TOWN_ARG, TASK_ARG],
        },
        CommandSpec {
            name: "POP",
            entry: subcommand_entry_point!(run, "POP"),
            flags: "write fast",
            tenant: TenantUse::Write,
            arity: 3,
            summary: "Take the oldest task id, or nil (as LPOP)",
            complexity: "O(1)",
            args: &[TOWN_ARG],
        },
        CommandSpec {
            name: "LIST",
            entry: subcommand_entry_point!(run, "LIST"),
            flags: "readonly",
            tenant: TenantUse::Read,
            arity: 3,
            summary: "Every task id in the backlog, oldest first (as LRANGE 0 -1)",
            complexity: "O(N) (N task ids in the backlog)",
            args: &[TOWN_ARG],
        },
        CommandSpec {
            name: "LEN",
            entry: subcommand_entry_point!(run, "LEN"),
            flags: "readonly fast",
            tenant: TenantUse::Read,
            arity: 3,
            summary: "How many task ids are in the backlog (as LLEN)",
            complexity: "O(1)",
            args: &[TOWN_ARG],
        },
        CommandSpec {
            name: "REMOVE",
            entry: subcommand_entry_point!(run, "REMOVE"),
            flags: "write",
            tenant: TenantUse::Write,
            arity: 4,
            summary: "Remove the first occurrence of a task id; 1 if it was there, else 0 (as LREM)",
            complexity: "O(N) (N task ids in the backlog)",
            args: &[TOWN_ARG, TASK_ARG],
        },
    ],
};

/// The parse step of subcommand `action` (upper case) on the arguments
/// after its name, through its request type (`request::Backlog*`): the
/// town's keys and the task (PUSH, REMOVE).
pub(crate) fn parse<'a>(action: &str, argv: &'a [&'a [u8]]) -> Result<(TownKeys, Option<&'a str>), CommandError> {
    let (town, task) = match action {
        "PUSH" => {
            let request::BacklogPush { town, task } = request::BacklogPush::parse(argv)?;
            (town, Some(task))
        }
        "REMOVE" => {
            let request::BacklogRemove { town, task } = request::BacklogRemove::parse(argv)?;
            (town, Some(task))
        }
        "POP" => (request::BacklogPop::parse(argv)?.town, None),
        "LIST" => (request::BacklogList::parse(argv)?.town, None),
        "LEN" => (request::BacklogLen::parse(argv)?.town, None),
        other => return Err(unknown_subcommand("TOWN.BACKLOG", other)),
    };
    Ok((TownKeys::new(town), task))
}

fn run(session: &Session, action: &str, argv: &[&[u8]]) -> CommandResult {
    let (keys, task) = parse(action, argv)?;
    let name = keys.backlog();
    match (action, task) {
        ("PUSH", Some(task)) => {
            let backlog = open_list(session, check_list::<Write>(session, &name)?)?;
            backlog.push(End::Tail, &[task.as_bytes()]);
            Ok(Reply::of(reply::Count(backlog.len())))
        }
        ("REMOVE", Some(task)) => {
            let backlog = open_list(session, check_list::<Write>(session, &name)?)?;
            Ok(Reply::of(reply::Flag(backlog.remove_first(task.as_bytes()))))
        }
        ("POP", _) => {
            let backlog = open_list(session, check_list::<ReadWrite>(session, &name)?)?;
            Ok(Reply::of(reply::MaybeBulk(backlog.pop(End::Head))))
        }
        ("LIST", _) => {
            let backlog = open_list(session, check_list::<Read>(session, &name)?)?;
            Ok(Reply::of(reply::BacklogList { items: backlog.all() }))
        }
        _ => {
            let backlog = open_list(session, check_list::<Meta>(session, &name)?)?;
            Ok(Reply::of(reply::Count(backlog.len())))
        }
    }
}
