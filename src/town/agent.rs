//! Agent records: the fields the module itself reads or writes (the name
//! for lookup, the two counters, the heartbeat) and the heartbeat's
//! timestamp format, RFC 3339 in UTC as tinytown's chrono writes it.

use chrono::{DateTime, SecondsFormat, Utc};

/// The field holding the agent's name (indexed for `BYNAME`).
pub const NAME: &[u8] = b"name";
/// The field `HEARTBEAT` sets.
pub const LAST_HEARTBEAT: &[u8] = b"last_heartbeat";

/// A counter `TOWN.AGENT INCR` increments (its word and field are in the
/// protocol crate, shared with the client).
pub use dreamtown_protocol::request::town::Counter;

/// `now_ms` (unix ms) as RFC 3339 UTC, e.g. `2025-01-02T03:04:05.678+00:00`
/// (what chrono's `to_rfc3339` writes, so tinytown parses it back).
pub fn timestamp(now_ms: i64) -> String {
    let at = DateTime::<Utc>::from_timestamp_millis(now_ms).unwrap_or_default();
    at.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_timestamps_are_rfc3339_utc() {
        assert_eq!(timestamp(1_735_787_045_678), "2025-01-02T03:04:05.678+00:00");
        assert_eq!(timestamp(1_735_787_045_000), "2025-01-02T03:04:05+00:00");
        let parsed = DateTime::parse_from_rfc3339(&timestamp(1_735_787_045_678)).unwrap();
        assert_eq!(parsed.timestamp_millis(), 1_735_787_045_678);
    }
}
