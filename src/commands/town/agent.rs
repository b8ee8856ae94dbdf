//! `TOWN.AGENT <town> SET|GET|DEL|LIST|BYNAME|INCR|HEARTBEAT ...`: agent
//! records (hashes) kept atomically and listed through the town's agent
//! index, never by scanning the keyspace.
//!
//! * `SET <agent-id> <field> <value> [...]`: OK; the record becomes exactly
//!   these fields (absent ones removed); the agent is indexed by `name`.
//! * `GET <agent-id>`: field/value pairs (empty array if none).
//! * `DEL <agent-id>`: deletes the record, inboxes, pending list, activity
//!   and stop flag; the number of keys deleted.
//! * `LIST`: every indexed agent (by id) as a field/value array.
//! * `BYNAME <name>`: the first agent (lowest id) with that name, or empty.
//! * `INCR <agent-id> ROUNDS|TASKS`: the new `rounds_completed` /
//!   `tasks_completed` (ERR if the agent does not exist).
//! * `HEARTBEAT <agent-id>`: OK; `last_heartbeat` = the server's clock,
//!   RFC 3339 UTC (ERR if the agent does not exist).

use crate::module::tenant_stats::{self, TenantId};
use super::index::{AgentIndex, IdIndex};
use super::{id, record, subcommand, town, AGENT_ARG, FIELDS_ARG, TOWN_ARG};
use crate::module::args::Args;
use crate::module::command::{entry_point, Arg, ArgKind, CommandSpec, TenantUse};
use crate::module::key::Key;
use crate::module::reply::{CommandError, CommandResult, Reply};
use crate::module::session::{Access, Session};
use crate::town::agent::{timestamp, Counter, LAST_HEARTBEAT, NAME};
use crate::town::fields::FieldSet;
use crate::town::keys::TownKeys;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: "TOWN.AGENT",
    entry: entry_point!(run),
    flags: "write",
    tenant: TenantUse::Write,
    arity: -3,
    summary: "Set, get, delete, list or find agent records, and bump their counters and heartbeat",
    complexity: "O(N) for LIST and BYNAME (N agents in the town), O(F) otherwise (F fields of the record)",
    args: &[
        TOWN_ARG,
        Arg::new(
            "action",
            ArgKind::OneOf(&[
                Arg::new("set", ArgKind::Block(&[AGENT_ARG, FIELDS_ARG])).token("SET"),
                Arg::new("get", ArgKind::Block(&[AGENT_ARG])).token("GET"),
                Arg::new("del", ArgKind::Block(&[AGENT_ARG])).token("DEL"),
                Arg::keyword("LIST"),
                Arg::new("byname", ArgKind::Block(&[Arg::new("name", ArgKind::String)])).token("BYNAME"),
                Arg::new(
                    "incr",
                    ArgKind::Block(&[
                        AGENT_ARG,
                        Arg::new("counter", ArgKind::OneOf(&[Arg::keyword("ROUNDS"), Arg::keyword("TASKS")])),
                    ]),
                )
                .token("INCR"),
                Arg::new("heartbeat", ArgKind::Block(&[AGENT_ARG])).token("HEARTBEAT"),
            ]),
        ),
    ],
};

const SUBCOMMANDS: &[&str] = &["SET", "GET", "DEL", "LIST", "BYNAME", "INCR", "HEARTBEAT"];

/// What TOWN.AGENT was asked.
pub(crate) enum AgentRequest<'a> {
    Set(String, FieldSet),
    Get(String),
    Del(String),
    List,
    ByName(&'a [u8]),
    Incr(String, Counter),
    Heartbeat(String),
}

