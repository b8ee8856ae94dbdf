//! The option helpers both families' commands share, defined once: the
//! errors of an unknown or repeated option, options given at most once, a
//! lease length (`LEASE <secs>`), and the docs of the options several
//! commands take (`COUNT`, `LEASE`).

use crate::glue::args::Args;
use crate::glue::command::{Arg, ArgKind};
use crate::glue::reply::CommandError;
use crate::lease::LEASE_SECS_MAX;

/// `[COUNT count]`, for docs.
pub const COUNT_ARG: Arg = Arg::new("count", ArgKind::Integer).token("COUNT").optional();

/// `[LEASE secs]`, for docs.
pub const LEASE_ARG: Arg = Arg::new("secs", ArgKind::Double).token("LEASE").optional();

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
