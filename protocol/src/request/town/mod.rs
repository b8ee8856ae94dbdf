//! The `TOWN.*` requests, and the argument readers they share.

mod agent;
mod container_args;
mod fields;
mod task;

pub use agent::{AgentByName, AgentDel, AgentGet, AgentHeartbeat, AgentIncr, AgentList, AgentSet, Counter};
pub use fields::{FieldSet, FieldSetError};
pub use task::{TaskDel, TaskGet, TaskList, TaskSet};
