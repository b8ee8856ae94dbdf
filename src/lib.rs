//! dreamtown: a Redis module with native, atomic commands for two
//! Redis-backed coordination layers.
//!
//! * [`dreams`]: the consolidation fire queue of exocortex-dreams
//!   (`DREAMS.*` commands).
//! * [`town`]: the agent channel of tinytown (`TOWN.*` commands).
//!
//! Those two modules are plain Rust state machines over plain structs. The
//! Redis glue (command registration, key API, replication, blocking) is
//! behind the default `module` feature; without it this crate is the shared
//! core that the client crate reuses.

pub mod dreams;
pub mod town;
pub mod version;

#[cfg(test)]
mod test_random;

#[cfg(feature = "module")]
mod commands;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
#[cfg(feature = "module")]
mod module;
