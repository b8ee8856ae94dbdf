//! `TOWN.ACTIVITY <town> LOG <agent> <text>` (OK: prepend an entry, keep
//! the newest 10, expire the log an hour from now, one atomic step) and
//! `TOWN.ACTIVITY <town> GET <agent>` (the newest 5 entries joined by
//! newlines, or nil). The expiry is replicated as an absolute time.

use super::index::IdIndex;
use super::mailbox::open_list;
use super::{id, subcommand, town, AGENT_ARG, TOWN_ARG};
use crate::module::args::Args;
use crate::module::command::{entry_point, Arg, ArgKind, CommandSpec, TenantUse};
use crate::module::key::End;
use crate::module::reply::{CommandError, CommandResult, Reply};
use crate::town::keys::TownKeys;
use crate::module::session::{Access, Session};
use crate::module::stats;
use crate::module::tenant_stats::Town;
use crate::town::activity::{expires_at, recent, KEPT, SHOWN};

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: "TOWN.ACTIVITY",
    entry: entry_point!(run),
    flags: "write fast",
    tenant: TenantUse::Write,
    arity: -4,
    summary: "Log an agent's activity (newest 10 kept, expiring after an hour) or read its latest entries",
    complexity: "O(1)",
    args: &[
        TOWN_ARG,
        Arg::new(
            "action",
            ArgKind::OneOf(&[
                Arg::new("log", ArgKind::Block(&[AGENT_ARG, Arg::new("text", ArgKind::String)])).token("LOG"),
                Arg::new("get", ArgKind::Block(&[AGENT_ARG])).token("GET"),
            ]),
        ),
    ],
};

/// The parse step: the town's keys, the agent and, for LOG, the text.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(TownKeys, String, Option<&'a [u8]>), CommandError> {
    let mut args = Args::new(argv);
    let keys = town(&mut args)?;
    let action = subcommand(&mut args, "TOWN.ACTIVITY", &["LOG", "GET"])?;
    let agent = id(&mut args, "agent id")?;
    let text = match action.as_str() {
        "LOG" => Some(args.required("text")?),
        _ => None,
    };
    args.end()?;
    Ok((keys, agent, text))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent, text) = parse(argv)?;
    if let Some(text) = text {
        session.deny_oom()?;
        let log = open_list(session, &keys.activity(&agent), Access::Write)?;
        let mailboxes = IdIndex::mailboxes(session, &keys, Access::Write)?;
        log.push(End::Head, &[text]);
        log.trim_to(KEPT);
        log.expire_at(expires_at(session.now_ms()));
        mailboxes.add(&agent);
        stats::TOWN_ACTIVITY_LOGGED.bump();
        super::count(&keys, Some(&agent), Town::ActivityLogged, 1);
        return Ok(Reply::OK);
    }
    let log = open_list(session, &keys.activity(&agent), Access::Read)?;
    Ok(Reply::bulk_or_nil(recent(&log.range(0, SHOWN))))
}
