//! `DREAMS.LIMIT SET|GET|CLEAR <org> ...`: an organization's fair share
//! (`crate::dreams::limits`), kept in its limits key
//! (`exocortex:dreams:{<org>}:limits`, in the organization's slot: it
//! replicates, persists and moves with the organization). Each
//! subcommand is a Redis subcommand with the flags of its native
//! analogue (docs/flags.md).
//!
//! * `SET <org> [CONCURRENCY <n>|NONE] [RATE <count> <seconds>|NONE]`:
//!   `OK`; sets what is given (at least one), keeps the rest (`NONE`
//!   removes one). Blocked drainers the change lets through are served.
//! * `GET <org>`: a map (RESP2: field/value pairs) `concurrency`,
//!   `rate_count`, `rate_seconds` (nil when not set), `in_flight`,
//!   `tokens_left` (nil without a rate), `paused` (0 or 1).
//! * `CLEAR <org>`: removes the concurrency cap and the rate (a pause
//!   stays: `DREAMS.RESUME`); 1 if there was one, else 0.

use super::wake_drainers;
use crate::dreams::limits::Rate;
use crate::dreams::region::QueueKey;
use crate::entry::subcommand_entry_point;
use crate::glue::access::Meta;
use crate::glue::command::{Arg, ArgKind, CommandSpec, ContainerSpec, TenantUse};
use crate::glue::key::KeyKind;
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::dreams::limits::{self, RedisLimits};
use crate::stores::dreams::queue_names::queue_names;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command: a container of subcommands.
pub const SPEC: ContainerSpec = ContainerSpec {
    name: dreamtown_protocol::commands::dreams::LIMIT,
    summary: "Set, get or clear an organization's fair share: a cap on fires in flight and a rate of drains",
    subcommands: &[
        CommandSpec {
            name: "SET",
            entry: subcommand_entry_point!(run, "SET"),
            flags: "write deny-oom fast",
            tenant: TenantUse::Write,
            // At least the organization: a SET without a limit is answered
            // with what it lacks, not a bare arity error.
            arity: -3,
            summary: "Set an organization's concurrency cap and/or drain rate (NONE removes one; as SET)",
            complexity: "O(1)",
            args: &[
                Arg::tenant("org"),
                Arg::new("concurrency", ArgKind::OneOf(&[Arg::new("cap", ArgKind::Integer), Arg::keyword("NONE")]))
                    .token("CONCURRENCY")
                    .optional(),
                Arg::new(
                    "rate",
                    ArgKind::OneOf(&[
                        Arg::new(
                            "per",
                            ArgKind::Block(&[
                                Arg::new("count", ArgKind::Integer),
                                Arg::new("seconds", ArgKind::Integer),
                            ]),
                        ),
                        Arg::keyword("NONE"),
                    ]),
                )
                .token("RATE")
                .optional(),
            ],
        },
        CommandSpec {
            name: "GET",
            entry: subcommand_entry_point!(run, "GET"),
            flags: "readonly fast",
            tenant: TenantUse::Read,
            arity: 3,
            summary: "An organization's limits, fires in flight, rate tokens left and whether it is paused (a map)",
            complexity: "O(1)",
            args: &[Arg::tenant("org")],
        },
        CommandSpec {
            name: "CLEAR",
            entry: subcommand_entry_point!(run, "CLEAR"),
            flags: "write fast",
            tenant: TenantUse::Write,
            arity: 3,
            summary: "Remove an organization's concurrency cap and rate (a pause stays; as DEL)",
            complexity: "O(1)",
            args: &[Arg::tenant("org")],
        },
    ],
};

/// What `DREAMS.LIMIT SET` changes: each limit given, `Some(None)` to remove it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct LimitChange {
    concurrency: Option<Option<u64>>,
    rate: Option<Option<Rate>>,
}

/// What DREAMS.LIMIT was asked.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LimitRequest<'a> {
    Set(&'a str, LimitChange),
    Get(&'a str),
    Clear(&'a str),
}

/// The parse step of subcommand `action` (upper case) on the arguments
/// after its name ([`request::LimitSet`], [`request::LimitGet`],
/// [`request::LimitClear`]).
pub(crate) fn parse<'a>(action: &str, argv: &'a [&'a [u8]]) -> Result<LimitRequest<'a>, CommandError> {
    Ok(match action {
        "SET" => {
            let request = request::LimitSet::parse(argv)?;
            let rate = request.rate.map(|rate| rate.map(Rate::from));
            LimitRequest::Set(request.org, LimitChange { concurrency: request.concurrency, rate })
        }
        "GET" => LimitRequest::Get(request::LimitGet::parse(argv)?.org),
        "CLEAR" => LimitRequest::Clear(request::LimitClear::parse(argv)?.org),
        other => return Err(CommandError::err(format_args!("unknown subcommand '{other}'. Try DREAMS.LIMIT HELP."))),
    })
}

fn run(session: &Session, action: &str, argv: &[&[u8]]) -> CommandResult {
    match parse(action, argv)? {
        LimitRequest::Set(org, change) => set(session, org, change),
        LimitRequest::Get(org) => get(session, org),
        LimitRequest::Clear(org) => clear(session, org),
    }
}

fn set(session: &Session, org: &str, change: LimitChange) -> CommandResult {
    let (mut stored, _) = RedisLimits::open_for_change(session, RedisLimits::check_for_change(session, org)?)?;
    let limits = stored.limits_mut();
    if let Some(concurrency) = change.concurrency {
        limits.concurrency = concurrency;
    }
    if let Some(rate) = change.rate {
        // A new rate keeps the bucket's state (what was taken lately
        // still counts, at the new interval); none drops it.
        limits.rate = rate;
        if rate.is_none() {
            limits.tat_ns = None;
        }
    }
    stored.store(session, org);
    wake_drainers(session, org);
    Ok(Reply::of(reply::Done))
}

fn clear(session: &Session, org: &str) -> CommandResult {
    let (mut stored, unreadable) = RedisLimits::open_for_change(session, RedisLimits::check_for_change(session, org)?)?;
    let limits = stored.limits_mut();
    let had = unreadable || limits.concurrency.is_some() || limits.rate.is_some();
    limits.concurrency = None;
    limits.rate = None;
    limits.tat_ns = None;
    if had {
        stored.store(session, org);
        wake_drainers(session, org);
    }
    Ok(Reply::of(reply::Flag(had)))
}

fn get(session: &Session, org: &str) -> CommandResult {
    // Both keys checked before either opens: the limits are read, the
    // in-flight list only measured (as `LLEN`).
    let checked = limits::check_read(session, org)?;
    let [processing] = queue_names(org, [QueueKey::Processing]);
    let processing = session.check::<Meta>(processing)?;
    let limits = limits::open_read(session, checked)?;
    let processing = processing.open(session)?;
    processing.require(KeyKind::List)?;
    Ok(Reply::of(reply::LimitGet {
        concurrency: limits.concurrency,
        rate_count: limits.rate.map(|rate| rate.count),
        rate_seconds: limits.rate.map(|rate| rate.seconds),
        in_flight: processing.len(),
        tokens_left: limits.tokens_at(session.now_ms()),
        paused: limits.paused_since_ms.is_some(),
    }))
}
