//! dreamtown: a Redis module with native, atomic commands for two
//! Redis-backed coordination layers.
//!
//! * [`dreams`]: the consolidation fire queue of exocortex-dreams
//!   (`DREAMS.*` commands).
//! * [`town`]: the agent channel of tinytown (`TOWN.*` commands).
//! * [`lease`]: leases on items handed out, shared by both families.
//!
//! Those two modules are plain Rust state machines over plain structs. The
//! Redis glue (command registration, key API, replication, blocking) is
//! behind the default `module` feature; without it this crate is the shared
//! core that the client crate reuses.

pub mod cluster_slot;
pub mod dreams;
pub mod events;
pub mod lease;
pub mod town;
pub mod version;

#[cfg(test)]
mod test_random;

// The module, in layers, lowest first; a file imports only from its own
// layer or those below (`scripts/check-layers.py`, run by `make lint`,
// fails on an import cycle or an upward import):
//   the pure cores (above),
//   `glue` (the module API's wrappers), `metrics` (counted events),
//   `services` (what runs outside a client's command), `entry` (the C
//   entry point of every command), `stores` (the families' data on keys), `commands` (one file per command), and
//   `module` (load, unload, INFO: where they are wired together).
#[cfg(feature = "module")]
mod commands;
#[cfg(feature = "module")]
mod entry;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
#[cfg(feature = "module")]
mod glue;
#[cfg(feature = "module")]
mod metrics;
#[cfg(feature = "module")]
mod module;
#[cfg(feature = "module")]
mod services;
#[cfg(feature = "module")]
mod stores;
