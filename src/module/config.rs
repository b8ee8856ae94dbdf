//! Module configuration: `CONFIG SET/GET dreamtown.<name>`, `loadmodule ...
//! <name> <value>` and redis.conf lines. Numbers are range-checked by Redis;
//! the quiet window is parsed here, so a bad value is refused and the old
//! one stays.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use redis_module::configuration::{ConfigurationContext, ConfigurationValue};
use redis_module::{RedisError, RedisString};

use crate::dreams::quiet::QuietHours;
use crate::dreams::trigger::Trigger;

/// `queue-max`: the ceiling over ready + deferred + in-flight.
pub static QUEUE_MAX: AtomicI64 = AtomicI64::new(1000);
/// `quiet-utc-offset`: minutes east of UTC for the quiet window.
pub static QUIET_UTC_OFFSET: AtomicI64 = AtomicI64::new(0);
/// `quiet-backlog-min`: at this backlog quiet hours stop reordering.
pub static QUIET_BACKLOG_MIN: AtomicI64 = AtomicI64::new(32);
/// `memory-threshold`: default memories that fire a region.
pub static MEMORY_THRESHOLD: AtomicI64 = AtomicI64::new(50);
/// `edge-threshold`: default edges that fire a region.
pub static EDGE_THRESHOLD: AtomicI64 = AtomicI64::new(200);
/// `min-interval`: default seconds between cycles of a region.
pub static MIN_INTERVAL: AtomicI64 = AtomicI64::new(3_600);
/// `age-floor`: default seconds after which a region fires anyway.
pub static AGE_FLOOR: AtomicI64 = AtomicI64::new(604_800);
/// `quiet-hours`: the quiet window, `HH-HH` or empty for none.
pub static QUIET_HOURS: QuietSetting = QuietSetting(Mutex::new(String::new()));

/// The default quiet window, as configured text.
pub const QUIET_HOURS_DEFAULT: &str = "02-06";

/// The quiet-window setting, kept as the validated text.
pub struct QuietSetting(Mutex<String>);

impl QuietSetting {
    /// The configured window (without offset).
    pub fn window(&self) -> QuietHours {
        let text = match self.0.lock() {
            Ok(text) => text.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        QuietHours::parse_setting(&text).unwrap_or_else(|_| QuietHours::nightly())
    }
}

impl ConfigurationValue<RedisString> for QuietSetting {
    fn get(&self, _ctx: &ConfigurationContext) -> RedisString {
        let text = match self.0.lock() {
            Ok(text) => text.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        RedisString::create(None, text.as_str())
    }

    fn set(&self, _ctx: &ConfigurationContext, value: RedisString) -> Result<(), RedisError> {
        let text = value
            .try_as_str()
            .map_err(|_| RedisError::Str("quiet-hours must be text like 02-06"))?
            .to_owned();
        QuietHours::parse_setting(&text)
            .map_err(|e| RedisError::String(format!("invalid quiet-hours '{text}': {e} (use HH-HH, or empty for none)")))?;
        match self.0.lock() {
            Ok(mut current) => *current = text,
            Err(poisoned) => *poisoned.into_inner() = text,
        }
        Ok(())
    }
}

fn unsigned(setting: &AtomicI64) -> u64 {
    u64::try_from(setting.load(Ordering::Relaxed)).unwrap_or(0)
}

/// The configured queue ceiling.
pub fn queue_max() -> u64 {
    unsigned(&QUEUE_MAX)
}

/// The configured quiet-hours backlog threshold.
pub fn quiet_backlog_min() -> u64 {
    unsigned(&QUIET_BACKLOG_MIN)
}

/// The configured quiet window at the configured offset.
pub fn quiet_hours() -> QuietHours {
    let offset = i16::try_from(QUIET_UTC_OFFSET.load(Ordering::Relaxed)).unwrap_or(0);
    let window = QUIET_HOURS.window();
    window.with_utc_offset_minutes(offset).unwrap_or(window)
}

/// The configured trigger defaults.
pub fn trigger() -> Trigger {
    Trigger {
        memory_threshold: unsigned(&MEMORY_THRESHOLD),
        edge_threshold: unsigned(&EDGE_THRESHOLD),
        min_interval_secs: unsigned(&MIN_INTERVAL),
        age_floor_secs: unsigned(&AGE_FLOOR),
    }
}
