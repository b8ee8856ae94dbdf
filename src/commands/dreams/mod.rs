//! The `DREAMS.*` commands: parse arguments, open the organization's keys
//! through [`crate::stores::dreams::store`], run the state machine of
//! [`crate::dreams`], count the outcome for INFO, reply.

pub mod ack;
pub mod counters;
pub mod drain;
pub mod extend;
pub mod fire;
pub mod inflight;
pub mod len;
pub mod limit;
pub mod pause;
pub mod record;
pub mod recover;
pub mod redrive;
pub mod resume;
pub mod settings;
pub mod settle;
pub mod stats;

use crate::dreams::region::{QueueKeys, RegionKey, RegionRef};
use crate::glue::command::{Arg, ArgKind};
use crate::glue::reply::{CommandError, Reply};
use crate::glue::session::Session;
use crate::services::waiters;
use dreamtown_protocol::args::Args;
use dreamtown_protocol::request::dreams as request;

pub use crate::dreams::message::DEFAULT_NODE;

/// Read `<org>`.
pub use dreamtown_protocol::request::dreams::organization;

/// Read `<org> <project> <memory-type>`.
pub fn region(args: &mut Args<'_>) -> Result<RegionKey, CommandError> {
    region_ref(args).map(|region| region.to_key())
}

/// [`region`] borrowed from the arguments: the hot commands (FIRE, RECORD)
/// copy the names nowhere but into the key names and the payload.
pub fn region_ref<'a>(args: &mut Args<'a>) -> Result<RegionRef<'a>, CommandError> {
    request::Region::parse(args).map(RegionRef::from)
}

/// `[outcome, memories, edges]`: a counted write's reply (RECORD, ACK).
pub fn counted_reply(outcome: &'static std::ffi::CStr, memories: i64, edges: i64) -> Reply {
    Reply::Counted(outcome, memories, edges)
}

/// The one-trip `DREAMS.DRAIN ... ACK`'s reply: the acknowledgement's
/// counted reply, then what the drain answers (a payload or nil, the
/// `COUNT` array): `[[outcome, memories, edges], drained]`.
pub fn acked_then_drained(acked: Reply, drained: Reply) -> Reply {
    Reply::pair(acked, drained)
}

pub use crate::dreams::fire_id::new_fire_id;
use crate::dreams::fire_id::FireId;

/// The region arguments, for docs.
pub const REGION_ARGS: [Arg; 3] =
    [Arg::tenant("org"), Arg::new("project", ArgKind::String), Arg::new("memory-type", ArgKind::Integer)];

/// `[NODE id]`, for docs.
pub const NODE_ARG: Arg = Arg::new("node", ArgKind::String).token("NODE").optional();

/// `[TRIGGER m e min age]`, for docs.
pub const TRIGGER_ARG: Arg = Arg::new(
    "trigger",
    ArgKind::Block(&[
        Arg::new("memory-threshold", ArgKind::Integer),
        Arg::new("edge-threshold", ArgKind::Integer),
        Arg::new("min-interval-secs", ArgKind::Integer),
        Arg::new("age-floor-secs", ArgKind::Integer),
    ]),
)
.token("TRIGGER")
.optional();

/// Capacity may be back for `org`'s blocked drainers (a limit lifted or
/// raised, a pause ended, a place in flight freed): the first one is
/// served after this command if the organization's limits let it (its
/// waiter queue's pass looks). Nothing when nobody waits anywhere.
pub fn wake_drainers(session: &Session, org: &str) {
    if waiters::anyone_waits() {
        waiters::work_arrived(session.ctx(), QueueKeys::new(org).ready.as_bytes());
    }
}
