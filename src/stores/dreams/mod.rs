//! The Dreams stores: an organization's queue keys and a region's counters
//! (`store`), the cached names of the last organization's keys
//! (`queue_names`), and the Dreams lease family (`leases`).

pub mod leases;
pub mod queue_names;
pub mod store;
