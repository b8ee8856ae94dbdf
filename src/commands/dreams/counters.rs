//! `DREAMS.COUNTERS <org> <project> <memory-type>`: the region's counter
//! fields as field/value pairs, a map in RESP3 (empty if the region was
//! never written).

use crate::dreams::region::{RegionKey, RegionRef};
use crate::entry::entry_point;
use crate::glue::command::{CommandSpec, TenantUse};
use crate::glue::reply::{CommandError, CommandResult, Reply};
use crate::glue::session::Session;
use crate::stores::dreams::store::RedisRegion;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams as request;
use dreamtown_protocol::request::Request;

/// The command.
pub const SPEC: CommandSpec = CommandSpec {
    name: dreamtown_protocol::commands::dreams::COUNTERS,
    entry: entry_point!(run),
    flags: "readonly fast",
    tenant: TenantUse::Read,
    arity: 4,
    summary: "A region's shared counters: memories, edges, last_success, pending, settled_generation",
    complexity: "O(1)",
    args: &super::REGION_ARGS,
};

/// The parse step ([`request::Counters`]).
pub(crate) fn parse<'a>(argv: &'a [&'a [u8]]) -> Result<RegionKey, CommandError> {
    let request = request::Counters::parse(argv)?;
    Ok(RegionRef::from(request.region).to_key())
}

fn run(session: &Session, argv: &[&[u8]]) -> CommandResult {
    let region = parse(argv)?;
    let mut fields = RedisRegion::read_fields(session, &region)?;
    fields.sort();
    Ok(Reply::of(reply::Counters { fields }))
}
