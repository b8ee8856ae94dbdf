//! R-Dr14 quiet hours: a preference for when consolidation runs, evaluated
//! at a fixed UTC offset. During the window a drained item not yet marked is
//! moved once behind other work, but only while the backlog is short: quiet
//! hours reorder, they never gate.

use std::fmt;
use std::str::FromStr;

use dreamtown_protocol::request::dreams::quiet::{utc_offset, QuietWindow};

/// The default backlog at which quiet hours stop reordering.
pub const QUIET_HOURS_BACKLOG_MIN: u64 = 32;

/// Why a quiet-hours setting was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuietHoursError(pub &'static str);

impl fmt::Display for QuietHoursError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for QuietHoursError {}

/// A quiet window of local hours `[start_hour, end_hour)`, wrapping midnight
/// when `start_hour > end_hour`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuietHours {
    /// Start hour (local, 0-23), inclusive.
    pub start_hour: u8,
    /// End hour (local, 0-23), exclusive.
    pub end_hour: u8,
    /// Whether the window is active.
    pub enabled: bool,
    /// Fixed UTC offset of the local clock, in minutes.
    pub utc_offset_minutes: i16,
}

impl Default for QuietHours {
    /// The PRD default: 02:00-06:00 UTC.
    fn default() -> Self {
        Self { start_hour: 2, end_hour: 6, enabled: true, utc_offset_minutes: 0 }
    }
}

impl FromStr for QuietHours {
    type Err = QuietHoursError;

    /// Parse `HH-HH` with two-digit hours, start ≠ end (the protocol's
    /// reader: `DREAMS.DRAIN ... QUIET` refuses the same texts).
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let window = QuietWindow::parse(value).map_err(QuietHoursError)?;
        Ok(Self::from(window))
    }
}

impl From<QuietWindow> for QuietHours {
    /// The window, enabled, at UTC.
    fn from(window: QuietWindow) -> Self {
        Self { start_hour: window.start_hour, end_hour: window.end_hour, enabled: true, utc_offset_minutes: 0 }
    }
}

impl fmt::Display for QuietHours {
    /// `HH-HH`, or the empty string when disabled.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.enabled {
            write!(f, "{:02}-{:02}", self.start_hour, self.end_hour)
        } else {
            Ok(())
        }
    }
}

impl QuietHours {
    /// No quiet window: cycles may run any time.
    pub fn none() -> Self {
        Self { enabled: false, ..Self::default() }
    }

    /// The PRD default 02:00-06:00 UTC window.
    pub fn nightly() -> Self {
        Self::default()
    }

    /// Parse a configured window: empty means none.
    pub fn parse_setting(value: &str) -> Result<Self, QuietHoursError> {
        if value.is_empty() {
            Ok(Self::none())
        } else {
            value.parse()
        }
    }

    /// The same window evaluated at a fixed UTC offset (±1439 minutes).
    pub fn with_utc_offset_minutes(mut self, offset: i16) -> Result<Self, QuietHoursError> {
        check_utc_offset(i64::from(offset))?;
        self.utc_offset_minutes = offset;
        Ok(self)
    }

    /// Is `local_hour` inside the window?
    pub fn contains(&self, local_hour: u8) -> bool {
        if !self.enabled {
            return false;
        }
        if self.start_hour <= self.end_hour {
            local_hour >= self.start_hour && local_hour < self.end_hour
        } else {
            local_hour >= self.start_hour || local_hour < self.end_hour
        }
    }

    /// The local hour at `unix_secs`.
    pub fn local_hour(&self, unix_secs: i64) -> u8 {
        let local = unix_secs.saturating_add(i64::from(self.utc_offset_minutes) * 60);
        // rem_euclid keeps the hour in 0..24 for times before the epoch too.
        (local.rem_euclid(86_400) / 3_600) as u8
    }

    /// Should an unmarked item drained at `local_hour` move behind
    /// `other_work` items, given the backlog threshold?
    pub fn should_reorder(&self, local_hour: u8, other_work: u64, backlog_min: u64) -> bool {
        self.contains(local_hour) && other_work > 0 && other_work.saturating_add(1) < backlog_min
    }
}

/// Validate a UTC offset in minutes.
pub fn check_utc_offset(offset: i64) -> Result<i16, QuietHoursError> {
    utc_offset(offset).map_err(QuietHoursError)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_hours_windows() {
        let none = QuietHours::none();
        assert!(!none.contains(3));
        let nightly = QuietHours::nightly();
        assert!(nightly.contains(2));
        assert!(nightly.contains(5));
        assert!(!nightly.contains(6), "end hour is exclusive");
        assert!(!nightly.contains(23));
        let day = QuietHours { start_hour: 9, end_hour: 17, enabled: true, utc_offset_minutes: -360 };
        assert!(day.contains(9));
        assert!(!day.contains(17), "end hour is exclusive");
    }

    #[test]
    fn windows_wrap_midnight() {
        let late: QuietHours = "23-07".parse().unwrap();
        assert!(late.contains(23));
        assert!(late.contains(0));
        assert!(late.contains(6));
        assert!(!late.contains(7));
        assert!(!late.contains(22));
    }

    #[test]
    fn quiet_hours_parse_is_validated_and_defaults_to_prd_utc_window() {
        assert_eq!(QuietHours::default(), "02-06".parse().unwrap());
        assert_eq!(QuietHours::default().utc_offset_minutes, 0);
        assert!("2-06".parse::<QuietHours>().is_err());
        assert!("24-06".parse::<QuietHours>().is_err());
        assert!("02-02".parse::<QuietHours>().is_err());
        assert!("0206".parse::<QuietHours>().is_err());
        assert!("+1-06".parse::<QuietHours>().is_err());
        assert!("ab-06".parse::<QuietHours>().is_err());
        assert!(QuietHours::default().with_utc_offset_minutes(1440).is_err());
        assert!(QuietHours::default().with_utc_offset_minutes(-1440).is_err());
        assert_eq!(QuietHours::default().with_utc_offset_minutes(-1439).unwrap().utc_offset_minutes, -1439);
    }

    #[test]
    fn quiet_hours_reorders_short_backlogs_but_never_a_lone_or_large_queue() {
        let quiet = QuietHours::default();
        let min = QUIET_HOURS_BACKLOG_MIN;
        assert!(!quiet.should_reorder(3, 0, min), "a lone fire runs immediately");
        assert!(quiet.should_reorder(3, 1, min));
        assert!(quiet.should_reorder(3, 30, min));
        assert!(!quiet.should_reorder(3, 31, min), "32 total items meet the progress threshold");
        assert!(!quiet.should_reorder(7, 1, min), "outside the window runs now");
    }

    #[test]
    fn local_hour_applies_the_offset() {
        let utc = QuietHours::default();
        assert_eq!(utc.local_hour(0), 0);
        assert_eq!(utc.local_hour(3 * 3600 + 59), 3);
        let east = utc.with_utc_offset_minutes(90).unwrap();
        assert_eq!(east.local_hour(23 * 3600), 0, "23:00 UTC is 00:30 at +01:30");
        let west = utc.with_utc_offset_minutes(-60).unwrap();
        assert_eq!(west.local_hour(0), 23);
        assert_eq!(utc.local_hour(-1), 23);
    }

    #[test]
    fn settings_round_trip() {
        assert_eq!(QuietHours::parse_setting("").unwrap(), QuietHours::none());
        assert_eq!(QuietHours::parse_setting("02-06").unwrap().to_string(), "02-06");
        assert_eq!(QuietHours::none().to_string(), "");
    }
}
