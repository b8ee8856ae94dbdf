//! `DREAMS.ACK <org> <payload> SUCCESS|FAILURE [NODE <id>] [TRIGGER ...]`,
//! and its clause, which `DREAMS.DRAIN ... ACK <payload> ...` carries too.

use super::{node, organization, Trigger};
use crate::args::Args;
use crate::commands::dreams::ACK;
use crate::error::CommandError;
use crate::request::options::{once, unknown_option};
use crate::request::{Argv, Request};

/// Acknowledge a drained fire by its exact payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack<'a> {
    /// The organization.
    pub org: &'a str,
    /// What is acknowledged.
    pub clause: AckClause<'a>,
}

/// An acknowledgement after its organization: `<payload>
/// SUCCESS|FAILURE [NODE <id>] [TRIGGER ...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckClause<'a> {
    /// The drained payload, exactly (read when the request is applied).
    pub payload: &'a [u8],
    /// `SUCCESS` (else `FAILURE`).
    pub success: bool,
    /// The node acknowledging (`NODE`), if given.
    pub node: Option<&'a str>,
    /// Thresholds for the retained counters (`TRIGGER`), if given.
    pub trigger: Option<Trigger>,
}

impl<'a> AckClause<'a> {
    /// Read the clause to the end of `args`.
    #[inline]
    pub fn parse(args: &mut Args<'a>) -> Result<Self, CommandError> {
        let payload = args.required("payload")?;
        let success = match args.option_in(&["SUCCESS", "FAILURE"]) {
            Some(Ok("SUCCESS")) => true,
            Some(Ok(_)) => false,
            _ => return Err(CommandError::err("the result must be SUCCESS or FAILURE")),
        };
        let (mut fired_by, mut trigger) = (None, None);
        while let Some(option) = args.option_in(&["NODE", "TRIGGER"]) {
            match option {
                Ok("NODE") => once(&mut fired_by, node(args)?, "NODE")?,
                Ok(_) => once(&mut trigger, Trigger::parse(args)?, "TRIGGER")?,
                Err(other) => return Err(unknown_option(&other)),
            }
        }
        Ok(Self { payload, success, node: fired_by, trigger })
    }

    /// Write the clause.
    pub fn encode(&self, out: &mut Argv) {
        out.push(self.payload).push(if self.success { "SUCCESS" } else { "FAILURE" }).option("NODE", self.node);
        if let Some(trigger) = &self.trigger {
            trigger.encode(out);
        }
    }

    /// How many arguments the clause takes: the payload, the result, and
    /// each option's keyword and values.
    pub fn argument_count(&self) -> usize {
        2 + if self.node.is_some() { 2 } else { 0 } + if self.trigger.is_some() { 5 } else { 0 }
    }
}

impl<'a> Request<'a> for Ack<'a> {
    const COMMAND: &'static [&'static str] = &[ACK];

    #[inline]
    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let org = organization(&mut args)?;
        Ok(Self { org, clause: AckClause::parse(&mut args)? })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org);
        self.clause.encode(out);
    }
}
