//! The seed's trigger settings (hours and days) and their conversion to
//! the seconds that `DREAMS.RECORD` and `DREAMS.ACK` take after `TRIGGER`.

use dreamtown::dreams::trigger::Trigger;

/// When a region's accumulated writes are due for a consolidation cycle, in
/// the seed's units: counts, hours and days.
///
/// Every call that takes a trigger accepts `impl Into<Trigger>`, so a
/// [`Trigger`] in seconds works too (for intervals shorter than an hour).
///
/// ```
/// use dreamtown_client::dreams::{DreamsTrigger, Trigger};
///
/// let trigger = DreamsTrigger { memory_threshold: 10, edge_threshold: 40, min_interval_hours: 2, age_floor_days: 1 };
/// let seconds: Trigger = trigger.into();
/// assert_eq!(seconds.min_interval_secs, 7_200);
/// assert_eq!(seconds.age_floor_secs, 86_400);
/// assert_eq!(Trigger::from(DreamsTrigger::default()), Trigger::default());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DreamsTrigger {
    /// Fire when this many memories accumulated.
    pub memory_threshold: u32,
    /// Fire when this many edges accumulated.
    pub edge_threshold: u32,
    /// Never fire sooner than this many hours after the last success.
    pub min_interval_hours: u32,
    /// Fire anyway once this many days passed since the last success.
    pub age_floor_days: u32,
}

impl Default for DreamsTrigger {
    /// 50 memories, 200 edges, 1 hour, 7 days: the module's defaults.
    ///
    /// ```
    /// let trigger = dreamtown_client::dreams::DreamsTrigger::default();
    /// assert_eq!(trigger.memory_threshold, 50);
    /// ```
    fn default() -> Self {
        Self { memory_threshold: 50, edge_threshold: 200, min_interval_hours: 1, age_floor_days: 7 }
    }
}

impl From<DreamsTrigger> for Trigger {
    /// Hours and days to seconds, as the seed's scripts received them.
    ///
    /// ```
    /// use dreamtown_client::dreams::{DreamsTrigger, Trigger};
    /// let t = Trigger::from(DreamsTrigger { min_interval_hours: 0, ..DreamsTrigger::default() });
    /// assert_eq!(t.min_interval_secs, 0);
    /// ```
    fn from(trigger: DreamsTrigger) -> Self {
        Self {
            memory_threshold: u64::from(trigger.memory_threshold),
            edge_threshold: u64::from(trigger.edge_threshold),
            min_interval_secs: u64::from(trigger.min_interval_hours) * 3_600,
            age_floor_secs: u64::from(trigger.age_floor_days) * 86_400,
        }
    }
}
