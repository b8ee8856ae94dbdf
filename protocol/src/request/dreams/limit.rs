//! `DREAMS.LIMIT SET <org> [CONCURRENCY <n>|NONE] [RATE <count> <seconds>|NONE]`,
//! `DREAMS.LIMIT GET <org>`, `DREAMS.LIMIT CLEAR <org>`; and the bounds of
//! a fair share, which the core's stored limits are read against too.

use super::{organization, organization_only};
use crate::args::Args;
use crate::commands::dreams::LIMIT;
use crate::error::CommandError;
use crate::request::options::{given_twice, unknown_option};
use crate::request::{Argv, Request};

/// The largest concurrency cap.
pub const CONCURRENCY_MAX: u64 = u32::MAX as u64;
/// The largest count of a rate.
pub const RATE_COUNT_MAX: u64 = 1_000_000_000;
/// The longest period of a rate, in seconds (a year).
pub const RATE_SECONDS_MAX: u64 = 31_536_000;
/// The fastest rate, in items per second: the interval between items is
/// then 1,000 ns, so its rounding to whole nanoseconds stays below 0.1%.
pub const RATE_PER_SECOND_MAX: u64 = 1_000_000;

/// `count` items per `seconds`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// Items per period (also the burst: a full bucket).
    pub count: u64,
    /// The period, in seconds.
    pub seconds: u64,
}

impl Rate {
    /// A rate, if within the bounds (count and seconds at least 1, at most
    /// [`RATE_COUNT_MAX`] and [`RATE_SECONDS_MAX`], no faster than
    /// [`RATE_PER_SECOND_MAX`]); else why not.
    #[inline]
    pub fn new(count: u64, seconds: u64) -> Result<Self, String> {
        if !(1..=RATE_COUNT_MAX).contains(&count) {
            return Err(format!("rate count must be an integer from 1 to {RATE_COUNT_MAX}"));
        }
        if !(1..=RATE_SECONDS_MAX).contains(&seconds) {
            return Err(format!("rate seconds must be an integer from 1 to {RATE_SECONDS_MAX}"));
        }
        if count > seconds.saturating_mul(RATE_PER_SECOND_MAX) {
            return Err(format!("rate must be at most {RATE_PER_SECOND_MAX} items per second"));
        }
        Ok(Self { count, seconds })
    }
}

/// Set an organization's concurrency cap and/or drain rate; what is not
/// given stays as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitSet<'a> {
    /// The organization.
    pub org: &'a str,
    /// `CONCURRENCY <n>` (`Some(Some(n))`) or `CONCURRENCY NONE` (`Some(None)`).
    pub concurrency: Option<Option<u64>>,
    /// `RATE <count> <seconds>` (`Some(Some(rate))`) or `RATE NONE` (`Some(None)`).
    pub rate: Option<Option<Rate>>,
}

impl<'a> Request<'a> for LimitSet<'a> {
    const COMMAND: &'static [&'static str] = &[LIMIT, "SET"];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let org = organization(&mut args)?;
        let (mut concurrency, mut rate) = (None, None);
        while let Some(option) = args.option_in(&["CONCURRENCY", "RATE"]) {
            match option.map_err(|other| unknown_option(&other))? {
                "CONCURRENCY" if concurrency.is_none() => {
                    concurrency = Some(match args.keyword("NONE") {
                        true => None,
                        false => {
                            let text = args.text("concurrency")?;
                            let cap = crate::args::parse_unsigned(text.as_bytes(), CONCURRENCY_MAX)
                                .filter(|cap| *cap >= 1)
                                .ok_or_else(|| {
                                    CommandError::err(format_args!(
                                        "concurrency must be an integer from 1 to {CONCURRENCY_MAX} or NONE, got '{text}'"
                                    ))
                                })?;
                            Some(cap)
                        }
                    });
                }
                "RATE" if rate.is_none() => {
                    rate = Some(match args.keyword("NONE") {
                        true => None,
                        false => {
                            let count = args.unsigned("rate count", RATE_COUNT_MAX)?;
                            let seconds = args.unsigned("rate seconds", RATE_SECONDS_MAX)?;
                            Some(Rate::new(count, seconds).map_err(CommandError::err)?)
                        }
                    });
                }
                option => return Err(given_twice(option)),
            }
        }
        if concurrency.is_none() && rate.is_none() {
            return Err(CommandError::err("DREAMS.LIMIT SET needs CONCURRENCY or RATE (or both)"));
        }
        args.end()?;
        Ok(Self { org, concurrency, rate })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org);
        match self.concurrency {
            Some(Some(cap)) => {
                out.push("CONCURRENCY").push(cap);
            }
            Some(None) => {
                out.push("CONCURRENCY").push("NONE");
            }
            None => {}
        }
        match self.rate {
            Some(Some(rate)) => {
                out.push("RATE").push(rate.count).push(rate.seconds);
            }
            Some(None) => {
                out.push("RATE").push("NONE");
            }
            None => {}
        }
    }
}

/// An organization's limits as they stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitGet<'a> {
    /// The organization.
    pub org: &'a str,
}

impl<'a> Request<'a> for LimitGet<'a> {
    const COMMAND: &'static [&'static str] = &[LIMIT, "GET"];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        organization_only(argv).map(|org| Self { org })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org);
    }
}

/// Remove an organization's concurrency cap and rate (a pause stays).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitClear<'a> {
    /// The organization.
    pub org: &'a str,
}

impl<'a> Request<'a> for LimitClear<'a> {
    const COMMAND: &'static [&'static str] = &[LIMIT, "CLEAR"];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        organization_only(argv).map(|org| Self { org })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org);
    }
}
