//! The `TOWN.*` requests, and the argument readers they share: the town
//! (a tenant name) and an agent or task id (non-empty UTF-8).

mod ack;
mod activity;
mod agent;
mod backlog;
mod broadcast;
mod container_args;
mod extend;
mod fields;
mod len;
mod peek;
mod reclaim;
mod recv;
mod requeue;
mod reset;
mod send;
mod stats;
mod stop;
mod task;

pub use ack::Ack;
pub use activity::{ActivityGet, ActivityLog};
pub use agent::{AgentByName, AgentDel, AgentGet, AgentHeartbeat, AgentIncr, AgentList, AgentSet, Counter};
pub use backlog::{BacklogLen, BacklogList, BacklogPop, BacklogPush, BacklogRemove};
pub use broadcast::Broadcast;
pub use extend::Extend;
pub use fields::{FieldSet, FieldSetError};
pub use len::Len;
pub use peek::Peek;
pub use reclaim::Reclaim;
pub use recv::Recv;
pub use requeue::Requeue;
pub use reset::Reset;
pub use send::Send;
pub use stats::Stats;
pub use stop::{StopCheck, StopClear, StopRequest, STOP_TTL_SECS_MAX};
pub use task::{TaskDel, TaskGet, TaskList, TaskSet};

use crate::args::{tenant_str, Args};
use crate::error::CommandError;

/// Read `<town>`: a tenant name, borrowed from the arguments.
pub fn town<'a>(args: &mut Args<'a>) -> Result<&'a str, CommandError> {
    tenant_str(args.required("town")?, "town")
}

/// Read an agent or task id: non-empty UTF-8 (`what` names it in errors),
/// borrowed from the arguments.
pub fn id<'a>(args: &mut Args<'a>, what: &str) -> Result<&'a str, CommandError> {
    let text = args.text(what)?;
    if text.is_empty() {
        return Err(CommandError::err(format_args!("{what} must not be empty")));
    }
    Ok(text)
}

#[cfg(test)]
mod tests;
