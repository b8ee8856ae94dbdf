//! How old a Town message is: its `created_at` (RFC 3339, set by the
//! sender), read from the stored JSON. Used by `TOWN.STATS` for the age of
//! the message at the head of a list; a message without a readable
//! `created_at` has no age (the statistics say so rather than guess).

use super::json::Object;

/// `created_at` of the message `bytes` in unix milliseconds, if it has one
/// that parses as RFC 3339.
pub fn created_at_ms(bytes: &[u8]) -> Option<i64> {
    let object = Object::parse(bytes).ok()?;
    let text = object.string("created_at").ok()??;
    chrono::DateTime::parse_from_rfc3339(&text).ok().map(|at| at.timestamp_millis())
}

/// The age at `now_ms` of a message created at `created_ms` (0 for a clock
/// behind the sender's).
pub fn age_ms(now_ms: i64, created_ms: i64) -> i64 {
    now_ms.saturating_sub(created_ms).max(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_created_at() {
        let message = br#"{"id":"1","to":"b","created_at":"2025-01-01T00:00:01Z"}"#;
        assert_eq!(created_at_ms(message), Some(1_735_689_601_000));
        let offset = br#"{"id":"1","to":"b","created_at":"2025-01-01T01:00:01.5+01:00"}"#;
        assert_eq!(created_at_ms(offset), Some(1_735_689_601_500));
    }

    #[test]
    fn no_age_without_a_readable_created_at() {
        assert_eq!(created_at_ms(br#"{"id":"1","to":"b"}"#), None);
        assert_eq!(created_at_ms(br#"{"created_at":5}"#), None);
        assert_eq!(created_at_ms(br#"{"created_at":"yesterday"}"#), None);
        assert_eq!(created_at_ms(b"not json"), None);
    }

    #[test]
    fn ages_never_go_negative() {
        assert_eq!(age_ms(10, 4), 6);
        assert_eq!(age_ms(4, 10), 0);
    }
}
