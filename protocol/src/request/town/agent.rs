//! The `TOWN.AGENT` subcommands' requests: `SET <town> <agent-id> <field>
//! <value> [...]`, `GET|DEL|HEARTBEAT <town> <agent-id>`, `LIST <town>`,
//! `BYNAME <town> <name>`, `INCR <town> <agent-id> ROUNDS|TASKS`.

use super::container_args::{id, town, town_and_id, town_only};
use super::fields::FieldSet;
use crate::args::Args;
use crate::commands::town::AGENT;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// `TOWN.AGENT SET <town> <agent-id> <field> <value> [...]`: replace an
/// agent's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSet<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent id (not empty).
    pub agent: &'a str,
    /// The record's new fields.
    pub fields: FieldSet,
}

impl<'a> Request<'a> for AgentSet<'a> {
    const COMMAND: &'static [&'static str] = &[AGENT, "SET"];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let agent = id(&mut args, "agent id")?;
        let fields = FieldSet::parse(argv.get(args.position()..).unwrap_or_default()).map_err(CommandError::err)?;
        Ok(Self { town, agent, fields })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.agent);
        self.fields.encode(out);
    }
}

town_and_id!(
    /// `TOWN.AGENT GET <town> <agent-id>`: an agent's record.
    AgentGet = [AGENT, "GET"], agent: "agent id"
);

town_and_id!(
    /// `TOWN.AGENT DEL <town> <agent-id>`: delete an agent's keys.
    AgentDel = [AGENT, "DEL"], agent: "agent id"
);

town_only!(
    /// `TOWN.AGENT LIST <town>`: every indexed agent's record.
    AgentList = [AGENT, "LIST"]
);

/// `TOWN.AGENT BYNAME <town> <name>`: the first agent with that name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentByName<'a> {
    /// The town.
    pub town: &'a str,
    /// The name, any bytes (compared with the index's).
    pub name: &'a [u8],
}

impl<'a> Request<'a> for AgentByName<'a> {
    const COMMAND: &'static [&'static str] = &[AGENT, "BYNAME"];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let name = args.required("name")?;
        args.end()?;
        Ok(Self { town, name })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.name);
    }
}

/// The counters `TOWN.AGENT INCR` adds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// `ROUNDS`: `rounds_completed`.
    Rounds,
    /// `TASKS`: `tasks_completed`.
    Tasks,
}

impl Counter {
    /// Parse `ROUNDS` or `TASKS` (any case).
    pub fn parse(word: &[u8]) -> Option<Self> {
        if word.eq_ignore_ascii_case(b"ROUNDS") {
            Some(Self::Rounds)
        } else if word.eq_ignore_ascii_case(b"TASKS") {
            Some(Self::Tasks)
        } else {
            None
        }
    }

    /// The word that names it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Rounds => "ROUNDS",
            Self::Tasks => "TASKS",
        }
    }

    /// The record's field it counts in.
    pub fn field(self) -> &'static [u8] {
        match self {
            Self::Rounds => b"rounds_completed",
            Self::Tasks => b"tasks_completed",
        }
    }
}

/// `TOWN.AGENT INCR <town> <agent-id> ROUNDS|TASKS`: add 1 to a counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentIncr<'a> {
    /// The town.
    pub town: &'a str,
    /// The agent id (not empty).
    pub agent: &'a str,
    /// The counter.
    pub counter: Counter,
}

impl<'a> Request<'a> for AgentIncr<'a> {
    const COMMAND: &'static [&'static str] = &[AGENT, "INCR"];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let agent = id(&mut args, "agent id")?;
        let counter = Counter::parse(args.required("counter")?)
            .ok_or_else(|| CommandError::err("the counter must be ROUNDS or TASKS"))?;
        args.end()?;
        Ok(Self { town, agent, counter })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.agent).push(self.counter.word());
    }
}

town_and_id!(
    /// `TOWN.AGENT HEARTBEAT <town> <agent-id>`: set the last heartbeat.
    AgentHeartbeat = [AGENT, "HEARTBEAT"], agent: "agent id"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_parse_in_any_case() {
        assert_eq!(Counter::parse(b"rounds"), Some(Counter::Rounds));
        assert_eq!(Counter::parse(b"TASKS"), Some(Counter::Tasks));
        assert_eq!(Counter::parse(b"task"), None);
        assert_eq!(Counter::Rounds.field(), b"rounds_completed");
        assert_eq!(Counter::Tasks.field(), b"tasks_completed");
        assert_eq!(Counter::parse(Counter::Tasks.word().as_bytes()), Some(Counter::Tasks));
    }
}
