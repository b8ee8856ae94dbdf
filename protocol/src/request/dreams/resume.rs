//! `DREAMS.RESUME <org>`.

use super::organization_only;
use crate::commands::dreams::RESUME;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// End `DREAMS.PAUSE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resume<'a> {
    /// The organization.
    pub org: &'a str,
}

impl<'a> Request<'a> for Resume<'a> {
    const COMMAND: &'static [&'static str] = &[RESUME];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        organization_only(argv).map(|org| Self { org })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org);
    }
}
