//! The schema of `INFO dreamtown`'s sections that are not counted events
//! (those, `dreamtown_dreams` and `dreamtown_town`, come from
//! `dreamtown::events`): each section's fields in the order the module
//! writes them, and whether each is a level (a gauge) or a total (a
//! counter). The module writes these names; the exporter reads the kinds.

/// Whether an INFO field is a level or a total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A level, a maximum or a figure of the last run (a gauge).
    Gauge,
    /// A total that only goes up (a counter).
    Counter,
}

/// A field of an INFO section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfoField {
    /// Its name (INFO prefixes it with `dreamtown_`).
    pub name: &'static str,
    /// Level or total.
    pub kind: Kind,
}

/// A section of `INFO dreamtown` (`dreamtown_<name>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfoSection {
    /// Its name, without the `dreamtown_` prefix.
    pub name: &'static str,
    /// Its fields, in order.
    pub fields: &'static [InfoField],
}

const fn gauge(name: &'static str) -> InfoField {
    InfoField { name, kind: Kind::Gauge }
}

const fn counter(name: &'static str) -> InfoField {
    InfoField { name, kind: Kind::Counter }
}

/// `dreamtown_waiters`: blocked DRAIN and RECV callers.
pub const WAITERS: InfoSection = InfoSection {
    name: "waiters",
    fields: &[
        gauge("waiters"),
        gauge("waiter_queues"),
        counter("waiters_served"),
        counter("waiters_timed_out"),
        counter("waiters_gone"),
        counter("empty_wakeups"),
        counter("waiters_undelivered"),
    ],
};

/// `dreamtown_tenant_stats`: the per-tenant tables.
pub const TENANT_STATS: InfoSection = InfoSection {
    name: "tenant_stats",
    fields: &[
        gauge("orgs_tracked"),
        gauge("towns_tracked"),
        gauge("agents_tracked"),
        counter("orgs_refused"),
        counter("towns_refused"),
        counter("agents_refused"),
        gauge("fire_ages_orgs"),
        gauge("fire_ages_entries"),
        counter("fire_ages_refused"),
    ],
};

/// `dreamtown_leases`: the lease index, timer and catch-up.
pub const LEASES: InfoSection = InfoSection {
    name: "leases",
    fields: &[
        gauge("lease_tenants_indexed"),
        gauge("lease_index_bytes"),
        gauge("lease_max_tick_us"),
        counter("lease_max_tick_expired"),
        gauge("catching_up"),
        counter("catch_ups_started"),
        counter("catch_ups_completed"),
        counter("catch_ups_abandoned"),
        gauge("catch_up_keys_examined"),
        gauge("catch_up_turns"),
        gauge("catch_up_tenants_indexed"),
        gauge("catch_up_last_duration_ms"),
        counter("catch_up_keys_examined_total"),
        counter("catch_up_turns_total"),
        gauge("catch_up_max_keys_per_turn"),
        gauge("catch_up_max_turn_us"),
        gauge("catch_up_max_turn_cpu_us"),
    ],
};

/// `dreamtown_limits`: the limits index.
pub const LIMITS: InfoSection = InfoSection {
    name: "limits",
    fields: &[
        gauge("limits_indexed_orgs"),
        gauge("limits_indexed_entries"),
        gauge("limits_index_trusted"),
        counter("limits_untrusted_opens"),
        counter("limits_entries_dropped"),
    ],
};

/// `dreamtown_cluster`: slot migrations.
pub const CLUSTER: InfoSection = InfoSection {
    name: "cluster",
    fields: &[
        gauge("atomic_slot_migration"),
        gauge("slot_imports_in_progress"),
        gauge("slot_exports_in_progress"),
        counter("slot_imports_completed"),
        counter("slot_imports_aborted"),
        counter("slot_exports_completed"),
        counter("slot_exports_aborted"),
    ],
};

/// `dreamtown_write_gate`: background writes held while writes are paused.
pub const WRITE_GATE: InfoSection = InfoSection {
    name: "write_gate",
    fields: &[gauge("writes_paused"), counter("held_lease_ticks"), counter("held_waiter_passes")],
};

/// The sections after the counted events', in the order INFO writes them.
pub const SECTIONS: [InfoSection; 6] = [WAITERS, TENANT_STATS, LEASES, LIMITS, CLUSTER, WRITE_GATE];

/// Whether the field `name` of any section is a level (a gauge); counted
/// events' fields and unknown ones are totals.
pub fn is_gauge(name: &str) -> bool {
    SECTIONS.iter().flat_map(|section| section.fields).any(|field| field.name == name && field.kind == Kind::Gauge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = SECTIONS.iter().flat_map(|section| section.fields).map(|field| field.name).collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all);
        assert!(is_gauge("waiters") && !is_gauge("waiters_served") && !is_gauge("fired"));
    }
}
