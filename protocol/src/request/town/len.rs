//! `TOWN.LEN <town> <agent>`.

use super::{id, town};
use crate::args::Args;
use crate::commands::town::LEN;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// The lengths of an agent's inbox, urgent inbox and pending list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Len<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent.
    pub agent: &'a str,
}

impl<'a> Request<'a> for Len<'a> {
    const COMMAND: &'static [&'static str] = &[LEN];

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
