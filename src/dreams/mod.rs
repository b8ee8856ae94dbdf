//! The Dreams consolidation fire queue as a plain state machine: shared
//! per-region write counters, thresholds, one pending fire per region, a
//! hard queue ceiling, reliable ready → in-flight → ack delivery, retries,
//! idempotent recording, quiet-hours ordering and in-flight recovery.
//!
//! Semantics are those of exocortex-dreams 0.4.0's Lua scripts; the code
//! here talks to storage only through [`store::QueueStore`] and
//! [`store::RegionStore`], so it is tested without a server.

pub mod ack;
pub mod canonical;
pub mod drain;
pub mod fire;
pub mod fire_id;
pub mod lease;
pub mod limits;
pub mod message;
pub mod quiet;
pub mod record;
pub mod redrive;
pub mod region;
pub mod store;
pub mod trigger;

// In-memory stores: the unit tests' and the fuzz targets' (`fuzzing`).
#[cfg(any(test, feature = "fuzzing"))]
pub mod memory;
