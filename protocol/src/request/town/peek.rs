//! `TOWN.PEEK <town> <agent> <count>`.

use super::{id, town};
use crate::args::Args;
use crate::commands::town::PEEK;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// The first messages of an agent's inbox, left in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peek<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent.
    pub agent: &'a str,
    /// How many messages at most (up to `i64::MAX`).
    pub count: u64,
}

impl<'a> Request<'a> for Peek<'a> {
    const COMMAND: &'static [&'static str] = &[PEEK];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let agent = id(&mut args, "agent id")?;
        let count = args.unsigned("count", i64::MAX as u64)?;
        args.end()?;
        Ok(Self { town, agent, count })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.agent).push(self.count);
    }
}
