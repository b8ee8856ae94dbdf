//! `DREAMS.LEN <org>`.

use super::organization_only;
use crate::commands::dreams::LEN;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// The lengths of the ready list, deferred set and in-flight list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Len<'a> {
    /// The organization.
    pub org: &'a str,
}

impl<'a> Request<'a> for Len<'a> {
    const COMMAND: &'static [&'static str] = &[LEN];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        organization_only(argv).map(|org| Self { org })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org);
    }
}
