//! The Dreams stores: an organization's queue keys and a region's counters
//! (`store`), the cached names of the last organization's keys
//! (`queue_names`), the Dreams lease family (`leases`) and an
//! organization's limits (`limits`).

pub mod leases;
pub mod limits;
pub mod queue_names;
pub mod store;
