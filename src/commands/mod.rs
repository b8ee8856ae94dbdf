//! The command layer: one file per command, each parsing its arguments,
//! opening its keys, calling the state machine and replying.

pub mod dreams;
pub mod dry_run;
pub mod options;
pub mod settings;
pub mod town;

use crate::glue::command::{CommandSpec, ContainerSpec};
use crate::services::lease_index::LeaseFamily;

/// The tenant families whose in-flight work can be leased.
pub fn lease_families() -> Vec<&'static LeaseFamily> {
    vec![&crate::stores::dreams::leases::FAMILY, &crate::stores::town::leases::FAMILY]
}

/// Every command without subcommands the module registers.
pub fn all() -> Vec<&'static CommandSpec> {
    vec![
        &dreams::fire::SPEC,
        &dreams::record::SPEC,
        &dreams::settle::SPEC,
        &dreams::drain::SPEC,
        &dreams::ack::SPEC,
        &dreams::recover::SPEC,
        &dreams::redrive::SPEC,
        &dreams::len::SPEC,
        &dreams::counters::SPEC,
        &dreams::extend::SPEC,
        &dreams::inflight::SPEC,
        &dreams::stats::SPEC,
        &dreams::pause::SPEC,
        &dreams::resume::SPEC,
        &town::send::SPEC,
        &town::recv::SPEC,
        &town::ack::SPEC,
        &town::requeue::SPEC,
        &town::extend::SPEC,
        &town::len::SPEC,
        &town::peek::SPEC,
        &town::reclaim::SPEC,
        &town::broadcast::SPEC,
        &town::reset::SPEC,
        &town::stats::SPEC,
        &dry_run::SPEC,
    ]
}

/// Every command with subcommands (`TOWN.AGENT GET <town> <agent>`) the
/// module registers.
pub fn containers() -> Vec<&'static ContainerSpec> {
    vec![
        &dreams::limit::SPEC,
        &town::agent::SPEC,
        &town::task::SPEC,
        &town::activity::SPEC,
        &town::backlog::SPEC,
        &town::stop::SPEC,
    ]
}

#[cfg(test)]
mod tests {
    /// The registry names exactly the protocol's commands and
    /// subcommands, in its order (the client and the fuzz targets read
    /// the table).
    #[test]
    fn the_registry_is_the_protocol_table() {
        let plain = super::all().into_iter().map(|spec| (spec.name, Vec::new()));
        let containers = super::containers()
            .into_iter()
            .map(|spec| (spec.name, spec.subcommands.iter().map(|sub| sub.name).collect::<Vec<_>>()));
        let registered: Vec<_> = plain.chain(containers).collect();
        let table: Vec<_> = dreamtown_protocol::commands::ALL
            .iter()
            .map(|command| (command.name, command.subcommands.to_vec()))
            .collect();
        assert_eq!(registered, table);
    }
}
