//! `TOWN.TASK SET|GET|DEL|LIST <town> ...`: task records (hashes) kept
//! atomically and listed through the town's task index, never by scanning
//! the keyspace. Each subcommand is a Redis subcommand with the flags of
//! its native analogue (docs/town.md, "OOM and replicas").
//!
//! * `SET <town> <task-id> <field> <value> [...]`: OK; the record becomes
//!   exactly these fields (absent ones removed); the task is indexed.
//! * `GET <town> <task-id>`: field/value pairs as `HGETALL` (a map in
//!   RESP3, a flat array in RESP2; empty if none).
//! * `DEL <town> <task-id>`: 1 if the task existed, else 0.
//! * `LIST <town>`: every indexed task (by id), an array of records each
//!   as `GET` replies it.

use super::{unknown_subcommand, FIELDS_ARG, TASK_ARG, TOWN_ARG};
use crate::entry::subcommand_entry_point;
use crate::glue::access::{Read, Write};
use crate::glue::command::{CommandSpec, ContainerSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::town::index::IdIndex;
use crate::stores::town::record;
use crate::town::fields::FieldSet;
use crate::town::keys::TownKeys;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command: a container of subcommands.
pub const SPEC: ContainerSpec = ContainerSpec {
    name: dreamtown_protocol::commands::town::TASK,
    summary: "Set, get, delete or list task records",
    subcommands: &[
        CommandSpec {
            name: "SET",
            entry: subcommand_entry_point!(run, "SET"),
            flags: "write deny-oom fast",
            tenant: TenantUse::Write,
            arity: -6,
            summary: "Replace a task's record with the given fields and index it (as HSET)",
            complexity: "O(F) (F fields of the old and new record)",
            args: &[TOWN_ARG, TASK_ARG, FIELDS_ARG],
        },
        CommandSpec {
            name: "GET",
            entry: subcommand_entry_point!(run, "GET"),
            flags: "readonly",
            tenant: TenantUse::Read,
            arity: 4,
            summary: "A task's record as field/value pairs (as HGETALL)",
            complexity: "O(F) (F fields of the record)",
            args: &[TOWN_ARG, TASK_ARG],
        },
        CommandSpec {
            name: "DEL",
            entry: subcommand_entry_point!(run, "DEL"),
            flags: "write",
            tenant: TenantUse::Write,
            arity: 4,
            summary: "Delete a task's record (as DEL)",
            complexity: "O(F) (F fields of the record)",
            args: &[TOWN_ARG, TASK_ARG],
        },
        CommandSpec {
            name: "LIST",
            entry: subcommand_entry_point!(run, "LIST"),
            flags: "readonly",
            tenant: TenantUse::Read,
            arity: 3,
            summary: "Every indexed task's record",
            complexity: "O(N) (N tasks in the town)",
            args: &[TOWN_ARG],
        },
    ],
};

/// What TOWN.TASK was asked.
pub(crate) enum TaskRequest<'a> {
    Set(&'a str, FieldSet),
    Get(&'a str),
    Del(&'a str),
    List,
}

/// The parse step of subcommand `action` (upper case) on the arguments
/// after its name, through its request type (`request::Task*`).
pub(crate) fn parse<'a>(action: &str, argv: &'a [&'a [u8]]) -> Result<(TownKeys, TaskRequest<'a>), CommandError> {
    let (town, request) = match action {
        "SET" => {
            let request::TaskSet { town, task, fields } = request::TaskSet::parse(argv)?;
            (town, TaskRequest::Set(task, fields))
        }
        "GET" => {
            let request::TaskGet { town, task } = request::TaskGet::parse(argv)?;
            (town, TaskRequest::Get(task))
        }
        "DEL" => {
            let request::TaskDel { town, task } = request::TaskDel::parse(argv)?;
            (town, TaskRequest::Del(task))
        }
        "LIST" => (request::TaskList::parse(argv)?.town, TaskRequest::List),
        other => return Err(unknown_subcommand("TOWN.TASK", other)),
    };
    Ok((TownKeys::new(town), request))
}

fn run(session: &Session, action: &str, argv: &[&[u8]]) -> CommandResult {
    let (keys, request) = parse(action, argv)?;
    match request {
        TaskRequest::Set(task, fields) => {
            let stored = record::check::<Write>(session, &keys.task(task))?;
            let tasks = IdIndex::<Write>::tasks(session, &keys)?;
            let stored = record::open(session, stored)?;
            let tasks = IdIndex::open(session, tasks)?;
            record::replace(&stored, &fields);
            tasks.add(task);
            Ok(Reply::of(reply::Done))
        }
        TaskRequest::Get(task) => {
            let stored = record::check::<Read>(session, &keys.task(task))?;
            Ok(Reply::of(record::read(&record::open(session, stored)?)))
        }
        TaskRequest::Del(task) => {
            let stored = session.check::<Write>(&keys.task(task))?;
            let tasks = IdIndex::<Write>::tasks(session, &keys)?;
            let tasks = IdIndex::open(session, tasks)?;
            let deleted = stored.open(session)?.delete();
            tasks.remove(task);
            Ok(Reply::of(reply::Flag(deleted)))
        }
        TaskRequest::List => list(session, &keys),
    }
}

fn list(session: &Session, keys: &TownKeys) -> CommandResult {
    let index = IdIndex::<Read>::tasks(session, keys)?;
    let mut checked = Vec::new();
    for task in index.peek_ids(session)? {
        checked.push(record::check::<Read>(session, &keys.task(&task))?);
    }
    let mut records = Vec::new();
    for stored in checked {
        let stored = record::open(session, stored)?;
        if stored.exists() {
            records.push(record::read(&stored));
        }
    }
    Ok(Reply::of(reply::TaskList { records }))
}
