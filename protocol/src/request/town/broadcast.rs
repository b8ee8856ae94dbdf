//! `TOWN.BROADCAST <town> <message-json>`.

use super::town;
use crate::args::Args;
use crate::commands::town::BROADCAST;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// Publish a message on the town's broadcast channel. The message is
/// taken as bytes here: the module checks that it is a JSON object after
/// this parse, with the same error in the same order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Broadcast<'a> {
    /// The town.
    pub town: &'a str,
    /// The message: a JSON object.
    pub message: &'a [u8],
}

impl<'a> Request<'a> for Broadcast<'a> {
    const COMMAND: &'static [&'static str] = &[BROADCAST];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let message = args.required("message")?;
        args.end()?;
        Ok(Self { town, message })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.message);
    }
}
