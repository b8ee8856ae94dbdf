//! `TOWN.ACK <town> <agent> <message-id> [<message-id> ...]`.

use super::{id, town};
use crate::args::Args;
use crate::commands::town::ACK;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// Acknowledge reliably received messages by their ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent that received the messages.
    pub agent: &'a str,
    /// The ids, in order (at least one).
    pub ids: &'a [&'a [u8]],
}

impl<'a> Request<'a> for Ack<'a> {
    const COMMAND: &'static [&'static str] = &[ACK];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let agent = id(&mut args, "agent id")?;
        let first = args.position();
        args.required("message id")?;
        Ok(Self { town, agent, ids: argv.get(first..).unwrap_or_default() })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.agent);
        for id in self.ids {
            out.push(*id);
        }
    }
}
