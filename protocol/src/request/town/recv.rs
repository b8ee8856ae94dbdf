//! `TOWN.RECV <town> <agent> [BLOCK <secs>] [COUNT <n>] [URGENT] [RELIABLE]
//! [LEASE <secs>] [ACK <message-id>]`.

use super::{id, town};
use crate::args::{is_word, Args};
use crate::commands::town::RECV;
use crate::error::CommandError;
use crate::request::options::Timeout;
use crate::request::options::{flag_once, given_twice, lease_secs, unknown_option};
use crate::request::{Argv, Request};

/// Receive an agent's messages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recv<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent whose messages are taken.
    pub agent: &'a str,
    /// Wait this many milliseconds for a message (`BLOCK`; 0: forever).
    pub block_ms: Option<i64>,
    /// How many messages at most (`COUNT`, 1 to `i64::MAX`).
    pub count: Option<u64>,
    /// Only the urgent inbox (`URGENT`).
    pub urgent: bool,
    /// Keep each message pending until acknowledged (`RELIABLE`).
    pub reliable: bool,
    /// Lease each message this many seconds (`LEASE`, with `RELIABLE`;
    /// when absent the module applies its `dreamtown.town-lease` config).
    pub lease: Option<f64>,
    /// Acknowledge this message first (`ACK`, with `RELIABLE`).
    pub ack: Option<&'a [u8]>,
}

impl<'a> Recv<'a> {
    /// A receive of `agent`'s messages with every option off: one message,
    /// urgent inbox first, not blocking, not kept pending.
    pub fn new(town: &'a str, agent: &'a str) -> Self {
        Self { town, agent, block_ms: None, count: None, urgent: false, reliable: false, lease: None, ack: None }
    }

    /// Where the `ACK` clause starts in `argv`, which [`Recv::parse`] accepted with
    /// one: at the first argument after the agent that reads `ACK`, since no
    /// other option's value can (`BLOCK`, `COUNT` and `LEASE` take numbers).
    pub fn ack_clause_at(argv: &[&[u8]]) -> Option<usize> {
        argv.iter().skip(2).position(|arg| is_word(arg, "ACK")).map(|at| at + 2)
    }
}

impl<'a> Request<'a> for Recv<'a> {
    const COMMAND: &'static [&'static str] = &[RECV];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let agent = id(&mut args, "agent id")?;
        let mut block_ms = None;
        let mut count = None;
        let (mut urgent, mut reliable) = (false, false);
        let mut lease = None;
        let mut ack = None;
        while let Some(option) = args.option() {
            match option.as_str() {
                "ACK" if ack.is_none() => ack = Some(args.required("message id")?),
                "BLOCK" if block_ms.is_none() => block_ms = Some(args.timeout_ms()?),
                "COUNT" if count.is_none() => {
                    count = Some(args.unsigned_in("count", 1, i64::MAX as u64)?);
                }
                "URGENT" => flag_once(&mut urgent, "URGENT")?,
                "RELIABLE" => flag_once(&mut reliable, "RELIABLE")?,
                "LEASE" if lease.is_none() => lease = Some(lease_secs(&mut args)?),
                "BLOCK" | "COUNT" | "LEASE" | "ACK" => return Err(given_twice(&option)),
                other => return Err(unknown_option(other)),
            }
        }
        if ack.is_some() && !reliable {
            return Err(CommandError::err("ACK needs RELIABLE (only pending messages are acknowledged)"));
        }
        if lease.is_some() && !reliable {
            return Err(CommandError::err("LEASE needs RELIABLE (only pending messages can be leased)"));
        }
        Ok(Self { town, agent, block_ms, count, urgent, reliable, lease, ack })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town)
            .push(self.agent)
            .option("BLOCK", self.block_ms.map(|ms| Timeout { ms }))
            .option("COUNT", self.count)
            .flag("URGENT", self.urgent)
            .flag("RELIABLE", self.reliable)
            .option("LEASE", self.lease)
            .option("ACK", self.ack);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clause a blocked call leaves out is the one the parse read,
    /// wherever it is and whatever the agent and the id are named.
    #[test]
    fn the_ack_clause_is_where_the_parse_read_it() {
        let cases: [(&[&[u8]], usize); 4] = [
            (&[b"t", b"a", b"RELIABLE", b"ACK", b"m"], 3),
            (&[b"t", b"ACK", b"ack", b"ACK", b"RELIABLE"], 2),
            (&[b"t", b"a", b"BLOCK", b"1", b"COUNT", b"2", b"LEASE", b"5", b"RELIABLE", b"Ack", b"ACK"], 9),
            (&[b"t", b"a", b"URGENT", b"RELIABLE", b"aCk", b"x"], 4),
        ];
        for (argv, at) in cases {
            let request = Recv::parse(argv).expect("accepted");
            assert!(request.ack.is_some());
            assert_eq!(Recv::ack_clause_at(argv), Some(at), "{argv:?}");
            assert_eq!(argv.get(at + 1).copied(), request.ack, "{argv:?}");
        }
    }
}
