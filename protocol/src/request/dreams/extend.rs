//! `DREAMS.EXTEND <org> <payload> <secs>`.

use super::organization;
use crate::args::Args;
use crate::commands::dreams::EXTEND;
use crate::error::CommandError;
use crate::request::options::lease_secs;
use crate::request::{Argv, Request};

/// Push the lease of a drained fire out to now + seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Extend<'a> {
    /// The organization.
    pub org: &'a str,
    /// The drained payload, exactly.
    pub payload: &'a [u8],
    /// The new lease, in seconds from now (above 0, at most
    /// [`LEASE_SECS_MAX`](crate::request::options::LEASE_SECS_MAX)).
    pub lease_secs: f64,
}

impl<'a> Request<'a> for Extend<'a> {
    const COMMAND: &'static [&'static str] = &[EXTEND];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let org = organization(&mut args)?;
        let payload = args.required("payload")?;
        let lease_secs = lease_secs(&mut args)?;
        args.end()?;
        Ok(Self { org, payload, lease_secs })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org).push(self.payload).push(self.lease_secs);
    }
}
