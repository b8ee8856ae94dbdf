//! `DREAMS.SETTLE <org> <project> <memory-type> <event-id> <generation> [RETAIN]`:
//! once an effect's outbox row is acknowledged, raise the region's settled
//! generation (monotonically) and forget the effect's identity, unless
//! `RETAIN`. Reply `OK`.

use super::REGION_ARGS;
use crate::dreams::record::settle;
use crate::dreams::region::RegionRef;
use crate::entry::entry_point;
use crate::glue::command::{Arg, ArgKind, CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::dreams::store::{EventSet, RedisRegion};
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::SETTLE,
    entry: entry_point!(run),
    // The acknowledging half of RECORD's effect protocol, as XACK:
    // allowed when memory is full (it forgets the effect's identity; at
    // most it sets the region's one settled-generation field).
    flags: "write fast",
    tenant: TenantUse::Write,
    arity: -6,
    summary: "Settle a recorded effect: raise the settled generation and forget its identity",
    complexity: "O(1)",
    args: &[
        REGION_ARGS[0],
        REGION_ARGS[1],
        REGION_ARGS[2],
        Arg::new("event-id", ArgKind::String),
        Arg::new("generation", ArgKind::Integer),
        Arg::flag("RETAIN"),
    ],
};

/// The parse step ([`request::Settle`]): region, event id, generation, `RETAIN`.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(RegionRef<'a>, &'a [u8], i64, bool), CommandError> {
    let request = request::Settle::parse(argv)?;
    Ok((request.region.into(), request.event_id, request.generation, request.retain))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (region, event_id, generation, retain) = parse(argv)?;
    let mut counters = RedisRegion::check(session, region, EventSet::Open)?.open(session, true)?;
    settle(&mut counters, event_id, generation, retain);
    Ok(Reply::of(reply::Done))
}
