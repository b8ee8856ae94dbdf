//! The `TOWN.TASK` subcommands' requests: `SET <town> <task-id> <field>
//! <value> [...]`, `GET|DEL <town> <task-id>`, `LIST <town>`.

use super::container_args::{id, town, town_and_id, town_only};
use super::fields::FieldSet;
use crate::args::Args;
use crate::commands::town::TASK;
use crate::error::CommandError;
use crate::request::{Argv, Request};

/// `TOWN.TASK SET <town> <task-id> <field> <value> [...]`: replace a
/// task's record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSet<'a> {
    /// The town.
    pub town: &'a str,
    /// The task id (not empty).
    pub task: &'a str,
    /// The record's new fields.
    pub fields: FieldSet,
}

impl<'a> Request<'a> for TaskSet<'a> {
    const COMMAND: &'static [&'static str] = &[TASK, "SET"];

    fn parse(argv: &'a [&'a [u8]]) -> Result<Self, CommandError> {
        let mut args = Args::new(argv);
        let town = town(&mut args)?;
        let task = id(&mut args, "task id")?;
        let fields = FieldSet::parse(argv.get(args.position()..).unwrap_or_default()).map_err(CommandError::err)?;
        Ok(Self { town, task, fields })
    }

    fn encode(&self, out: &mut Argv) {
        out.push(self.town).push(self.task);
        self.fields.encode(out);
    }
}

town_and_id!(
    /// `TOWN.TASK GET <town> <task-id>`: a task's record.
    TaskGet = [TASK, "GET"], task: "task id"
);

town_and_id!(
    /// `TOWN.TASK DEL <town> <task-id>`: delete a task's record.
    TaskDel = [TASK, "DEL"], task: "task id"
);

town_only!(
    /// `TOWN.TASK LIST <town>`: every indexed task's record.
    TaskList = [TASK, "LIST"]
);
