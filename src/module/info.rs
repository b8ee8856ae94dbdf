//! `INFO dreamtown`: one section per concern, `dreamtown_<section>`, each
//! read from the layer that owns it (the counted events' totals, the
//! per-tenant tables, the waiters, the leases, the cluster, the write gate).

use std::ffi::{CStr, CString};

use crate::events::{self, Field};
use crate::glue::info::{Info, InfoProvider};
use crate::metrics::totals;
use crate::metrics::{fire_ages, tenant_stats};
use crate::services::{lease_timer, limits_index, slot_migration, waiters, write_gate};

/// A section of `INFO dreamtown`: its name and its fields.
type Section = (&'static CStr, Vec<(CString, u64)>);

/// The fields of the counted events' table shown in INFO, from the
/// server's totals `counts` (by event).
fn counted<E: Copy + Into<usize>>(table: &[Field<E>], counts: &[u64]) -> Vec<(CString, u64)> {
    table
        .iter()
        .filter(|field| field.in_info())
        .filter_map(|field| Some((CString::new(field.name).ok()?, events::sum(field, counts))))
        .collect()
}

/// Fields named by C string literals, as the services report them.
fn named(fields: Vec<(&'static CStr, u64)>) -> Vec<(CString, u64)> {
    fields.into_iter().map(|(name, value)| (name.to_owned(), value)).collect()
}

fn sections() -> Vec<Section> {
    vec![
        (c"dreams", counted(&events::DREAMS_FIELDS, &totals::dreams_counts())),
        (c"town", counted(&events::TOWN_FIELDS, &totals::town_counts())),
        (c"waiters", named(waiters::info_fields())),
        (c"tenant_stats", named(tenant_stats_fields())),
        (c"leases", named(lease_timer::info_fields())),
        (c"limits", named(limits_index::info_fields())),
        (c"cluster", named(slot_migration::info_fields())),
        (c"write_gate", named(write_gate::info_fields())),
    ]
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
            info.section(name);
            for (field, value) in fields {
                info.number(&field, value);
            }
        }
    }
}
