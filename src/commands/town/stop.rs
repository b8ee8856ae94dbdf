//! `TOWN.STOP REQUEST <town> <agent> [TTL <secs>]` (OK: set the agent's
//! stop flag, expiring after the TTL, default 3600 s), `CHECK <town>
//! <agent>` (1 if a stop was requested, else 0) and `CLEAR <town> <agent>`
//! (1 if a flag was removed, else 0). The flag's expiry is replicated as an
//! absolute time, so a replica expires it at the same instant. Each is a
//! Redis subcommand with the flags of its native analogue (SET EX, EXISTS,
//! UNLINK): CHECK runs on a replica, REQUEST is `deny-oom`.

use super::{id, town, unknown_subcommand, AGENT_ARG, TOWN_ARG};
use crate::commands::options::{given_twice, unknown_option};
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
use crate::town::stop::{expires_at, DEFAULT_TTL_SECS, FLAG, MAX_TTL_SECS};
use dreamtown_protocol::args::Args;

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
/// after its name: the town's keys, the agent and (for REQUEST) the
/// `TTL`, if given.
pub(crate) fn parse(action: &str, argv: &[&[u8]]) -> Result<(TownKeys, String, Option<u64>), CommandError> {
    if !matches!(action, "REQUEST" | "CHECK" | "CLEAR") {
        return Err(unknown_subcommand("TOWN.STOP", action));
    }
    let mut args = Args::new(argv);
    let keys = town(&mut args)?;
    let agent = id(&mut args, "agent id")?;
    let mut ttl = None;
    if action != "REQUEST" {
        args.end()?;
    }
    while let Some(option) = args.option() {
        match option.as_str() {
            "TTL" if ttl.is_none() => {
                ttl = Some(args.unsigned_in("TTL (seconds)", 1, MAX_TTL_SECS)?);
            }
            "TTL" => return Err(given_twice("TTL")),
            other => return Err(unknown_option(other)),
        }
    }
    Ok((keys, agent, ttl))
}

fn run(session: &Session, action: &str, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent, ttl) = parse(action, argv)?;
    match action {
        "REQUEST" => {
            let flag = session.check::<Write>(&keys.stop(&agent))?;
            let mailboxes = IdIndex::<Write>::mailboxes(session, &keys)?;
            let flag = open_flag(session, flag)?;
            let mailboxes = IdIndex::open(session, mailboxes)?;
            let at = expires_at(session.now_ms(), ttl.unwrap_or(DEFAULT_TTL_SECS));
            flag.set_string_expiring(FLAG, at);
            mailboxes.add(&agent);
            count::town(&keys, Some(&agent), &[(Town::StopRequests, 1)]);
            Ok(Reply::OK)
        }
        "CHECK" => {
            let flag = open_flag(session, session.check::<Meta>(&keys.stop(&agent))?)?;
            Ok(Reply::Integer(i64::from(flag.exists())))
        }
        _ => {
            let flag = open_flag(session, session.check::<Write>(&keys.stop(&agent))?)?;
            Ok(Reply::Integer(i64::from(flag.delete())))
        }
    }
}
