//! `DREAMS.INFLIGHT <org> [LIMIT <offset> <count>]`.

use super::organization;
use crate::args::Args;
use crate::commands::dreams::INFLIGHT;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// The largest offset and count `LIMIT` takes.
pub const LIMIT_MAX: u64 = i64::MAX as u64;

/// The in-flight items with their lease deadlines, all or a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inflight<'a> {
    /// The organization.
    pub org: &'a str,
    /// `LIMIT <offset> <count>`, if given (else every item).
    pub limit: Option<Page>,
}

/// A range of a list: `count` items from position `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// The first position.
    pub offset: u64,
    /// How many items at most.
    pub count: u64,
}

impl<'a> Request<'a> for Inflight<'a> {
    const COMMAND: &'static [&'static str] = &[INFLIGHT];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let org = organization(&mut args)?;
        let mut limit = None;
        if args.keyword("LIMIT") {
            let offset = args.unsigned("offset", LIMIT_MAX)?;
            let count = args.unsigned("count", LIMIT_MAX)?;
            limit = Some(Page { offset, count });
        }
        args.end()?;
        Ok(Self { org, limit })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org);
        if let Some(Page { offset, count }) = self.limit {
            out.push("LIMIT").push(offset).push(count);
        }
    }
}
