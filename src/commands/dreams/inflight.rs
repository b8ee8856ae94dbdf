//! `DREAMS.INFLIGHT <org>`: for operators, every in-flight item, oldest
//! first, each as `[payload, deadline-ms]` (nil deadline: not leased).
//! Expired items back in ready are not in flight and not listed.

use super::organization;
use crate::dreams::lease::EXPIRED;
use crate::entry::entry_point;
use crate::glue::access::Read;
use crate::glue::args::Args;
use crate::glue::command::{Arg, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::dreams::store::{RedisLeases, RedisQueue};

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: "DREAMS.INFLIGHT",
    entry: entry_point!(run),
    flags: "readonly",
    tenant: TenantUse::Read,
    arity: 2,
    summary: "List the in-flight fires with their lease deadlines (unix ms, nil when not leased)",
    complexity: "O(N log M) where N is the number of in-flight items and M of leased ones",
    args: &[Arg::tenant("org")],
};

/// The parse step.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<&'a str, CommandError> {
    let mut args = Args::new(argv);
    let org = organization(&mut args)?;
    args.end()?;
    Ok(org)
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let org = parse(argv)?;
    let processing = RedisQueue::check_in_flight::<Read>(session, org)?;
    let leases = RedisLeases::check_read(session, org)?;
    let in_flight = RedisQueue::read_in_flight(session, processing)?;
    let leases = RedisLeases::open(session, leases)?;
    let deadlines: std::collections::HashMap<Vec<u8>, i64> =
        leases.entries().into_iter().filter(|(_, score)| *score > EXPIRED).collect();
    let items = in_flight
        .into_iter()
        .map(|payload| {
            let deadline = deadlines.get(&payload).map_or(Reply::Nil, |ms| Reply::Integer(*ms));
            Reply::Array(vec![Reply::Bulk(payload), deadline])
        })
        .collect();
    Ok(Reply::Array(items))
}
