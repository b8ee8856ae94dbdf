//! A quiet window's text, `HH-HH` (two-digit local hours, start ≠ end),
//! and a UTC offset in minutes: read by `DREAMS.DRAIN ... QUIET <HH-HH>
//! OFFSET <minutes>` and by the core's `QuietHours` (its setting), so
//! both refuse the same texts with the same words.

use crate::request::EncodeArg;

/// Local hours `[start_hour, end_hour)`, wrapping midnight when
/// `start_hour > end_hour`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuietWindow {
    /// Start hour (0-23), inclusive.
    pub start_hour: u8,
    /// End hour (0-23), exclusive.
    pub end_hour: u8,
}

impl QuietWindow {
    /// Read `HH-HH` with two-digit hours, start ≠ end; the error says why not.
    pub fn parse(value: &str) -> Result<Self, &'static str> {
        let (start, end) = value.split_once('-').ok_or("quiet hours must use START-END")?;
        if start.len() != 2 || end.len() != 2 {
            return Err("quiet hours must use two-digit UTC hours");
        }
        let start_hour = parse_hour(start)?;
        let end_hour = parse_hour(end)?;
        if start_hour == end_hour {
            return Err("quiet window must not be empty");
        }
        Ok(Self { start_hour, end_hour })
    }
}

fn parse_hour(digits: &str) -> Result<u8, &'static str> {
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("quiet hours must be numbers");
    }
    match digits.parse::<u8>() {
        Ok(hour) if hour < 24 => Ok(hour),
        _ => Err("hours must be 00-23"),
    }
}

impl EncodeArg for QuietWindow {
    /// `HH-HH`.
    fn encode_arg(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("{:02}-{:02}", self.start_hour, self.end_hour).as_bytes());
    }
}

/// Validate a UTC offset in minutes (-1439..=1439).
pub fn utc_offset(offset: i64) -> Result<i16, &'static str> {
    if (-1439..=1439).contains(&offset) {
        Ok(offset as i16)
    } else {
        Err("UTC offset out of range (-1439..1439 minutes)")
    }
}
