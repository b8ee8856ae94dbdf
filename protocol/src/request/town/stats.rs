//! `TOWN.STATS <town> [<agent>]`.

use super::{id, town};
use crate::args::Args;
use crate::commands::town::STATS;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// A town's statistics, or one agent's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent, for an agent's statistics.
    pub agent: Option<&'a str>,
}

impl<'a> Request<'a> for Stats<'a> {
    const COMMAND: &'static [&'static str] = &[STATS];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        if args.is_empty() {
            return Ok(Self { town, agent: None });
        }
        let agent = id(&mut args, "agent id")?;
        args.end()?;
        Ok(Self { town, agent: Some(agent) })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town);
        if let Some(agent) = self.agent {
            out.push(agent);
        }
    }
}
