//! The `TOWN.BACKLOG` subcommands' requests: `PUSH|REMOVE <town>
//! <task-id>`, `POP|LIST|LEN <town>`.

use super::container_args::{town_and_id, town_only};
use crate::commands::town::BACKLOG;

town_and_id!(
    /// `TOWN.BACKLOG PUSH <town> <task-id>`: append a task id.
    BacklogPush = [BACKLOG, "PUSH"], task: "task id"
);

town_only!(
    /// `TOWN.BACKLOG POP <town>`: take the oldest task id.
    BacklogPop = [BACKLOG, "POP"]
);

town_only!(
    /// `TOWN.BACKLOG LIST <town>`: every task id, oldest first.
    BacklogList = [BACKLOG, "LIST"]
);

town_only!(
    /// `TOWN.BACKLOG LEN <town>`: how many task ids wait.
    BacklogLen = [BACKLOG, "LEN"]
);

town_and_id!(
    /// `TOWN.BACKLOG REMOVE <town> <task-id>`: remove a task id's first
    /// occurrence.
    BacklogRemove = [BACKLOG, "REMOVE"], task: "task id"
);
