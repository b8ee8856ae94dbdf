//! `TOWN.ACTIVITY LOG <town> <agent> <text>` (OK: prepend an entry, keep
//! the newest 10, expire the log an hour from now, one atomic step) and
//! `TOWN.ACTIVITY GET <town> <agent>` (the newest 5 entries joined by
//! newlines, or nil). The expiry is replicated as an absolute time. Each is
//! a Redis subcommand with the flags of its native analogue (LPUSH,
//! LRANGE): GET runs on a replica, LOG is `deny-oom`.

use super::{unknown_subcommand, AGENT_ARG, TOWN_ARG};
use crate::entry::subcommand_entry_point;
use crate::events::Town;
use crate::glue::access::{Read, Write};
use crate::glue::command::{Arg, ArgKind, CommandSpec, ContainerSpec, TenantUse};
use crate::glue::key::End;
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::stores::town::index::IdIndex;
use crate::stores::town::mailbox::{check_list, open_list};
use crate::town::activity::{expires_at, recent, KEPT, SHOWN};
use crate::town::keys::TownKeys;
use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use dreamtown_protocol::request::Request;

/// The command: a container of subcommands.
pub const SPEC: ContainerSpec = ContainerSpec {
    name: dreamtown_protocol::commands::town::ACTIVITY,
    summary: "Log an agent's activity (newest 10 kept, expiring after an hour) or read its latest entries",
    subcommands: &[
        CommandSpec {
            name: "LOG",
            entry: subcommand_entry_point!(run, "LOG"),
            flags: "write deny-oom fast",
            tenant: TenantUse::Write,
            arity: 5,
            summary: "Prepend an entry to an agent's log, keep the newest 10, expire it an hour from now (as LPUSH)",
            complexity: "O(1)",
            args: &[TOWN_ARG, AGENT_ARG, Arg::new("text", ArgKind::String)],
        },
        CommandSpec {
            name: "GET",
            entry: subcommand_entry_point!(run, "GET"),
            // As LRANGE, but bounded (5 of at most 10 entries): fast.
            flags: "readonly fast",
            tenant: TenantUse::Read,
            arity: 4,
            summary: "An agent's newest 5 entries joined by newlines, or nil (as LRANGE 0 4)",
            complexity: "O(1)",
            args: &[TOWN_ARG, AGENT_ARG],
        },
    ],
};

/// The parse step of subcommand `action` (upper case) on the arguments
/// after its name, through its request type (`request::Activity*`): the
/// town's keys, the agent and, for LOG, the text.
pub(crate) fn parse<'a>(
    action: &str,
    argv: &'a [&'a [u8]],
) -> Result<(TownKeys, &'a str, Option<&'a [u8]>), CommandError> {
    let (town, agent, text) = match action {
        "LOG" => {
            let request::ActivityLog { town, agent, text } = request::ActivityLog::parse(argv)?;
            (town, agent, Some(text))
        }
        "GET" => {
            let request::ActivityGet { town, agent } = request::ActivityGet::parse(argv)?;
            (town, agent, None)
        }
        other => return Err(unknown_subcommand("TOWN.ACTIVITY", other)),
    };
    Ok((TownKeys::new(town), agent, text))
}

fn run(session: &Session, action: &str, argv: &[&[u8]]) -> CommandResult {
    let (keys, agent, text) = parse(action, argv)?;
    if let Some(text) = text {
        let log = check_list::<Write>(session, &keys.activity(agent))?;
        let mailboxes = IdIndex::<Write>::mailboxes(session, &keys)?;
        let log = open_list(session, log)?;
        let mailboxes = IdIndex::open(session, mailboxes)?;
        log.push(End::Head, &[text]);
        log.trim_to(KEPT);
        log.expire_at(expires_at(session.now_ms()));
        mailboxes.add(agent);
        count::town(&keys, Some(agent), &[(Town::ActivityLogged, 1)]);
        return Ok(Reply::of(reply::Done));
    }
    let log = open_list(session, check_list::<Read>(session, &keys.activity(agent))?)?;
    Ok(Reply::of(reply::MaybeBulk(recent(&log.range(0, SHOWN)))))
}
