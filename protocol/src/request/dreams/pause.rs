//! `DREAMS.PAUSE <org>`.

use super::organization_only;
use crate::commands::dreams::PAUSE;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// Hand out nothing of the organization's queue until `DREAMS.RESUME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause<'a> {
    /// The organization.
    pub org: &'a str,
}

impl<'a> Request<'a> for Pause<'a> {
    const COMMAND: &'static [&'static str] = &[PAUSE];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        organization_only(argv).map(|org| Self { org })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org);
    }
}
