//! The `TOWN.*` commands: parse arguments, open the town's keys (ACL and
//! type checked before anything is written) through
//! [`crate::stores::town::mailbox`], [`index`](crate::stores::town::index)
//! and [`record`](crate::stores::town::record), apply the rules of
//! [`crate::town`], count the outcome for INFO, reply.

pub mod ack;
pub mod activity;
pub mod agent;
pub mod backlog;
pub mod broadcast;
pub mod extend;
pub mod len;
pub mod peek;
pub mod reclaim;
pub mod recv;
pub mod requeue;
pub mod reset;
pub mod send;
pub mod settings;
pub mod stats;
pub mod stop;
pub mod task;

use crate::glue::command::{Arg, ArgKind};
use crate::glue::reply::CommandError;
use crate::town::message::MessageError;

/// The town argument, for docs.
pub const TOWN_ARG: Arg = Arg::tenant("town");
/// An agent id argument, for docs.
pub const AGENT_ARG: Arg = Arg::new("agent-id", ArgKind::String);
/// A task id argument, for docs.
pub const TASK_ARG: Arg = Arg::new("task-id", ArgKind::String);
/// `field value [field value ...]`, for docs.
pub const FIELDS_ARG: Arg =
    Arg::new("data", ArgKind::Block(&[Arg::new("field", ArgKind::String), Arg::new("value", ArgKind::String)]))
        .multiple();

/// A subcommand word the parse step does not know: only reached by a
/// caller other than Redis (the fuzz targets), which dispatches the
/// registered words alone.
pub fn unknown_subcommand(command: &str, word: &str) -> CommandError {
    CommandError::err(format_args!("unknown subcommand '{word}'. Try {command} HELP."))
}

/// A message validation error as a reply.
pub fn invalid_message(error: MessageError) -> CommandError {
    CommandError::err(error)
}
