//! The `TOWN.ACTIVITY` subcommands' requests: `LOG <town> <agent-id>
//! <text>` and `GET <town> <agent-id>`.

use super::container_args::{id, town, town_and_id};
use crate::args::Args;
use crate::commands::town::ACTIVITY;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// `TOWN.ACTIVITY LOG <town> <agent-id> <text>`: prepend an entry to an
/// agent's activity log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActivityLog<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent id (not empty).
    pub agent: &'a str,
    /// The entry, any bytes.
    pub text: &'a [u8],
}

impl<'a> Request<'a> for ActivityLog<'a> {
    const COMMAND: &'static [&'static str] = &[ACTIVITY, "LOG"];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let agent = id(&mut args, "agent id")?;
        let text = args.required("text")?;
        args.end()?;
        Ok(Self { town, agent, text })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.agent).push(self.text);
    }
}

town_and_id!(
    /// `TOWN.ACTIVITY GET <town> <agent-id>`: an agent's newest entries.
    ActivityGet = [ACTIVITY, "GET"], agent: "agent id"
);
