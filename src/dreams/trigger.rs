//! When a region's accumulated writes are due for a consolidation cycle:
//! the thresholds, the minimum interval and the age floor, all in seconds.
//! The type is the protocol's (what `TRIGGER` carries on the wire is what
//! the core decides with), with its rules ([`Trigger::threshold_met`],
//! [`Trigger::interval_passed`]) beside it.

pub use dreamtown_protocol::request::dreams::Trigger;

/// Counter values saturate here, as the seed's `math.min(4294967295, ..)`.
pub const COUNTER_MAX: i64 = 4_294_967_295;

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
