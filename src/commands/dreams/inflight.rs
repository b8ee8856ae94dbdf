//! `DREAMS.INFLIGHT <org> [LIMIT <offset> <count>]`: for operators, the
//! in-flight items, oldest first, each as `[payload, deadline-ms]` (nil
//! deadline: not leased); with `LIMIT`, `count` of them from position
//! `offset` (as `ZRANGEBYSCORE ... LIMIT`), so a console pages through
//! 100,000 items in flight without a reply of them all. Expired items
//! back in ready are not in flight and not listed.

use crate::entry::entry_point;
use crate::glue::access::Read;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::lease::EXPIRED;
use crate::stores::dreams::store::RedisQueue;
use crate::stores::leases::RedisLeases;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::INFLIGHT,
    entry: entry_point!(run),
    flags: "readonly",
    tenant: TenantUse::Read,
    arity: -2,
    summary: "List the in-flight fires with their lease deadlines (unix ms, nil when not leased), all or a range",
    complexity: "O(S + N log M) where S is the offset, N the number of items listed and M of leased ones",
    args: &[
        Arg::tenant("org"),
        Arg::new(
            "limit",
            ArgKind::Block(&[Arg::new("offset", ArgKind::Integer).token("LIMIT"), Arg::new("count", ArgKind::Integer)]),
        )
        .optional(),
    ],
};

/// What to list ([`request::Inflight`]): `(org, offset, count)`, every
/// item without `LIMIT`.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(&'a str, u64, u64), CommandError> {
    let request = request::Inflight::parse(argv)?;
    let request::Page { offset, count } = request.limit.unwrap_or(request::Page { offset: 0, count: u64::MAX });
    Ok((request.org, offset, count))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (org, offset, count) = parse(argv)?;
    let processing = RedisQueue::check_in_flight::<Read>(session, org)?;
    let leases = RedisLeases::check_read(session, org)?;
    let in_flight = RedisQueue::read_in_flight(session, processing, offset, count)?;
    let leases = RedisLeases::open(session, leases)?;
    let items = in_flight
        .into_iter()
        .map(|payload| {
            let deadline = leases.score_of(&payload).filter(|score| *score > EXPIRED);
            (payload, deadline)
        })
        .collect();
    Ok(Reply::of(reply::Inflight { items }))
}
