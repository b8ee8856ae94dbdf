//! `DREAMS.RECOVER <org>`.

use super::organization_only;
use crate::commands::dreams::RECOVER;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// Move everything in flight back to ready (after a worker died).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recover<'a> {
    /// The organization.
    pub org: &'a str,
}

impl<'a> Request<'a> for Recover<'a> {
    const COMMAND: &'static [&'static str] = &[RECOVER];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        organization_only(argv).map(|org| Self { org })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org);
    }
}
