//! The `DREAMS.*` requests, and the argument readers they share: the
//! organization, a region (`<org> <project> <memory-type>`), `NODE <id>`,
//! `TRIGGER <m> <e> <min-interval> <age-floor>`, `EVENT <id> GENERATION <n>`.

mod ack;
mod counters;
mod drain;
mod extend;
mod fire;
mod inflight;
mod len;
pub mod limit;
mod pause;
pub mod quiet;
mod record;
mod recover;
pub mod redrive;
mod resume;
mod settle;
mod stats;
#[cfg(test)]
mod tests;

pub use ack::{Ack, AckClause};
pub use counters::Counters;
pub use drain::{Drain, Quiet, COUNT_MAX as DRAIN_COUNT_MAX};
pub use extend::Extend;
pub use fire::Fire;
pub use inflight::{Inflight, Page};
pub use len::Len;
pub use limit::{LimitClear, LimitGet, LimitSet, Rate};
pub use pause::Pause;
pub use record::Record;
pub use recover::Recover;
pub use redrive::Redrive;
pub use resume::Resume;
pub use settle::Settle;
pub use stats::Stats;

use crate::args::{tenant_str, Args};
use crate::error::CommandError;
use crate::request::Argv;

/// Read `<org>`.
pub fn organization<'a>(args: &mut Args<'a>) -> Result<&'a str, CommandError> {
    tenant_str(args.required("organization")?, "organization")
}

/// Read `<org>` and nothing after it (`ERR syntax error`).
pub fn organization_only<'a>(argv: &'a [&'a [u8]]) -> Result<&'a str, CommandError> {
    let mut args = Args::new(argv);
    let org = organization(&mut args)?;
    args.end()?;
    Ok(org)
}

/// A region's coordinates, borrowed from the arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region<'a> {
    /// The organization (a tenant name).
    pub org: &'a str,
    /// The project: UTF-8, kept as bytes (only ever copied).
    pub project: &'a [u8],
    /// The memory type.
    pub memory_type: u32,
}

impl<'a> Region<'a> {
    /// Read `<org> <project> <memory-type>`.
    pub fn parse(args: &mut Args<'a>) -> Result<Self, CommandError> {
        let org = organization(args)?;
        let project = args.utf8_bytes("project")?;
        let memory_type = args.unsigned("memory type", u64::from(u32::MAX))? as u32;
        Ok(Self { org, project, memory_type })
    }

    /// Write `<org> <project> <memory-type>`.
    pub fn encode(&self, out: &mut Argv) {
        out.push(self.org).push(self.project).push(self.memory_type);
    }
}

/// The thresholds after `TRIGGER`: when a region's accumulated writes
/// are due for a consolidation cycle, all in seconds. The module decides
/// with this type too ([`Trigger::threshold_met`], [`Trigger::interval_passed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trigger {
    /// Fire when this many memories accumulated.
    pub memory_threshold: u64,
    /// Fire when this many edges accumulated.
    pub edge_threshold: u64,
    /// Never fire sooner than this many seconds after the last success.
    pub min_interval_secs: u64,
    /// Fire anyway once this many seconds passed since the last success.
    pub age_floor_secs: u64,
}

impl Default for Trigger {
    /// 50 memories, 200 edges, an hour, seven days: the seed's defaults
    /// (and the module's settings' defaults).
    fn default() -> Self {
        Self { memory_threshold: 50, edge_threshold: 200, min_interval_secs: 3_600, age_floor_secs: 7 * 86_400 }
    }
}

impl Trigger {
    /// Read the four values after `TRIGGER`.
    pub fn parse(args: &mut Args<'_>) -> Result<Self, CommandError> {
        // The seconds take any u64: the seed's callers send `u32` hours and
        // days times 3,600 and 86,400 (up to 371,085,174,374,400, its
        // "never"), and its Lua compares whatever came. Compared exactly
        // (the core's `Trigger` clamps only past i64::MAX), so every such
        // value answers as the seed does.
        Ok(Self {
            memory_threshold: args.unsigned("memory threshold", u64::from(u32::MAX))?,
            edge_threshold: args.unsigned("edge threshold", u64::from(u32::MAX))?,
            min_interval_secs: args.unsigned("min interval (seconds)", u64::MAX)?,
            age_floor_secs: args.unsigned("age floor (seconds)", u64::MAX)?,
        })
    }

    /// Write `TRIGGER <m> <e> <min-interval> <age-floor>`.
    pub fn encode(&self, out: &mut Argv) {
        out.push("TRIGGER")
            .push(self.memory_threshold)
            .push(self.edge_threshold)
            .push(self.min_interval_secs)
            .push(self.age_floor_secs);
    }

    /// The seed's threshold: memories, edges or age (each setting compared
    /// exactly; one past `i64::MAX` is never met).
    pub fn threshold_met(&self, memories: i64, edges: i64, elapsed: i64) -> bool {
        memories >= clamp(self.memory_threshold)
            || edges >= clamp(self.edge_threshold)
            || elapsed >= clamp(self.age_floor_secs)
    }

    /// Has the minimum interval passed?
    pub fn interval_passed(&self, elapsed: i64) -> bool {
        elapsed >= clamp(self.min_interval_secs)
    }
}

/// A setting as the signed seconds and counts it is compared with.
fn clamp(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Read the node id after `NODE`.
pub fn node<'a>(args: &mut Args<'a>) -> Result<&'a str, CommandError> {
    args.text("node id")
}

/// A write's delivery fence: `EVENT <event-id> GENERATION <n>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery<'a> {
    /// The event's id (not empty).
    pub event_id: &'a [u8],
    /// Its generation (positive; above `i64::MAX` read as `i64::MAX`).
    pub generation: i64,
}

impl<'a> Delivery<'a> {
    /// Read `<event-id> GENERATION <n>` after `EVENT`.
    pub fn parse(args: &mut Args<'a>) -> Result<Self, CommandError> {
        let event_id = args.required("event id")?;
        if event_id.is_empty() {
            return Err(CommandError::err("Dreams write event id must not be empty"));
        }
        if !args.keyword("GENERATION") {
            return Err(CommandError::err("EVENT <event-id> must be followed by GENERATION <n>"));
        }
        let generation = generation(args)?;
        Ok(Self { event_id, generation })
    }

    /// Write `EVENT <event-id> GENERATION <n>`.
    pub fn encode(&self, out: &mut Argv) {
        out.push("EVENT").push(self.event_id).push("GENERATION").push(self.generation);
    }
}

/// Read a delivery generation: a positive integer up to u64::MAX (the
/// seed's `DeliveryFence::generation` is a `u64`). Generations are kept as
/// i64, so those above i64::MAX count as i64::MAX: the one difference from
/// the seed (whose Lua compares them as doubles), listed in dreams.md.
pub fn generation(args: &mut Args<'_>) -> Result<i64, CommandError> {
    // The seed's words first (its callers match them), then the one range
    // every bad value gets.
    let value = args.required("generation")?;
    let value = crate::args::parse_unsigned(value, u64::MAX).filter(|value| *value > 0).ok_or_else(|| {
        CommandError::err(format_args!(
            "Dreams delivery generation must be positive (an integer from 1 to {})",
            u64::MAX
        ))
    })?;
    Ok(i64::try_from(value).unwrap_or(i64::MAX))
}
