//! When a region's accumulated writes are due for a consolidation cycle:
//! the thresholds, the minimum interval and the age floor, all in seconds.

/// Counter values saturate here, as the seed's `math.min(4294967295, ..)`.
pub const COUNTER_MAX: i64 = 4_294_967_295;

/// Thresholds that decide whether a region fires.
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

impl From<dreamtown_protocol::request::dreams::Trigger> for Trigger {
    fn from(given: dreamtown_protocol::request::dreams::Trigger) -> Self {
        let dreamtown_protocol::request::dreams::Trigger {
            memory_threshold,
            edge_threshold,
            min_interval_secs,
            age_floor_secs,
        } = given;
        Self { memory_threshold, edge_threshold, min_interval_secs, age_floor_secs }
    }
}

impl From<Trigger> for dreamtown_protocol::request::dreams::Trigger {
    fn from(trigger: Trigger) -> Self {
        let Trigger { memory_threshold, edge_threshold, min_interval_secs, age_floor_secs } = trigger;
        Self { memory_threshold, edge_threshold, min_interval_secs, age_floor_secs }
    }
}

impl Default for Trigger {
    fn default() -> Self {
        Self { memory_threshold: 50, edge_threshold: 200, min_interval_secs: 3_600, age_floor_secs: 7 * 86_400 }
    }
}

impl Trigger {
    /// The seed's threshold: memories, edges or age.
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

fn clamp(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_threshold_fires() {
        let trigger = Trigger { memory_threshold: 5, edge_threshold: 10, min_interval_secs: 0, age_floor_secs: 100 };
        assert!(!trigger.threshold_met(4, 9, 99));
        assert!(trigger.threshold_met(5, 0, 0));
        assert!(trigger.threshold_met(0, 10, 0));
        assert!(trigger.threshold_met(0, 0, 100));
    }

    #[test]
    fn age_floor_zero_always_fires() {
        let trigger = Trigger { age_floor_secs: 0, ..Trigger::default() };
        assert!(trigger.threshold_met(0, 0, 0));
    }

    #[test]
    fn huge_settings_never_overflow() {
        let trigger = Trigger {
            memory_threshold: u64::MAX,
            edge_threshold: u64::MAX,
            min_interval_secs: u64::MAX,
            age_floor_secs: u64::MAX,
        };
        assert!(!trigger.threshold_met(COUNTER_MAX, COUNTER_MAX, i64::MAX - 1));
        assert!(!trigger.interval_passed(i64::MAX - 1));
    }
}
