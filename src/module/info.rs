//! `INFO dreamtown`: one section per concern, `dreamtown_<section>`, each
//! read from the layer that owns it (the counted events' totals, the
//! per-tenant tables, the waiters, the leases, the cluster, the write gate).

use std::ffi::{CStr, CString};

use crate::events::{self, Field};
use crate::glue::info::{Info, InfoProvider};
use crate::metrics::totals;
use crate::metrics::{fire_ages, tenant_stats};
use crate::services::{lease_timer, limits_index, slot_migration, waiters, write_gate};
use dreamtown_protocol::info::{self, InfoSection};

/// A section of `INFO dreamtown`: its name and its fields.
type Section = (CString, Vec<(CString, u64)>);

/// A service's INFO fields: names and values in its section's order.
type Report = fn() -> Vec<(&'static CStr, u64)>;

/// The fields of the counted events' table shown in INFO, from the
/// server's totals `counts` (by event).
fn counted<E: Copy + Into<usize>>(table: &[Field<E>], counts: &[u64]) -> Vec<(CString, u64)> {
    table
        .iter()
        .filter(|field| field.in_info())
        .filter_map(|field| Some((CString::new(field.name).ok()?, events::sum(field, counts))))
        .collect()
}

/// The sections after the counted events', each from the service that
/// reports it (in the protocol's order, `dreamtown_protocol::info`).
const REPORTS: [Report; 6] = [
    waiters::info_fields,
    tenant_stats_fields,
    lease_timer::info_fields,
    limits_index::info_fields,
    slot_migration::info_fields,
    write_gate::info_fields,
];

/// A section of the protocol's schema: its field names, the values the
/// service reports in the same order (a test holds the names equal).
fn described(section: &InfoSection, report: Report) -> Section {
    let fields = section
        .fields
        .iter()
        .zip(report())
        .filter_map(|(field, (_, value))| Some((CString::new(field.name).ok()?, value)))
        .collect();
    (CString::new(section.name).unwrap_or_default(), fields)
}

fn sections() -> Vec<Section> {
    let mut sections = vec![
        (c"dreams".to_owned(), counted(&events::DREAMS_FIELDS, &totals::dreams_counts())),
        (c"town".to_owned(), counted(&events::TOWN_FIELDS, &totals::town_counts())),
    ];
    sections.extend(info::SECTIONS.iter().zip(REPORTS).map(|(section, report)| described(section, report)));
    sections
}

/// What the per-tenant tables hold (`tenant_stats`, `fire_ages`).
fn tenant_stats_fields() -> Vec<(&'static CStr, u64)> {
    let mut fields = tenant_stats::info_fields();
    fields.extend(fire_ages::info_fields());
    fields
}

/// The INFO callback: one section per concern, `dreamtown_<section>`.
pub struct DreamtownInfo;

impl InfoProvider for DreamtownInfo {
    fn fill(info: &Info) {
        // `dreamtown_build`: which release this server runs (MODULE LIST
        // shows it as a number, MMmmpp).
        info.section(c"build");
        if let Ok(version) = std::ffi::CString::new(crate::version::VERSION) {
            info.text(c"version", &version);
        }
        for (name, fields) in sections() {
            info.section(&name);
            for (field, value) in fields {
                info.number(&field, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each service reports its section's fields under the protocol's
    /// names, in its order (INFO writes the schema's names). The write
    /// gate's report reads the server's context flags, so it is left to
    /// the tests against a server (the exporter's, `bench/lockstep.py`).
    #[test]
    fn the_services_report_the_schema() {
        for (section, report) in info::SECTIONS.iter().zip(REPORTS).filter(|(section, _)| section.name != "write_gate")
        {
            let reported: Vec<String> =
                report().into_iter().map(|(name, _)| name.to_string_lossy().into_owned()).collect();
            let schema: Vec<&str> = section.fields.iter().map(|field| field.name).collect();
            assert_eq!(reported, schema, "section {}", section.name);
        }
    }
}
