//! `TOWN.STOP REQUEST <town> <agent> [TTL <secs>]` (OK: set the agent's
//! stop flag, expiring after the TTL, default 3600 s), `CHECK <town>
//! <agent>` (1 if a stop was requested, else 0) and `CLEAR <town> <agent>`
//! (1 if a flag was removed, else 0). The flag's expiry is replicated as an
//! absolute time, so a replica expires it at the same instant. Each is a
//! Redis subcommand with the flags of its native analogue (SET EX, EXISTS,
//! UNLINK): CHECK runs on a replica, REQUEST is `deny-oom`.

use super::{unknown_subcommand, AGENT_ARG, TOWN_ARG};
use crate::entry::subcommand_entry_point;
use crate::events::Town;
use crate::glue::access::{Meta, Mode, Write};
use crate::glue::command::{Arg, ArgKind, CommandSpec, ContainerSpec, TenantUse};
use crate::glue::key::{Key, KeyKind};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::{Checked, Session};
use crate::metrics::count;
use crate::stores::town::index::IdIndex;
use crate::town::keys::TownKeys;
use crate::town::stop::{expires_at, DEFAULT_TTL_SECS, FLAG};
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command: a container of subcommands.
pub const SPEC: ContainerSpec = ContainerSpec {
    name: dreamtown_protocol::commands::town::STOP,
    summary: "Request, check or clear an agent's graceful-stop flag (the flag expires, by default after an hour)",
    subcommands: &[
        CommandSpec {
            name: "REQUEST",
            entry: subcommand_entry_point!(run, "REQUEST"),
            flags: "write deny-oom fast",
            tenant: TenantUse::Write,
            arity: -4,
            summary: "Set an agent's stop flag, expiring after the TTL (default an hour) (as SET EX)",
            complexity: "O(1)",
            args: &[TOWN_ARG, AGENT_ARG, Arg::new("seconds", ArgKind::Integer).token("TTL").optional()],
        },
        CommandSpec {
            name: "CHECK",
            entry: subcommand_entry_point!(run, "CHECK"),
            flags: "readonly fast",
            tenant: TenantUse::Read,
            arity: 4,
            summary: "1 if a stop was requested for the agent, else 0 (as EXISTS)",
            complexity: "O(1)",
            args: &[TOWN_ARG, AGENT_ARG],
        },
        CommandSpec {
            name: "CLEAR",
            entry: subcommand_entry_point!(run, "CLEAR"),
            flags: "write fast",
            tenant: TenantUse::Write,
            arity: 4,
            summary: "Remove an agent's stop flag; 1 if there was one, else 0 (as UNLINK)",
            complexity: "O(1)",
            args: &[TOWN_ARG, AGENT_ARG],
        },
    ],
};

fn open_flag<M: Mode>(session: &Session, checked: Checked<M>) -> Result<Key<M>, CommandError> {
    let flag = checked.open(session)?;
    flag.require(KeyKind::String)?;
    Ok(flag)
}

/// The parse step of subcommand `action` (upper case) on the arguments
/// after its name, through its request type (`request::Stop*`): the
/// town's keys, the agent and (for REQUEST) the `TTL`, if given.
pub(crate) fn parse<'a>(action: &str, argv: &'a [&'a [u8]]) -> Result<(TownKeys, &'a str, Option<u64>), CommandError> {
    let (town, agent, ttl) = match action {
        "REQUEST" => {
            let request::StopRequest { town, agent, ttl_secs } = request::StopRequest::parse(argv)?;
            (town, agent, ttl_secs)
        }
        "CHECK" => {
            let request::StopCheck { town, agent } = request::StopCheck::parse(argv)?;
            (town, agent, None)
        }
        "CLEAR" => {
            let request::StopClear { town, agent } = request::StopClear::parse(argv)?;
            (town, agent, None)
        }
        other => return Err(unknown_subcommand("TOWN.STOP", other)),
    };
    Ok((TownKeys::new(town), agent, ttl))
}

fn run(session: &Session, action: &str, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent, ttl) = parse(action, argv)?;
    match action {
        "REQUEST" => {
            let flag = session.check::<Write>(&keys.stop(agent))?;
            let mailboxes = IdIndex::<Write>::mailboxes(session, &keys)?;
            let flag = open_flag(session, flag)?;
            let mailboxes = IdIndex::open(session, mailboxes)?;
            let at = expires_at(session.now_ms(), ttl.unwrap_or(DEFAULT_TTL_SECS));
            flag.set_string_expiring(FLAG, at);
            mailboxes.add(agent);
            count::town(&keys, Some(agent), &[(Town::StopRequests, 1)]);
            Ok(Reply::of(reply::Done))
        }
        "CHECK" => {
            let flag = open_flag(session, session.check::<Meta>(&keys.stop(agent))?)?;
            Ok(Reply::of(reply::Flag(flag.exists())))
        }
        _ => {
            let flag = open_flag(session, session.check::<Write>(&keys.stop(agent))?)?;
            Ok(Reply::of(reply::Flag(flag.delete())))
        }
    }
}
