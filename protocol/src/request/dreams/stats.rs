//! `DREAMS.STATS <org>`.

use super::organization_only;
use crate::commands::dreams::STATS;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// An organization's queue statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats<'a> {
    /// The organization.
    pub org: &'a str,
}

impl<'a> Request<'a> for Stats<'a> {
    const COMMAND: &'static [&'static str] = &[STATS];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        organization_only(argv).map(|org| Self { org })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org);
    }
}
