//! `TOWN.AGENT SET|GET|DEL|LIST|BYNAME|INCR|HEARTBEAT <town> ...`: agent
//! records (hashes) kept atomically and listed through the town's agent
//! index, never by scanning the keyspace. Each subcommand is a Redis
//! subcommand with the flags of its native analogue (docs/town.md, "OOM
//! and replicas"): the reads run on a replica, the writes that add data
//! are `deny-oom`, `DEL` is not.
//!
//! * `SET <town> <agent-id> <field> <value> [...]`: OK; the record becomes
//!   exactly these fields (absent ones removed); the agent is indexed by
//!   `name`.
//! * `GET <town> <agent-id>`: field/value pairs as `HGETALL` (a map in
//!   RESP3, a flat array in RESP2; empty if none).
//! * `DEL <town> <agent-id>`: deletes the record, inboxes, pending list,
//!   activity and stop flag; the number of keys deleted.
//! * `LIST <town>`: every indexed agent (by id), an array of records each
//!   as `GET` replies it.
//! * `BYNAME <town> <name>`: the first agent (lowest id) with that name, or
//!   empty.
//! * `INCR <town> <agent-id> ROUNDS|TASKS`: the new `rounds_completed` /
//!   `tasks_completed` (ERR if the agent does not exist).
//! * `HEARTBEAT <town> <agent-id>`: OK; `last_heartbeat` = the server's
//!   clock, RFC 3339 UTC (ERR if the agent does not exist).

use super::{unknown_subcommand, AGENT_ARG, FIELDS_ARG, TOWN_ARG};
use crate::entry::subcommand_entry_point;
use crate::glue::access::{Mode, Read, ReadWrite, Write};
use crate::glue::command::{Arg, ArgKind, CommandSpec, ContainerSpec, TenantUse};
use crate::glue::key::Key;
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::tenant_stats::{self, TenantId};
use crate::stores::town::index::{AgentIndex, IdIndex};
use crate::stores::town::record;
use crate::town::agent::{timestamp, Counter, LAST_HEARTBEAT, NAME};
use crate::town::fields::FieldSet;
use crate::town::keys::TownKeys;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command: a container of subcommands.
pub const SPEC: ContainerSpec = ContainerSpec {
    name: dreamtown_protocol::commands::town::AGENT,
    summary: "Set, get, delete, list or find agent records, and bump their counters and heartbeat",
    subcommands: &[
        CommandSpec {
            name: "SET",
            entry: subcommand_entry_point!(run, "SET"),
            flags: "write deny-oom fast",
            tenant: TenantUse::Write,
            arity: -6,
            summary: "Replace an agent's record with the given fields and index it by name (as HSET)",
            complexity: "O(F) (F fields of the old and new record)",
            args: &[TOWN_ARG, AGENT_ARG, FIELDS_ARG],
        },
        CommandSpec {
            name: "GET",
            entry: subcommand_entry_point!(run, "GET"),
            flags: "readonly",
            tenant: TenantUse::Read,
            arity: 4,
            summary: "An agent's record as field/value pairs (as HGETALL)",
            complexity: "O(F) (F fields of the record)",
            args: &[TOWN_ARG, AGENT_ARG],
        },
        CommandSpec {
            name: "DEL",
            entry: subcommand_entry_point!(run, "DEL"),
            flags: "write",
            tenant: TenantUse::Write,
            arity: 4,
            summary: "Delete an agent's record, inboxes, pending list, activity and stop flag (as DEL)",
            complexity: "O(N) (N items in the deleted keys)",
            args: &[TOWN_ARG, AGENT_ARG],
        },
        CommandSpec {
            name: "LIST",
            entry: subcommand_entry_point!(run, "LIST"),
            flags: "readonly",
            tenant: TenantUse::Read,
            arity: 3,
            summary: "Every indexed agent's record",
            complexity: "O(N) (N agents in the town)",
            args: &[TOWN_ARG],
        },
        CommandSpec {
            name: "BYNAME",
            entry: subcommand_entry_point!(run, "BYNAME"),
            flags: "readonly",
            tenant: TenantUse::Read,
            arity: 4,
            summary: "The record of the first agent (lowest id) with that name",
            complexity: "O(N) (N agents in the town)",
            args: &[TOWN_ARG, Arg::new("name", ArgKind::String)],
        },
        CommandSpec {
            name: "INCR",
            entry: subcommand_entry_point!(run, "INCR"),
            flags: "write deny-oom fast",
            tenant: TenantUse::Write,
            arity: 5,
            summary: "Add 1 to an existing agent's rounds or tasks completed (as HINCRBY)",
            complexity: "O(1)",
            args: &[
                TOWN_ARG,
                AGENT_ARG,
                Arg::new("counter", ArgKind::OneOf(&[Arg::keyword("ROUNDS"), Arg::keyword("TASKS")])),
            ],
        },
        CommandSpec {
            name: "HEARTBEAT",
            entry: subcommand_entry_point!(run, "HEARTBEAT"),
            flags: "write deny-oom fast",
            tenant: TenantUse::Write,
            arity: 4,
            summary: "Set an existing agent's last heartbeat to the server's clock (as HSET)",
            complexity: "O(1)",
            args: &[TOWN_ARG, AGENT_ARG],
        },
    ],
};

