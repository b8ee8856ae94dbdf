//! `DREAMS.FIRE <org> <project> <memory-type> [NODE <id>]`.

use super::{node, Region};
use crate::args::Args;
use crate::commands::dreams::FIRE;
use crate::error::CommandError;
use crate::request::options::{once, unknown_option};
use crate::request::{Argv, Request};

/// Queue an explicit fire of a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fire<'a> {
    /// The region to fire.
    pub region: Region<'a>,
    /// The node that fired (`NODE`), if given.
    pub node: Option<&'a str>,
}

impl<'a> Request<'a> for Fire<'a> {
    const COMMAND: &'static [&'static str] = &[FIRE];

    #[inline]
    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let region = Region::parse(&mut args)?;
        let mut fired_by = None;
        while let Some(option) = args.option() {
            match option.as_str() {
                "NODE" => once(&mut fired_by, node(&mut args)?, "NODE")?,
                other => return Err(unknown_option(other)),
            }
        }
        Ok(Self { region, node: fired_by })
    }

    fn encode(&self, out: &mut Argv) {
        self.region.encode(out);
        out.option("NODE", self.node);
    }
}
