//! `TOWN.EXTEND <town> <agent> <message-id> <secs>`.

use super::{id, town};
use crate::args::Args;
use crate::commands::town::EXTEND;
use crate::error::CommandError;
use crate::request::options::lease_secs;
use crate::request::{Argv, Request};

/// Push a leased message's lease out to now + `lease` seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Extend<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent holding the lease.
    pub agent: &'a str,
    /// The message's id.
    pub message_id: &'a [u8],
    /// The new lease, in seconds from now (above 0, at most 100 years).
    pub lease: f64,
}

impl<'a> Request<'a> for Extend<'a> {
    const COMMAND: &'static [&'static str] = &[EXTEND];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let agent = id(&mut args, "agent id")?;
        let message_id = args.required("message id")?;
        let lease = lease_secs(&mut args)?;
        args.end()?;
        Ok(Self { town, agent, message_id, lease })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.agent).push(self.message_id).push(self.lease);
    }
}
