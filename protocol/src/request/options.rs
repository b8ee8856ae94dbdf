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
