//! The number readers of the argument parser (`dreamtown_protocol::args`): unsigned
//! and signed integers against `str::parse` (same verdict, same value, and
//! every value's decimal text reads back to it), and blocking timeouts
//! against an independent model (finite, non-negative, at most 10^12
//! seconds, rounded up to whole milliseconds; never an overflow).
#![no_main]

use dreamtown::fuzzing::{parse_signed, parse_timeout_ms, parse_unsigned};
use libfuzzer_sys::fuzz_target;

fn unsigned_model(bytes: &[u8], max: u64) -> Option<u64> {
    if bytes.is_empty() || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse::<u64>().ok().filter(|value| *value <= max)
}

fn signed_model(bytes: &[u8]) -> Option<i64> {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse::<i64>().ok()
}

fuzz_target!(|data: &[u8]| {
    let max = match data.first() {
        Some(0) => u64::MAX,
        Some(&b) => u64::from(b).pow(u32::from(b % 9)),
        None => 0,
    };
    let text = data.get(1..).unwrap_or_default();
    let unsigned = parse_unsigned(text, max);
    // Leading zeros beyond 20 digits are refused, as before: the model
    // accepts them, so compare only within 20 bytes.
    if text.len() <= 20 {
        assert_eq!(unsigned, unsigned_model(text, max), "{text:?} max {max}");
    } else {
        assert_eq!(unsigned, None);
    }
    if let Some(value) = unsigned {
        assert!(value <= max);
        assert_eq!(parse_unsigned(value.to_string().as_bytes(), max), Some(value));
    }
    let signed = parse_signed(text);
    let digits = text.strip_prefix(b"-").unwrap_or(text).len();
    if digits <= 19 {
        assert_eq!(signed, signed_model(text), "{text:?}");
    } else {
        assert_eq!(signed, None);
    }
    if let Some(value) = signed {
        assert_eq!(parse_signed(value.to_string().as_bytes()), Some(value));
    }
    let timeout = parse_timeout_ms(text);
    let model = std::str::from_utf8(text)
        .ok()
        .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)))
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| (s * 1000.0).ceil())
        // Just below Redis's own bound (a deadline that fits a long long):
        // the seeds' longest waits (issue 33).
        .filter(|ms| *ms <= 9.223e18);
    match (timeout, model) {
        (Ok(ms), Some(expected)) => {
            assert!((0..=9_223_000_000_000_000_000).contains(&ms), "{text:?} -> {ms}");
            assert_eq!(ms as f64, expected, "{text:?}");
        }
        (Err(error), None) => assert!(error.starts_with("ERR timeout is "), "{error}"),
        (timeout, model) => panic!("{text:?}: parser {timeout:?}, model {model:?}"),
    }
});
