//! The command layer: one file per command, each parsing its arguments,
//! opening its keys, calling the state machine and replying.

pub mod dreams;

use crate::module::command::CommandSpec;

/// Every command the module registers.
pub fn all() -> Vec<&'static CommandSpec> {
    vec![
        &dreams::fire::SPEC,
        &dreams::record::SPEC,
        &dreams::settle::SPEC,
        &dreams::drain::SPEC,
        &dreams::ack::SPEC,
        &dreams::recover::SPEC,
        &dreams::len::SPEC,
        &dreams::counters::SPEC,
    ]
}
