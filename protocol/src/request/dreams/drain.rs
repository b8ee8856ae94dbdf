//! `DREAMS.DRAIN <org> <timeout-secs> [QUIET <HH-HH>] [OFFSET <minutes>]
//! [NOQUIET] [LEASE <secs>] [COUNT <n>] [ACK <payload> SUCCESS|FAILURE
//! [NODE <id>] [TRIGGER ...]]` (the `ACK` clause last).

use super::quiet::{utc_offset, QuietWindow};
use super::{organization, AckClause};
use crate::args::Args;
use crate::commands::dreams::DRAIN;
use crate::error::CommandError;
use crate::request::options::{given_twice, lease_secs, unknown_option, Timeout};
use crate::request::{Argv, Request};

/// The largest `COUNT`: one call's batch stays small next to the main
/// thread's other work.
pub const COUNT_MAX: u64 = 1000;

/// Take the next fire(s) that should run, blocking until one is ready.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Drain<'a> {
    /// The organization.
    pub org: &'a str,
    /// How long to block.
    pub timeout: Timeout,
    /// The quiet hours asked for.
    pub quiet: Quiet,
    /// Lease length in seconds (`LEASE`), if given (the module's setting
    /// applies when not).
    pub lease: Option<f64>,
    /// `COUNT`: a batch, replied as an array.
    pub count: Option<u64>,
    /// The acknowledgement to apply first (`ACK ...`), if given.
    pub ack: Option<AckClause<'a>>,
}

/// The quiet hours a drain asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quiet {
    /// `NOQUIET`: none.
    Off,
    /// `QUIET <HH-HH>` and `OFFSET <minutes>`, each when given (the
    /// module's settings fill in what is not).
    Given {
        /// The window (`QUIET`).
        window: Option<QuietWindow>,
        /// The UTC offset in minutes (`OFFSET`).
        offset: Option<i16>,
    },
}

impl Drain<'_> {
    /// Where the `ACK` clause starts in arguments `argc` long that this
    /// request was read from (all of them without one): what is before it
    /// is the drain alone.
    pub fn ack_at(&self, argc: usize) -> usize {
        match &self.ack {
            Some(clause) => argc.saturating_sub(clause.argument_count() + 1),
            None => argc,
        }
    }
}

impl<'a> Request<'a> for Drain<'a> {
    const COMMAND: &'static [&'static str] = &[DRAIN];

    #[inline]
    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let org = organization(&mut args)?;
        let timeout = Timeout::parse(&mut args)?;
        let mut window: Option<QuietWindow> = None;
        let mut offset: Option<i16> = None;
        let mut no_quiet = false;
        let mut lease = None;
        let mut count = None;
        let mut ack = None;
        const OPTIONS: [&str; 6] = ["COUNT", "ACK", "QUIET", "OFFSET", "NOQUIET", "LEASE"];
        while let Some(option) = args.option_in(&OPTIONS) {
            let option = option.map_err(|other| unknown_option(&other))?;
            match option {
                "COUNT" if count.is_none() => {
                    count = Some(args.unsigned_in("count", 1, COUNT_MAX)?);
                }
                // The clause runs to the end of the arguments.
                "ACK" => ack = Some(AckClause::parse(&mut args)?),
                "QUIET" if window.is_none() => {
                    let text = args.text("quiet window")?;
                    let parsed = QuietWindow::parse(text)
                        .map_err(|e| CommandError::err(format_args!("invalid quiet window '{text}': {e}")))?;
                    window = Some(parsed);
                }
                "OFFSET" if offset.is_none() => {
                    let minutes = args.signed("UTC offset (minutes)", -1439, 1439)?;
                    offset = Some(utc_offset(minutes).map_err(CommandError::err)?);
                }
                "NOQUIET" => no_quiet = true,
                "LEASE" if lease.is_none() => lease = Some(lease_secs(&mut args)?),
                _ => return Err(given_twice(option)),
            }
        }
        if no_quiet && (window.is_some() || offset.is_some()) {
            return Err(CommandError::err("NOQUIET cannot be combined with QUIET or OFFSET"));
        }
        let quiet = match no_quiet {
            true => Quiet::Off,
            false => Quiet::Given { window, offset },
        };
        Ok(Self { org, timeout, quiet, lease, count, ack })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.org).push(self.timeout);
        match self.quiet {
            Quiet::Off => {
                out.push("NOQUIET");
            }
            Quiet::Given { window, offset } => {
                out.option("QUIET", window).option("OFFSET", offset.map(i64::from));
            }
        }
        out.option("LEASE", self.lease).option("COUNT", self.count);
        if let Some(clause) = &self.ack {
            out.push("ACK");
            clause.encode(out);
        }
    }
}
