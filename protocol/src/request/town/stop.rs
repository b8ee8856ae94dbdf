//! The `TOWN.STOP` subcommands' requests: `REQUEST <town> <agent-id> [TTL
//! <secs>]`, `CHECK|CLEAR <town> <agent-id>`.

use super::container_args::{id, town, town_and_id};
use crate::args::Args;
use crate::commands::town::STOP;
use crate::error::CommandError;
use crate::request::options::{given_twice, unknown_option};
use crate::request::{Argv, Request};

/// The longest stop flag lifetime `TTL` accepts (100 years, seconds), far
/// below clock overflow.
pub const STOP_TTL_SECS_MAX: u64 = 3_153_600_000;

/// `TOWN.STOP REQUEST <town> <agent-id> [TTL <secs>]`: set an agent's stop
/// flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopRequest<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent id (not empty).
    pub agent: &'a str,
    /// The flag's lifetime (1 to [`STOP_TTL_SECS_MAX`] seconds), if given;
    /// the module's default otherwise.
    pub ttl_secs: Option<u64>,
}

impl<'a> Request<'a> for StopRequest<'a> {
    const COMMAND: &'static [&'static str] = &[STOP, "REQUEST"];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let agent = id(&mut args, "agent id")?;
        let mut ttl_secs = None;
        while let Some(option) = args.option() {
            match option.as_str() {
                // A second TTL is refused before its value is read.
                "TTL" if ttl_secs.is_none() => {
                    ttl_secs = Some(args.unsigned_in("TTL (seconds)", 1, STOP_TTL_SECS_MAX)?);
                }
                "TTL" => return Err(given_twice("TTL")),
                other => return Err(unknown_option(other)),
            }
        }
        Ok(Self { town, agent, ttl_secs })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.agent).option("TTL", self.ttl_secs);
    }
}

town_and_id!(
    /// `TOWN.STOP CHECK <town> <agent-id>`: whether a stop was requested.
    StopCheck = [STOP, "CHECK"], agent: "agent id"
);

town_and_id!(
    /// `TOWN.STOP CLEAR <town> <agent-id>`: remove an agent's stop flag.
    StopClear = [STOP, "CLEAR"], agent: "agent id"
);

#[cfg(test)]
mod tests {
    use crate::request::round_trip;

    /// The TTL's edges and repeats, which random argv seldom reach.
    #[test]
    fn a_ttl_encodes_back_to_itself_and_is_read_once() {
        let request = |argv: &[&[u8]]| round_trip(&["TOWN.STOP", "REQUEST"], argv).unwrap();
        assert_eq!(request(&[b"town", b"w1", b"ttl", b"60"]), Ok(true));
        assert_eq!(request(&[b"town", b"w1", b"TTL", b"3153600000"]), Ok(true));
        assert_eq!(request(&[b"town", b"w1", b"TTL", b"0"]), Ok(false));
        assert_eq!(request(&[b"town", b"w1", b"TTL", b"3153600001"]), Ok(false));
        assert_eq!(request(&[b"town", b"w1", b"TTL", b"5", b"TTL", b"6"]), Ok(false));
    }
}
