//! Stop requests: a flag an agent checks at the start of each round. It
//! lives for an hour by default, so a request to an agent that already died
//! cleans itself up; `TTL` chooses another lifetime.

/// The default lifetime of a stop flag, in seconds.
pub const DEFAULT_TTL_SECS: u64 = 3_600;
/// The longest lifetime accepted (100 years), far below clock overflow
/// (a limit of the request, in the protocol crate).
pub use dreamtown_protocol::request::town::STOP_TTL_SECS_MAX as MAX_TTL_SECS;
/// The flag's value.
pub const FLAG: &[u8] = b"1";

/// When a flag set at `now_ms` for `ttl_secs` expires (unix ms).
pub fn expires_at(now_ms: i64, ttl_secs: u64) -> i64 {
    let ttl_ms = i64::try_from(ttl_secs.min(MAX_TTL_SECS)).unwrap_or(i64::MAX).saturating_mul(1000);
    now_ms.saturating_add(ttl_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_absolute_milliseconds() {
        assert_eq!(expires_at(1_000, DEFAULT_TTL_SECS), 3_601_000);
        assert_eq!(expires_at(0, 1), 1_000);
        assert_eq!(expires_at(i64::MAX - 5, 10), i64::MAX);
        assert_eq!(expires_at(0, u64::MAX), 3_153_600_000_000);
    }
}
