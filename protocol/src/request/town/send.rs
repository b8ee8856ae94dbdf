//! `TOWN.SEND <town> <message-json> [URGENT]`.

use super::town;
use crate::args::Args;
use crate::commands::town::SEND;
use crate::error::CommandError;
use crate::request::options::unknown_option;
use crate::request::{Argv, Request};

/// Store a message for its recipient. The message is taken as bytes here:
/// the module validates it as a message (its envelope: `to`, priority)
/// after this parse, with the same errors in the same order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Send<'a> {
    /// The town.
    pub town: &'a str,
    /// The message: a JSON object with at least `to`.
    pub message: &'a [u8],
    /// Into the urgent inbox (`URGENT`).
    pub urgent: bool,
}

impl<'a> Request<'a> for Send<'a> {
    const COMMAND: &'static [&'static str] = &[SEND];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let message = args.required("message")?;
        let urgent = match args.option() {
            None => false,
            Some(option) if option == "URGENT" => true,
            Some(other) => return Err(unknown_option(&other)),
        };
        args.end()?;
        Ok(Self { town, message, urgent })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.message).flag("URGENT", self.urgent);
    }
}
