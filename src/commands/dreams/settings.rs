//! The Dreams settings (`CONFIG SET/GET dreamtown.<name>`, `loadmodule`
//! arguments), declared here and registered by the module through
//! [`crate::glue::config`]: the queue ceiling, quiet hours, trigger
//! defaults and the default lease of DRAIN.

use crate::dreams::quiet::QuietHours;
use crate::dreams::trigger::Trigger;
use crate::glue::config::{Numeric, Text};
use crate::lease::LEASE_SECS_MAX;

/// `queue-max`: the ceiling over ready + deferred + in-flight.
pub static QUEUE_MAX: Numeric = Numeric::new("queue-max", 1000, (1, 1_000_000_000));
/// `quiet-utc-offset`: minutes east of UTC for the quiet window.
pub static QUIET_UTC_OFFSET: Numeric = Numeric::new("quiet-utc-offset", 0, (-1439, 1439));
/// `quiet-backlog-min`: at this backlog quiet hours stop reordering.
pub static QUIET_BACKLOG_MIN: Numeric = Numeric::new("quiet-backlog-min", 32, (0, 1_000_000_000));
/// `memory-threshold`: default memories that fire a region.
pub static MEMORY_THRESHOLD: Numeric = Numeric::new("memory-threshold", 50, THRESHOLD_RANGE);
/// `edge-threshold`: default edges that fire a region.
pub static EDGE_THRESHOLD: Numeric = Numeric::new("edge-threshold", 200, THRESHOLD_RANGE);
/// `min-interval`: default seconds between cycles of a region.
pub static MIN_INTERVAL: Numeric = Numeric::new("min-interval", 3_600, SECONDS_RANGE);
/// `age-floor`: default seconds after which a region fires anyway.
pub static AGE_FLOOR: Numeric = Numeric::new("age-floor", 604_800, SECONDS_RANGE);
/// `lease`: seconds a drained Dreams item is leased when DRAIN names no
/// `LEASE` (0: no lease).
pub static LEASE: Numeric = Numeric::new("lease", 0, LEASE_RANGE);
/// `quiet-hours`: the quiet window, `HH-HH` or empty for none.
pub static QUIET_HOURS: Text =
    Text::new("quiet-hours", QUIET_HOURS_DEFAULT, "quiet-hours must be text like 02-06", check_quiet_hours);

/// The default quiet window, as configured text.
pub const QUIET_HOURS_DEFAULT: &str = "02-06";

/// `memory-threshold`'s and `edge-threshold`'s inclusive range.
const THRESHOLD_RANGE: (i64, i64) = (0, 4_294_967_295);
/// `min-interval`'s and `age-floor`'s inclusive range (seconds): anything
/// a Redis numeric config holds, so a seed deployment's `u32` hours and days
/// (up to 371,085,174,374,400 seconds, its "never") carry over as they are.
const SECONDS_RANGE: (i64, i64) = (0, i64::MAX);
/// `lease`'s inclusive range (seconds, 100 years).
const LEASE_RANGE: (i64, i64) = (0, LEASE_SECS_MAX as i64);

/// The setter's check of `quiet-hours`: the error text when refused.
fn check_quiet_hours(text: &str) -> Result<(), String> {
    QuietHours::parse_setting(text)
        .map(drop)
        .map_err(|e| format!("invalid quiet-hours '{text}': {e} (use HH-HH, or empty for none)"))
}

/// The configured queue ceiling.
pub fn queue_max() -> u64 {
    QUEUE_MAX.unsigned()
}

/// The configured quiet-hours backlog threshold.
pub fn quiet_backlog_min() -> u64 {
    QUIET_BACKLOG_MIN.unsigned()
}

/// The configured quiet window at the configured offset.
pub fn quiet_hours() -> QuietHours {
    let offset = i16::try_from(QUIET_UTC_OFFSET.get()).unwrap_or(0);
    let window = QUIET_HOURS.with(|text| QuietHours::parse_setting(text).unwrap_or_else(|_| QuietHours::nightly()));
    window.with_utc_offset_minutes(offset).unwrap_or(window)
}

/// The configured Dreams lease in seconds, if any.
pub fn lease_secs() -> Option<f64> {
    let secs = LEASE.get();
    (secs > 0).then_some(secs as f64)
}

/// The configured trigger defaults.
pub fn trigger() -> Trigger {
    Trigger {
        memory_threshold: MEMORY_THRESHOLD.unsigned(),
        edge_threshold: EDGE_THRESHOLD.unsigned(),
        min_interval_secs: MIN_INTERVAL.unsigned(),
        age_floor_secs: AGE_FLOOR.unsigned(),
    }
}
