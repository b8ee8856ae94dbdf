//! The option readers both families' requests share, defined once: the
//! errors of an unknown or repeated option, options given at most once,
//! and a lease length (`LEASE <secs>`).

use crate::args::Args;
use crate::error::CommandError;

/// Longest lease accepted (seconds): 100 years.
pub const LEASE_SECS_MAX: f64 = 3_153_600_000.0;

/// `ERR unknown option`.
pub fn unknown_option(option: &str) -> CommandError {
    CommandError::err(format_args!("unknown option '{option}'"))
}

/// `ERR <option> given more than once`.
pub fn given_twice(option: &str) -> CommandError {
    CommandError::err(format_args!("{option} given more than once"))
}

/// Take an option's value, refusing the option given twice.
pub fn once<T>(slot: &mut Option<T>, value: T, option: &str) -> Result<(), CommandError> {
    if slot.is_some() {
        return Err(given_twice(option));
    }
    *slot = Some(value);
    Ok(())
}

/// Set a flag option, refusing it given twice.
pub fn flag_once(seen: &mut bool, option: &str) -> Result<(), CommandError> {
    if *seen {
        return Err(given_twice(option));
    }
    *seen = true;
    Ok(())
}

/// Read a lease length in seconds (decimal, > 0).
pub fn lease_secs(args: &mut Args<'_>) -> Result<f64, CommandError> {
    let text = args.text("lease (seconds)")?;
    let secs: f64 = text.parse().ok().filter(|secs: &f64| *secs > 0.0 && *secs <= LEASE_SECS_MAX).ok_or_else(|| {
        CommandError::err(format_args!(
            "lease must be a number of seconds above 0 and at most 3153600000, got '{text}'"
        ))
    })?;
    Ok(secs)
}

/// A blocking timeout as the module reads it ([`Args::timeout_ms`]):
/// milliseconds, 0 for forever. Written as decimal seconds that read back
/// as the same milliseconds: `<secs>.<mmm>`, as the seeds' clients wrote
/// it, whenever that text does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeout {
    /// Milliseconds (0: forever).
    pub ms: i64,
}

impl Timeout {
    /// Read the timeout (decimal seconds).
    pub fn parse(args: &mut Args<'_>) -> Result<Self, CommandError> {
        args.timeout_ms().map(|ms| Self { ms })
    }

    /// `duration` as the seeds' clients send it (seconds with three
    /// decimals, rounded up to the millisecond: [`duration_text`]), read
    /// as the module reads that text; its error when the module refuses it.
    pub fn from_duration(duration: std::time::Duration) -> Result<Self, CommandError> {
        crate::args::parse_timeout_ms(duration_text(duration).as_bytes()).map(|ms| Self { ms })
    }
}

impl crate::request::EncodeArg for Timeout {
    fn encode_arg(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(timeout_text(self.ms).as_bytes());
    }
}

/// Decimal seconds that [`crate::args::parse_timeout_ms`] reads as `ms`:
/// `<secs>.<mmm>` when that does, else the shortest text of the nearest
/// `f64` that does (a timeout read from an argument is the ceiling of a
/// double's thousandfold, so one near `ms / 1000` always does).
fn timeout_text(ms: i64) -> String {
    let reads_back = |text: &str| crate::args::parse_timeout_ms(text.as_bytes()) == Ok(ms);
    let text = format!("{}.{:03}", ms / 1000, (ms % 1000).abs());
    if reads_back(&text) {
        return text;
    }
    let near = ms as f64 / 1000.0;
    for step in 1..=64u64 {
        for candidate in [f64::from_bits(near.to_bits().saturating_sub(step)), f64::from_bits(near.to_bits() + step)] {
            let text = candidate.to_string();
            if reads_back(&text) {
                return text;
            }
        }
    }
    text
}

/// `duration` as decimal seconds with three decimals, rounded up to the
/// millisecond: what the clients send for a timeout or a lease.
pub fn duration_text(duration: std::time::Duration) -> String {
    let millis = duration.subsec_nanos().div_ceil(1_000_000);
    let (secs, millis) =
        if millis == 1_000 { (duration.as_secs().saturating_add(1), 0) } else { (duration.as_secs(), millis) };
    format!("{secs}.{millis:03}")
}

/// A lease of `duration` as the clients send it ([`duration_text`]), read
/// as [`lease_secs`] reads it; its error when the module refuses it.
pub fn lease_from_duration(duration: std::time::Duration) -> Result<f64, CommandError> {
    let text = duration_text(duration);
    let argv = [text.as_bytes()];
    lease_secs(&mut Args::new(&argv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::EncodeArg;

    fn written(timeout: Timeout) -> Vec<u8> {
        let mut out = Vec::new();
        timeout.encode_arg(&mut out);
        out
    }

    #[test]
    fn timeouts_read_back_as_the_same_milliseconds() {
        let mut random = crate::test_random::Random::new(0x7100);
        let mut texts: Vec<String> = ["0", "0.001", "0.007", "1.5", "1e3", "9.223e15", "0.0001", "4.35", "1.005"]
            .iter()
            .map(|text| text.to_string())
            .collect();
        for _ in 0..20_000 {
            let magnitude = 10f64.powi(random.below(19) as i32 - 3);
            let seconds = (random.next() % 1_000_000) as f64 / 1_000_000.0 * magnitude;
            texts.push(seconds.to_string());
            texts.push(format!("{}.{:03}", random.below(100_000), random.below(1000)));
        }
        for text in texts {
            let Ok(ms) = crate::args::parse_timeout_ms(text.as_bytes()) else { continue };
            let again = written(Timeout { ms });
            assert_eq!(crate::args::parse_timeout_ms(&again), Ok(ms), "{text} -> {}", String::from_utf8_lossy(&again));
        }
    }

    #[test]
    fn durations_are_written_as_the_clients_wrote_them() {
        use std::time::Duration;
        for duration in [Duration::from_millis(1500), Duration::from_secs(5), Duration::from_nanos(1), Duration::ZERO] {
            let timeout = Timeout::from_duration(duration).unwrap();
            assert_eq!(written(timeout), duration_text(duration).into_bytes());
        }
        assert_eq!(duration_text(Duration::from_nanos(999_999_999)), "1.000");
        assert!(Timeout::from_duration(Duration::MAX).is_err());
        assert_eq!(lease_from_duration(Duration::from_secs(600)), Ok(600.0));
        assert!(lease_from_duration(Duration::ZERO).unwrap_err().message().ends_with("got '0.000'"));
    }
}
