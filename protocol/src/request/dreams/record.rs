//! `DREAMS.RECORD <org> <project> <memory-type> <memories> <edges> [NODE <id>]
//! [EVENT <event-id> GENERATION <n>] [TRIGGER <m> <e> <min-interval> <age-floor>]`.

use super::{node, Delivery, Region, Trigger};
use crate::args::{is_word, Args};
use crate::commands::dreams::RECORD;
use crate::error::CommandError;
use crate::request::options::{once, unknown_option};
use crate::request::{Argv, Request};

/// Count a write against a region's shared counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The region written to.
    pub region: Region<'a>,
    /// Memories written (up to `u32::MAX`).
    pub memories: u64,
    /// Edges written (up to `u32::MAX`).
    pub edges: u64,
    /// The node that wrote (`NODE`), if given.
    pub node: Option<&'a str>,
    /// The write's delivery fence (`EVENT ... GENERATION ...`), if given.
    pub delivery: Option<Delivery<'a>>,
    /// Thresholds for this call (`TRIGGER`), if given.
    pub trigger: Option<Trigger>,
}

impl<'a> Request<'a> for Record<'a> {
    const COMMAND: &'static [&'static str] = &[RECORD];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let region = Region::parse(&mut args)?;
        let memories = args.unsigned("memories", u64::from(u32::MAX))?;
        let edges = args.unsigned("edges", u64::from(u32::MAX))?;
        let (mut fired_by, mut delivery, mut trigger) = (None, None, None);
        // Options matched in place (no upper-cased copy: RECORD is the hot path).
        while let Some(word) = args.next() {
            let is = |name: &str| is_word(word, name);
            if is("NODE") {
                once(&mut fired_by, node(&mut args)?, "NODE")?;
            } else if is("EVENT") {
                once(&mut delivery, Delivery::parse(&mut args)?, "EVENT")?;
            } else if is("GENERATION") {
                return Err(CommandError::err("GENERATION needs EVENT <event-id> before it"));
            } else if is("TRIGGER") {
                once(&mut trigger, Trigger::parse(&mut args)?, "TRIGGER")?;
            } else {
                return Err(unknown_option(&String::from_utf8_lossy(word).to_ascii_uppercase()));
            }
        }
        Ok(Self { region, memories, edges, node: fired_by, delivery, trigger })
    }

    fn encode(&self, out: &mut Argv) {
        self.region.encode(out);
        out.push(self.memories).push(self.edges).option("NODE", self.node);
        if let Some(delivery) = &self.delivery {
            delivery.encode(out);
        }
        if let Some(trigger) = &self.trigger {
            trigger.encode(out);
        }
    }
}
