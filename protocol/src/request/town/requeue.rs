//! `TOWN.REQUEUE <town> <agent>`.

use super::{id, town};
use crate::args::Args;
use crate::commands::town::REQUEUE;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// Hand an agent's unacknowledged pending messages back to its inbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requeue<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent.
    pub agent: &'a str,
}

impl<'a> Request<'a> for Requeue<'a> {
    const COMMAND: &'static [&'static str] = &[REQUEUE];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let agent = id(&mut args, "agent id")?;
        args.end()?;
        Ok(Self { town, agent })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.agent);
    }
}
