//! `TOWN.RECLAIM <town> <from-agent> <to-agent>`.

use super::{id, town};
use crate::args::Args;
use crate::commands::town::RECLAIM;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// Move all of an agent's mail to another agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reclaim<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent whose mail moves.
    pub from: &'a str,
    /// The agent it moves to (not `from`).
    pub to: &'a str,
}

impl<'a> Request<'a> for Reclaim<'a> {
    const COMMAND: &'static [&'static str] = &[RECLAIM];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let from = id(&mut args, "from agent id")?;
        let to = id(&mut args, "to agent id")?;
        args.end()?;
        if from == to {
            return Err(CommandError::err("cannot reclaim an agent's messages for itself"));
        }
        Ok(Self { town, from, to })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.from).push(self.to);
    }
}