/// The parse step.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, AgentRequest<'a>), CommandError> {
    let mut args = Args::new(argv);
    let keys = town(&mut args)?;
    let action = subcommand(&mut args, "TOWN.AGENT", SUBCOMMANDS)?;
    let request = match action.as_str() {
        "SET" => {
            let agent = id(&mut args, "agent id")?;
            let mut rest = Vec::new();
            while let Some(item) = args.next() {
                rest.push(item);
            }
            AgentRequest::Set(agent, FieldSet::parse(&rest).map_err(CommandError::err)?)
        }
        "LIST" => AgentRequest::List,
        "BYNAME" => AgentRequest::ByName(args.required("name")?),
        "GET" => AgentRequest::Get(id(&mut args, "agent id")?),
        "DEL" => AgentRequest::Del(id(&mut args, "agent id")?),
        "INCR" => {
            let agent = id(&mut args, "agent id")?;
            let counter = Counter::parse(args.required("counter")?)
                .ok_or_else(|| CommandError::err("the counter must be ROUNDS or TASKS"))?;
            AgentRequest::Incr(agent, counter)
        }
        _ => AgentRequest::Heartbeat(id(&mut args, "agent id")?),
    };
    args.end()?;
    Ok((keys, request))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, request) = parse(argv)?;
    match request {
        AgentRequest::Set(agent, fields) => set(session, &keys, &agent, &fields),
        AgentRequest::Get(agent) => {
            let stored = record::open(session, &keys.agent(&agent), Access::Read)?;
            Ok(record::reply(&stored))
        }
        AgentRequest::Del(agent) => delete(session, &keys, &agent),
        AgentRequest::List => list(session, &keys),
        AgentRequest::ByName(name) => by_name(session, &keys, name),
        AgentRequest::Incr(agent, counter) => {
            session.deny_oom()?;
            let stored = existing(session, &keys, &agent)?;
            Ok(Reply::Integer(stored.hincrby(counter.field(), 1)?))
        }
        AgentRequest::Heartbeat(agent) => {
            session.deny_oom()?;
            let stored = existing(session, &keys, &agent)?;
            let now = timestamp(session.now_ms());
            stored.hset(&[(LAST_HEARTBEAT, now.as_bytes())]);
            Ok(Reply::OK)
        }
    }
}

/// The record of an agent that must exist, open for writing.
fn existing(session: &Session, keys: &TownKeys, agent: &str) -> Result<Key, CommandError> {
    let stored = record::open(session, &keys.agent(agent), Access::Write)?;
    if !stored.exists() {
        return Err(CommandError::err(format_args!("no such agent '{agent}'")));
    }
    Ok(stored)
}

fn set(session: &Session, keys: &TownKeys, agent: &str, fields: &FieldSet) -> CommandResult {
    session.deny_oom()?;
    let stored = record::open(session, &keys.agent(agent), Access::Write)?;
    let agents = AgentIndex::open(session, keys, Access::Write)?;
    let mailboxes = IdIndex::mailboxes(session, keys, Access::Write)?;
    record::replace(&stored, &fields);
    agents.set(&agent, fields.get(NAME).unwrap_or_default());
    mailboxes.add(&agent);
    Ok(Reply::OK)
}

fn delete(session: &Session, keys: &TownKeys, agent: &str) -> CommandResult {
    let names = keys.agent_keys(agent);
    for name in names.all() {
        session.check(name.as_bytes(), Access::Write)?;
    }
    let agents = AgentIndex::open(session, keys, Access::Write)?;
    let mailboxes = IdIndex::mailboxes(session, keys, Access::Write)?;
    let owned: Vec<Key> = names
        .all()
        .into_iter()
        .map(|name| session.open_unchecked(name.as_bytes(), Access::Write))
        .collect();
    let deleted = owned.iter().filter(|key| key.delete()).count() as u64;
    agents.remove(agent);
    mailboxes.remove(agent);
    let town = TenantId::of(keys.prefix());
    tenant_stats::forget_agents(town, Some(town.agent(agent)));
    Ok(Reply::count(deleted))
}

fn list(session: &Session, keys: &TownKeys) -> CommandResult {
    let agents = AgentIndex::open(session, keys, Access::Read)?;
    let mut listed = Vec::new();
    for (agent, _) in agents.entries() {
        let stored = record::open(session, &keys.agent(&agent), Access::Read)?;
        if stored.exists() {
            listed.push(record::reply(&stored));
        }
    }
    Ok(Reply::Array(listed))
}

fn by_name(session: &Session, keys: &TownKeys, name: &[u8]) -> CommandResult {
    let agents = AgentIndex::open(session, keys, Access::Read)?;
    for (agent, _) in agents.entries().into_iter().filter(|(_, indexed)| indexed == name) {
        let stored = record::open(session, &keys.agent(&agent), Access::Read)?;
        if stored.exists() {
            return Ok(record::reply(&stored));
        }
    }
    Ok(Reply::Array(Vec::new()))
}
