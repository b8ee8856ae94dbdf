//! `DREAMS.COUNTERS <org> <project> <memory-type>`.

use super::Region;
use crate::args::Args;
use crate::commands::dreams::COUNTERS;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// A region's shared counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counters<'a> {
    /// The region.
    pub region: Region<'a>,
}

impl<'a> Request<'a> for Counters<'a> {
    const COMMAND: &'static [&'static str] = &[COUNTERS];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let region = Region::parse(&mut args)?;
        args.end()?;
        Ok(Self { region })
    }

    fn encode(&self, out: &mut Argv) {
        self.region.encode(out);
    }
}
