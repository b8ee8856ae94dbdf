//! `DREAMS.SETTLE <org> <project> <memory-type> <event-id> <generation> [RETAIN]`.

use super::{generation, Region};
use crate::args::Args;
use crate::commands::dreams::SETTLE;
use crate::error::CommandError;
use crate::request::options::unknown_option;
use crate::request::{Argv, Request};

/// Settle a recorded effect: raise the settled generation and forget its
/// identity unless `RETAIN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settle<'a> {
    /// The region written to.
    pub region: Region<'a>,
    /// The effect's event id (not empty).
    pub event_id: &'a [u8],
    /// Its generation (positive; above `i64::MAX` read as `i64::MAX`).
    pub generation: i64,
    /// Keep the event id (`RETAIN`).
    pub retain: bool,
}

impl<'a> Request<'a> for Settle<'a> {
    const COMMAND: &'static [&'static str] = &[SETTLE];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let region = Region::parse(&mut args)?;
        let event_id = args.required("event id")?;
        if event_id.is_empty() {
            return Err(CommandError::err("Dreams write event id must not be empty"));
        }
        let generation = generation(&mut args)?;
        let mut retain = false;
        while let Some(option) = args.option() {
            match option.as_str() {
                "RETAIN" => retain = true,
                other => return Err(unknown_option(other)),
            }
        }
        Ok(Self { region, event_id, generation, retain })
    }

    fn encode(&self, out: &mut Argv) {
        self.region.encode(out);
        out.push(self.event_id).push(self.generation).flag("RETAIN", self.retain);
    }
}
