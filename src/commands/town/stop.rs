//! `TOWN.STOP <town> REQUEST <agent> [TTL <secs>]` (OK: set the agent's
//! stop flag, expiring after the TTL, default 3600 s), `CHECK <agent>`
//! (1 if a stop was requested, else 0) and `CLEAR <agent>` (1 if a flag was
//! removed, else 0). The flag's expiry is replicated as an absolute time,
//! so a replica expires it at the same instant.

use super::index::IdIndex;
use super::{id, subcommand, town, unknown_option, AGENT_ARG, TOWN_ARG};
use crate::module::args::Args;
use crate::module::command::{entry_point, Arg, ArgKind, CommandSpec, TenantUse};
use crate::module::key::{Key, KeyKind};
use crate::module::reply::{CommandError, CommandResult, Reply};
use crate::module::session::{Access, Session};
use crate::module::stats;
use crate::module::tenant_stats::Town;
use crate::town::keys::TownKeys;
use crate::town::stop::{expires_at, DEFAULT_TTL_SECS, FLAG, MAX_TTL_SECS};

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: "TOWN.STOP",
    entry: entry_point!(run),
    flags: "write fast",
    tenant: TenantUse::Write,
    arity: -4,
    summary: "Request, check or clear an agent's graceful-stop flag (the flag expires, by default after an hour)",
    complexity: "O(1)",
    args: &[
        TOWN_ARG,
        Arg::new(
            "action",
            ArgKind::OneOf(&[
                Arg::new(
                    "request",
                    ArgKind::Block(&[AGENT_ARG, Arg::new("seconds", ArgKind::Integer).token("TTL").optional()]),
                )
                .token("REQUEST"),
                Arg::new("check", ArgKind::Block(&[AGENT_ARG])).token("CHECK"),
                Arg::new("clear", ArgKind::Block(&[AGENT_ARG])).token("CLEAR"),
            ]),
        ),
    ],
};

const SUBCOMMANDS: &[&str] = &["REQUEST", "CHECK", "CLEAR"];

fn open_flag(session: &Session, keys: &TownKeys, agent: &str, access: Access) -> Result<Key, CommandError> {
    let flag = session.open(keys.stop(agent).as_bytes(), access)?;
    flag.require(KeyKind::String)?;
    Ok(flag)
}

/// The parse step: the town's keys, the subcommand, the agent and (for
/// REQUEST) the `TTL`, if given.
pub(crate) fn parse(argv: &[&[u8]]) -> Result<(TownKeys, String, String, Option<u64>), CommandError> {
    let mut args = Args::new(argv);
    let keys = town(&mut args)?;
    let action = subcommand(&mut args, "TOWN.STOP", SUBCOMMANDS)?;
    let agent = id(&mut args, "agent id")?;
    let mut ttl = None;
    if action != "REQUEST" {
        args.end()?;
    }
    while let Some(option) = args.option() {
        match option.as_str() {
            "TTL" if ttl.is_none() => {
                let secs = args.unsigned("TTL (seconds)", MAX_TTL_SECS)?;
                if secs == 0 {
                    return Err(CommandError::err("TTL must be at least 1 second"));
                }
                ttl = Some(secs);
            }
            "TTL" => return Err(CommandError::err("TTL given more than once")),
            other => return Err(unknown_option(other)),
        }
    }
    Ok((keys, action, agent, ttl))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, action, agent, ttl) = parse(argv)?;
    match action.as_str() {
        "REQUEST" => {
            session.deny_oom()?;
            let flag = open_flag(session, &keys, &agent, Access::Write)?;
            let mailboxes = IdIndex::mailboxes(session, &keys, Access::Write)?;
            let at = expires_at(session.now_ms(), ttl.unwrap_or(DEFAULT_TTL_SECS));
            flag.set_string_expiring(FLAG, at);
            mailboxes.add(&agent);
            stats::TOWN_STOP_REQUESTS.bump();
            super::count(&keys, Some(&agent), Town::StopRequests, 1);
            Ok(Reply::OK)
        }
        "CHECK" => {
            let flag = open_flag(session, &keys, &agent, Access::Read)?;
            Ok(Reply::Integer(i64::from(flag.exists())))
        }
        _ => {
            let flag = open_flag(session, &keys, &agent, Access::Write)?;
            Ok(Reply::Integer(i64::from(flag.delete())))
        }
    }
}
