//! The Dreams stores: an organization's queue keys and a region's counters
//! (`store`), the cached names of the last organization's keys
//! (`queue_names`), the kept payload buffer (`payload_buffer`), the Dreams lease family (`leases`) and an
//! organization's limits (`limits`).

pub mod leases;
pub mod limits;
mod payload_buffer;
pub mod queue_names;
pub mod store;
