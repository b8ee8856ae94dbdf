//! Every setting of the module, gathered from their owners for the load
//! (`glue::config` registers them): Dreams' and Town's, and the lease
//! catch-up's.

use super::dreams::settings as dreams;
use super::town::settings as town;
use crate::glue::config::Setting;
use crate::services::lease_catch_up::CATCH_UP_KEYS_PER_TURN;

/// Every setting, in the order an unknown `loadmodule` argument's error
/// lists them (numbers first).
pub fn all() -> [Setting; 11] {
    [
        Setting::Numeric(&dreams::LEASE),
        Setting::Numeric(&town::TOWN_LEASE),
        Setting::Numeric(&dreams::QUEUE_MAX),
        Setting::Numeric(&dreams::QUIET_UTC_OFFSET),
        Setting::Numeric(&dreams::QUIET_BACKLOG_MIN),
        Setting::Numeric(&dreams::MEMORY_THRESHOLD),
        Setting::Numeric(&dreams::EDGE_THRESHOLD),
        Setting::Numeric(&dreams::MIN_INTERVAL),
        Setting::Numeric(&dreams::AGE_FLOOR),
        Setting::Numeric(&CATCH_UP_KEYS_PER_TURN),
        Setting::Text(&dreams::QUIET_HOURS),
    ]
}

/// Validate `loadmodule` arguments against every setting.
pub fn check_module_args(args: &[&[u8]]) -> Result<(), String> {
    crate::glue::config::check_module_args(args, &all())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &[&str]) -> Result<(), String> {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        check_module_args(&bytes)
    }

    #[test]
    fn module_args_are_known_pairs_in_range() {
        assert_eq!(check(&[]), Ok(()));
        assert_eq!(check(&["queue-max", "5", "quiet-hours", "", "quiet-utc-offset", "-1439"]), Ok(()));
        assert_eq!(check(&["age-floor", "3153600000", "memory-threshold", "0"]), Ok(()));
        // The seed's "never", u32::MAX days in seconds.
        assert_eq!(check(&["age-floor", "371085174374400"]), Ok(()));
        for bad in [
            &["queue-max"][..],
            &["queue-max", "0"],
            &["queue-max", "1000000001"],
            &["queue-max", "x"],
            &["quiet-utc-offset", "1440"],
            &["edge-threshold", "4294967296"],
            &["min-interval", "-1"],
            &["bogus", "1"],
            &["QUEUE-MAX", "5"],
            &["queue-max", "5", "queue-max", "6"],
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn errors_name_the_settings_and_ranges_as_before() {
        assert_eq!(
            check(&["bogus", "1"]),
            Err("unknown module argument 'bogus' (known: lease, town-lease, queue-max, quiet-utc-offset, \
                 quiet-backlog-min, memory-threshold, edge-threshold, min-interval, age-floor, \
                 catch-up-keys-per-turn, quiet-hours)"
                .into())
        );
        assert_eq!(
            check(&["town-lease", "3153600001"]),
            Err("module argument town-lease must be an integer from 0 to 3153600000, got '3153600001'".into())
        );
        assert_eq!(
            check(&["catch-up-keys-per-turn", "99"]),
            Err("module argument catch-up-keys-per-turn must be an integer from 100 to 1000000, got '99'".into())
        );
        assert_eq!(check(&["lease", "1", "lease", "2"]), Err("module argument 'lease' given more than once".into()));
    }
}
