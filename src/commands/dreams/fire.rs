//! `DREAMS.FIRE <org> <project> <memory-type> [NODE <id>]`: queue an
//! explicit fire of a region under the ceiling. Reply `queued` or `dropped`.

use super::{DEFAULT_NODE, NODE_ARG, REGION_ARGS};
use crate::commands::dreams::settings;
use crate::dreams::fire::{fire, FireOutcome};
use crate::dreams::message::FireIdText;
use crate::dreams::region::RegionRef;
use crate::entry::entry_point;
use crate::events::Dreams;
use crate::glue::command::{CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::metrics::count;
use crate::stores::dreams::store::FireQueue;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::FIRE,
    entry: entry_point!(run),
    flags: "write deny-oom fast",
    tenant: TenantUse::Write,
    arity: -4,
    summary: "Queue an explicit consolidation fire for a region, unless the queue is at its ceiling",
    complexity: "O(1)",
    args: &[REGION_ARGS[0], REGION_ARGS[1], REGION_ARGS[2], NODE_ARG],
};

/// The parse step ([`request::Fire`]): the region and the `NODE`, if given.
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<(RegionRef<'a>, Option<&'a str>), CommandError> {
    let request = request::Fire::parse(argv)?;
    Ok((request.region.into(), request.node))
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let (region, fired_by) = parse(argv)?;
    let mut queue = FireQueue::check(session, region.org)?.open(session)?;
    let fired_by = fired_by.unwrap_or(DEFAULT_NODE);
    let fire_id = super::FireId::new();
    let outcome = fire(&mut queue, region, fired_by, FireIdText::Made(&fire_id), settings::queue_max());
    let counted = match outcome {
        FireOutcome::Queued => Dreams::FiredFire,
        FireOutcome::Dropped => Dreams::DroppedFire,
    };
    count::dreams(queue.tenant(), counted, 1);
    Ok(Reply::of(reply::Fire(outcome)))
}
