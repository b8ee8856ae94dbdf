//! `TOWN.RESET <town> [AGENTS]`.

use super::town;
use crate::args::Args;
use crate::commands::town::RESET;
use crate::error::CommandError;
use crate::request::options::unknown_option;
use crate::request::{Argv, Request};

/// Delete a town's state, or only its agents' state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reset<'a> {
    /// The town.
    pub town: &'a str,
    /// Only the agents' state (`AGENTS`), keeping tasks, the backlog and
    /// the streams.
    pub agents_only: bool,
}

impl<'a> Request<'a> for Reset<'a> {
    const COMMAND: &'static [&'static str] = &[RESET];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let agents_only = match args.option() {
            None => false,
            Some(option) if option == "AGENTS" => true,
            Some(other) => return Err(unknown_option(&other)),
        };
        args.end()?;
        Ok(Self { town, agents_only })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).flag("AGENTS", self.agents_only);
    }
}
