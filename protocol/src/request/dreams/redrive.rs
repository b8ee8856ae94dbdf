//! `DREAMS.REDRIVE <org> [COUNT <n>]`.

use super::organization;
use crate::args::Args;
use crate::commands::dreams::REDRIVE;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// Dead items one call looks at unless told: a step that stays small.
pub const DEFAULT_COUNT: u64 = 100;

/// The largest `COUNT`: one call stays a few milliseconds.
pub const COUNT_MAX: u64 = 10_000;

/// Move dead letters that are fire messages of the organization back to ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Redrive<'a> {
    /// The organization.
    pub org: &'a str,
    /// How many dead items to look at (`COUNT`, 1 to [`COUNT_MAX`]), if
    /// given (else [`DEFAULT_COUNT`]).
    pub count: Option<u64>,
}

impl Redrive<'_> {
    /// How many dead items the call looks at.
    pub fn count(&self) -> u64 {
        self.count.unwrap_or(DEFAULT_COUNT)
    }
}

impl<'a> Request<'a> for Redrive<'a> {
    const COMMAND: &'static [&'static str] = &[REDRIVE];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let org = organization(&mut args)?;
        let mut count = None;
        if args.keyword("COUNT") {
            let given = args.unsigned("count", COUNT_MAX)?;
            if given == 0 {
                return Err(CommandError::err(format_args!("count must be from 1 to {COUNT_MAX}")));
            }
            count = Some(given);
        }
        args.end()?;
        Ok(Self { org, count })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org).option("COUNT", self.count);
    }
}
