//! `TOWN.TASK <town> SET|GET|DEL|LIST ...`: task records (hashes) kept
//! atomically and listed through the town's task index, never by scanning
//! the keyspace.
//!
//! * `SET <task-id> <field> <value> [...]`: OK; the record becomes exactly
//!   these fields (absent ones removed); the task is indexed.
//! * `GET <task-id>`: field/value pairs (empty array if none).
//! * `DEL <task-id>`: 1 if the task existed, else 0.
//! * `LIST`: every indexed task (by id) as a field/value array.

use super::index::IdIndex;
use super::{id, record, subcommand, town, FIELDS_ARG, TASK_ARG, TOWN_ARG};
use crate::module::args::Args;
use crate::module::command::{entry_point, Arg, ArgKind, CommandSpec, TenantUse};
use crate::module::reply::{CommandError, CommandResult, Reply};
use crate::module::session::{Access, Session};
use crate::town::fields::FieldSet;
use crate::town::keys::TownKeys;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: "TOWN.TASK",
    entry: entry_point!(run),
    flags: "write",
    tenant: TenantUse::Write,
    arity: -3,
    summary: "Set, get, delete or list task records",
    complexity: "O(N) for LIST (N tasks in the town), O(F) otherwise (F fields of the record)",
    args: &[
        TOWN_ARG,
        Arg::new(
            "action",
            ArgKind::OneOf(&[
                Arg::new("set", ArgKind::Block(&[TASK_ARG, FIELDS_ARG])).token("SET"),
                Arg::new("get", ArgKind::Block(&[TASK_ARG])).token("GET"),
                Arg::new("del", ArgKind::Block(&[TASK_ARG])).token("DEL"),
                Arg::keyword("LIST"),
            ]),
        ),
    ],
};

const SUBCOMMANDS: &[&str] = &["SET", "GET", "DEL", "LIST"];

/// What TOWN.TASK was asked.
pub(crate) enum TaskRequest {
    Set(String, FieldSet),
    Get(String),
    Del(String),
    List,
}

/// The parse step.
pub(crate) fn parse(argv: &[&[u8]]) -> Result<(TownKeys, TaskRequest), CommandError> {
    let mut args = Args::new(argv);
    let keys = town(&mut args)?;
    let action = subcommand(&mut args, "TOWN.TASK", SUBCOMMANDS)?;
    let request = match action.as_str() {
        "SET" => {
            let task = id(&mut args, "task id")?;
            let mut rest = Vec::new();
            while let Some(item) = args.next() {
                rest.push(item);
            }
            TaskRequest::Set(task, FieldSet::parse(&rest).map_err(CommandError::err)?)
        }
        "GET" => TaskRequest::Get(id(&mut args, "task id")?),
        "DEL" => TaskRequest::Del(id(&mut args, "task id")?),
        _ => TaskRequest::List,
    };
    args.end()?;
    Ok((keys, request))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, request) = parse(argv)?;
    match request {
        TaskRequest::Set(task, fields) => {
            session.deny_oom()?;
            let stored = record::open(session, &keys.task(&task), Access::Write)?;
            let tasks = IdIndex::tasks(session, &keys, Access::Write)?;
            record::replace(&stored, &fields);
            tasks.add(&task);
            Ok(Reply::OK)
        }
        TaskRequest::Get(task) => {
            let stored = record::open(session, &keys.task(&task), Access::Read)?;
            Ok(record::reply(&stored))
        }
        TaskRequest::Del(task) => {
            let name = keys.task(&task);
            session.check(name.as_bytes(), Access::Write)?;
            let tasks = IdIndex::tasks(session, &keys, Access::Write)?;
            let stored = session.open_unchecked(name.as_bytes(), Access::Write);
            let deleted = stored.delete();
            tasks.remove(&task);
            Ok(Reply::Integer(i64::from(deleted)))
        }
        TaskRequest::List => list(session, &keys),
    }
}

fn list(session: &Session, keys: &TownKeys) -> CommandResult {
    let tasks = IdIndex::tasks(session, keys, Access::Read)?;
    let mut listed = Vec::new();
    for task in tasks.ids() {
        let stored = record::open(session, &keys.task(&task), Access::Read)?;
        if stored.exists() {
            listed.push(record::reply(&stored));
        }
    }
    Ok(Reply::Array(listed))
}
