//! What `TOWN.RESET` deletes, found through the module's indexes rather
//! than by scanning the keyspace: every key of every indexed agent and the
//! agent indexes; for a full reset also every indexed task, the task index,
//! the backlog, the docket streams and the event stream.

use std::collections::HashSet;

use super::keys::TownKeys;

/// How much of a town to reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everything the town has (tinytown's `reset_all`).
    All,
    /// Agents only: tasks, backlog and streams stay (`reset_agents_only`).
    Agents,
}

/// The keys to delete, each once, given the agent ids and task ids the
/// indexes hold.
pub fn doomed(keys: &TownKeys, agents: &[String], tasks: &[String], scope: Scope) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for agent in agents {
        names.extend(keys.agent_keys(agent).all().map(str::to_owned));
    }
    names.push(keys.agent_index());
    names.push(keys.mailbox_index());
    if scope == Scope::All {
        names.extend(tasks.iter().map(|task| keys.task(task)));
        names.push(keys.task_index());
        names.push(keys.backlog());
        names.push(keys.docket_tasks());
        names.push(keys.docket_events());
        names.push(keys.events());
    }
    let mut seen = HashSet::new();
    names.retain(|name| seen.insert(name.clone()));
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_scope_keeps_tasks_and_streams() {
        let keys = TownKeys::new("t");
        let doomed = doomed(&keys, &["a".into(), "a".into()], &["x".into()], Scope::Agents);
        assert_eq!(
            doomed,
            vec![
                "tt:{t}:agent:a",
                "tt:{t}:inbox:a",
                "tt:{t}:urgent:a",
                "tt:{t}:pending:a",
                "tt:{t}:activity:a",
                "tt:{t}:stop:a",
                "tt:{t}:leases:a",
                "tt:{t}:index:agents",
                "tt:{t}:index:mailboxes",
            ]
        );
    }

    #[test]
    fn full_reset_takes_everything_indexed() {
        let keys = TownKeys::new("t");
        let doomed = doomed(&keys, &["a".into()], &["x".into(), "y".into()], Scope::All);
        assert_eq!(doomed.len(), 7 + 2 + 2 + 5);
        for name in [
            "tt:{t}:task:x",
            "tt:{t}:task:y",
            "tt:{t}:index:tasks",
            "tt:{t}:backlog",
            "tt:{t}:docket:tasks",
            "tt:{t}:docket:events",
            "tt:{t}:events",
        ] {
            assert!(doomed.iter().any(|n| n == name), "{name}");
        }
    }
}
