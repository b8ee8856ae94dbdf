//! `dreamtown-migrate`: moves a live exocortex-dreams 0.4.0 or tinytown
//! 0.10 deployment's keys onto dreamtown's layout (and back with
//! `--reverse`), tenant by tenant, without losing or doubling anything.
//!
//! One tenant moves in batches, each in three atomic steps:
//!
//! 1. **stage** ([`stage`]): on the source, one script renames the
//!    tenant's keys to staging names beside a manifest (a batch id and the
//!    names). Nothing is deleted; old code writing meanwhile creates new
//!    keys, which the next batch moves.
//! 2. **apply** ([`apply`]): on the target, one script checks every key
//!    type, then writes (merging into what is there) and records the batch
//!    id, all at once; a batch id already recorded writes nothing. The
//!    tool then verifies the id is recorded.
//! 3. **finish**: on the source, one `UNLINK` removes the staged keys and
//!    the manifest.
//!
//! Dreams only: before a batch is applied, the counters of any region whose
//! pending fire is in it join it (a region first written after the keys
//! were listed), so a fire never lands without the counters that name it
//! pending ([`dreams::missing_regions`]).
//!
//! A batch the target refuses (its script checks every key first, so it
//! wrote nothing) goes back to the old code's names in one atomic step.
//!
//! A run first finishes any batch a killed run left staged, then stages
//! and moves one new batch. Killed after any step, the next run completes
//! the batch: nothing is lost (the source keeps it until the target has
//! it) and nothing is doubled (the target applies a batch id once).
//!
//! Why not one script for the whole move on one server: the seed's keys of
//! a tenant do not share a hash tag, so no script may touch them all on a
//! cluster; these three steps work the same whether source and target are
//! one server, two, or a cluster, and a re-run always completes them.
//!
//! Files: [`conn`] (servers and clusters), [`snapshot`] (reading a key),
//! [`stage`], [`apply`], [`plan`] (and dry runs), [`dreams`] and [`town`]
//! (the layouts), [`report`].

pub mod apply;
#[cfg(feature = "net")]
pub mod conn;
pub mod dreams;
pub mod plan;
pub mod report;
#[cfg(feature = "net")]
mod run;
pub mod snapshot;
pub mod stage;
pub mod town;

use std::fmt;

#[cfg(feature = "net")]
pub use run::run;

/// What can stop the tool.
#[derive(Debug)]
pub enum Error {
    /// A server refused or the connection failed.
    #[cfg(feature = "net")]
    Redis(redis::RedisError),
    /// The run was told to stop after a number of steps (tests).
    Stopped(u32),
    /// Anything else.
    Other(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "net")]
            Self::Redis(error) => write!(f, "{error}"),
            Self::Stopped(step) => write!(f, "stopped after step {step} as asked"),
            Self::Other(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(feature = "net")]
impl From<redis::RedisError> for Error {
    fn from(error: redis::RedisError) -> Self {
        Self::Redis(error)
    }
}

/// A result of the migration tool.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// exocortex-dreams 0.4.0: organizations.
    Dreams,
    /// tinytown 0.10: towns.
    Town,
}

impl Family {
    /// `dreams` or `town`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Dreams => "dreams",
            Self::Town => "town",
        }
    }
}

/// Which way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the seed's layout to dreamtown's.
    Forward,
    /// From dreamtown's layout back to the seed's.
    Reverse,
}

/// What to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// The seed's family.
    pub family: Family,
    /// Which way.
    pub direction: Direction,
    /// Change nothing; report what would move.
    pub dry_run: bool,
    /// Tenants; empty means every tenant found on the source.
    pub tenants: Vec<String>,
    /// Stop (as if killed) right after this many writing steps (stage,
    /// apply, finish) in this run: for the tests that kill the tool.
    pub stop_after: Option<u32>,
}

/// A tenant name dreamtown can hold: non-empty, no braces.
pub fn valid_tenant(tenant: &str) -> bool {
    !tenant.is_empty() && !tenant.contains(['{', '}'])
}
