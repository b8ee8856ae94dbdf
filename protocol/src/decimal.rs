//! Decimal integers read straight from argument or stored bytes, defined
//! once for the argument reader (`args`) and the module's cores that read
//! back what the module wrote (an organization's stored limits).

/// Parse a decimal unsigned integer (digits only) no larger than `max`.
/// Read straight from the bytes (no UTF-8 pass and `str::parse`: every
/// hot command reads a few): digits only, at most 20, in `u64`.
pub fn parse_unsigned(bytes: &[u8], max: u64) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 20 {
        return None;
    }
    let mut value: u64 = 0;
    for &byte in bytes {
        if !byte.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(byte - b'0'))?;
    }
    (value <= max).then_some(value)
}

/// Parse a decimal signed integer (`-` and digits only).
pub fn parse_signed(bytes: &[u8]) -> Option<i64> {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}
