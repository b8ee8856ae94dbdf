//! The `TOWN.*` requests, and the argument readers they share.

mod activity;
mod agent;
mod backlog;
mod container_args;
mod fields;
mod stop;
mod task;

pub use activity::{ActivityGet, ActivityLog};
pub use agent::{AgentByName, AgentDel, AgentGet, AgentHeartbeat, AgentIncr, AgentList, AgentSet, Counter};
pub use backlog::{BacklogLen, BacklogList, BacklogPop, BacklogPush, BacklogRemove};
pub use fields::{FieldSet, FieldSetError};
pub use stop::{StopCheck, StopClear, StopRequest, STOP_TTL_SECS_MAX};
pub use task::{TaskDel, TaskGet, TaskList, TaskSet};