/// What TOWN.AGENT was asked.
pub(crate) enum AgentRequest<'a> {
    Set(&'a str, FieldSet),
    Get(&'a str),
    Del(&'a str),
    List,
    ByName(&'a [u8]),
    Incr(&'a str, Counter),
    Heartbeat(&'a str),
}

/// The parse step of subcommand `action` (upper case) on the arguments
/// after its name, through its request type (`request::Agent*`).
pub(crate) fn parse<'a>(action: &str, argv: &'a [&'a [u8]]) -> Result<(TownKeys, AgentRequest<'a>), CommandError> {
    let (town, request) = match action {
        "SET" => {
            let request::AgentSet { town, agent, fields } = request::AgentSet::parse(argv)?;
            (town, AgentRequest::Set(agent, fields))
        }
        "LIST" => (request::AgentList::parse(argv)?.town, AgentRequest::List),
        "BYNAME" => {
            let request::AgentByName { town, name } = request::AgentByName::parse(argv)?;
            (town, AgentRequest::ByName(name))
        }
        "GET" => {
            let request::AgentGet { town, agent } = request::AgentGet::parse(argv)?;
            (town, AgentRequest::Get(agent))
        }
        "DEL" => {
            let request::AgentDel { town, agent } = request::AgentDel::parse(argv)?;
            (town, AgentRequest::Del(agent))
        }
        "INCR" => {
            let request::AgentIncr { town, agent, counter } = request::AgentIncr::parse(argv)?;
            (town, AgentRequest::Incr(agent, counter))
        }
        "HEARTBEAT" => {
            let request::AgentHeartbeat { town, agent } = request::AgentHeartbeat::parse(argv)?;
            (town, AgentRequest::Heartbeat(agent))
        }
        other => return Err(unknown_subcommand("TOWN.AGENT", other)),
    };
    Ok((TownKeys::new(town), request))
}

fn run(session: &Session, action: &str, argv: &[&[u8]]) -> CommandResult {
    let (keys, request) = parse(action, argv)?;
    match request {
        AgentRequest::Set(agent, fields) => set(session, &keys, agent, &fields),
        AgentRequest::Get(agent) => {
            let stored = record::check::<Read>(session, &keys.agent(agent))?;
            Ok(Reply::of(record::read(&record::open(session, stored)?)))
        }
        AgentRequest::Del(agent) => delete(session, &keys, agent),
        AgentRequest::List => list(session, &keys),
        AgentRequest::ByName(name) => by_name(session, &keys, name),
        AgentRequest::Incr(agent, counter) => {
            let stored = existing::<ReadWrite>(session, &keys, agent)?;
            Ok(Reply::of(reply::AgentIncr(stored.hincrby(counter.field(), 1)?)))
        }
        AgentRequest::Heartbeat(agent) => {
            let stored = existing::<Write>(session, &keys, agent)?;
            let now = timestamp(session.now_ms());
            stored.hset(&[(LAST_HEARTBEAT, now.as_bytes())]);
            Ok(Reply::of(reply::Done))
        }
    }
}

/// The record of an agent that must exist, open in mode `M`.
fn existing<M: Mode>(session: &Session, keys: &TownKeys, agent: &str) -> Result<Key<M>, CommandError> {
    let stored = record::open(session, record::check::<M>(session, &keys.agent(agent))?)?;
    if !stored.exists() {
        return Err(CommandError::err(format_args!("no such agent '{agent}'")));
    }
    Ok(stored)
}

fn set(session: &Session, keys: &TownKeys, agent: &str, fields: &FieldSet) -> CommandResult {
    let stored = record::check::<Write>(session, &keys.agent(agent))?;
    let agents = AgentIndex::<Write>::check(session, keys)?;
    let mailboxes = IdIndex::<Write>::mailboxes(session, keys)?;
    let stored = record::open(session, stored)?;
    let agents = AgentIndex::open(session, agents)?;
    let mailboxes = IdIndex::open(session, mailboxes)?;
    record::replace(&stored, fields);
    agents.set(agent, fields.get(NAME).unwrap_or_default());
    mailboxes.add(agent);
    Ok(Reply::of(reply::Done))
}

fn delete(session: &Session, keys: &TownKeys, agent: &str) -> CommandResult {
    let names = keys.agent_keys(agent);
    let mut doomed = Vec::new();
    for name in names.all() {
        doomed.push(session.check::<Write>(name)?);
    }
    let agents = AgentIndex::<Write>::check(session, keys)?;
    let mailboxes = IdIndex::<Write>::mailboxes(session, keys)?;
    let agents = AgentIndex::open(session, agents)?;
    let mailboxes = IdIndex::open(session, mailboxes)?;
    let mut owned: Vec<Key<Write>> = Vec::with_capacity(doomed.len());
    for checked in doomed {
        owned.push(checked.open(session)?);
    }
    let deleted = owned.iter().filter(|key| key.delete()).count() as u64;
    agents.remove(agent);
    mailboxes.remove(agent);
    let town = TenantId::of(keys.prefix());
    tenant_stats::forget_agents(town, Some(town.agent(agent)));
    Ok(Reply::of(reply::Count(deleted)))
}

/// The records of the agents the index names (`pick`ed among its
/// `(id, name)` entries), each checked before any is read.
fn indexed_records(
    session: &Session,
    keys: &TownKeys,
    pick: impl Fn(&[u8]) -> bool,
) -> Result<Vec<Key<Read>>, CommandError> {
    let index = AgentIndex::<Read>::check(session, keys)?;
    let mut checked = Vec::new();
    for (agent, _) in index.peek_entries(session)?.into_iter().filter(|(_, name)| pick(name)) {
        checked.push(record::check::<Read>(session, &keys.agent(&agent))?);
    }
    checked.into_iter().map(|stored| record::open(session, stored)).collect()
}

fn list(session: &Session, keys: &TownKeys) -> CommandResult {
    let listed = indexed_records(session, keys, |_| true)?;
    let records = listed.iter().filter(|stored| stored.exists()).map(record::read).collect();
    Ok(Reply::of(reply::AgentList { records }))
}

fn by_name(session: &Session, keys: &TownKeys, name: &[u8]) -> CommandResult {
    let found = indexed_records(session, keys, |indexed| indexed == name)?;
    // No such agent: an empty record, as `HGETALL` of a missing key.
    Ok(Reply::of(found.iter().find(|stored| stored.exists()).map(record::read).unwrap_or_default()))
}
