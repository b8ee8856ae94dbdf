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

use crate::dreams::region::QueueKeys;
use crate::glue::command::{Arg, ArgKind};
use crate::glue::session::Session;
use crate::services::waiters;

pub use crate::dreams::message::DEFAULT_NODE;

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
