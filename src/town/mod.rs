//! The tinytown agent channel as plain Rust: key naming, message
//! validation and priority placement, rewriting a message's recipient for
//! reclaim, field sets of agent and task records, the activity-log rules,
//! stop-flag lifetimes and what a reset deletes.
//!
//! Nothing here touches Redis: the `TOWN.*` commands
//! (`src/commands/town/`) open keys and apply what these functions decide,
//! so the rules are unit-tested without a server.

pub mod activity;
pub mod age;
pub mod agent;
pub mod checked;
pub mod fields;
pub mod json;
pub mod keys;
pub mod lease;
pub mod message;
pub mod priority;
pub mod receive;
pub mod reclaim;
pub mod reset;
pub mod stop;
