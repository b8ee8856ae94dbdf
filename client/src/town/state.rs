//! The [`Channel`]'s town state: stop flags, agent and task records,
//! activity logs, the backlog and reset, each one `TOWN.*` command, most
//! of them a call of the native view's ([`Channel::view`]).

use std::time::Duration;

use redis::aio::ConnectionLike;

use super::agent::Agent;
use super::channel::Channel;
use super::ids::{AgentId, TaskId};
use super::task::Task;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Channel<C> {
    /// Ask `agent_id` to stop: a flag it checks each round, expiring after
    /// an hour so a request to an agent that already died cleans itself up
    /// (`TOWN.STOP REQUEST ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, worker: AgentId) -> dreamtown_client::Result<()> {
    /// channel.request_stop(worker).await?;
    /// assert!(channel.should_stop(worker).await?);
    /// # Ok(()) }
    /// ```
    pub async fn request_stop(&self, agent_id: AgentId) -> Result<()> {
        self.view().stop(agent_id).request().send().await
    }

    /// As [`request_stop`](Self::request_stop), with the flag expiring after
    /// `ttl` (whole seconds, rounded up; at least 1) instead of an hour
    /// (`TOWN.STOP REQUEST <town> <agent> TTL <secs>`).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, worker: AgentId) -> dreamtown_client::Result<()> {
    /// channel.request_stop_for(worker, Duration::from_secs(60)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn request_stop_for(&self, agent_id: AgentId, ttl: Duration) -> Result<()> {
        self.view().stop(agent_id).request().ttl_uncapped(ttl).send().await
    }

    /// Has a stop been requested for `agent_id` (`TOWN.STOP CHECK ...`)?
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// if channel.should_stop(me).await? {
    ///     channel.clear_stop(me).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn should_stop(&self, agent_id: AgentId) -> Result<bool> {
        self.view().stop(agent_id).requested().await
    }

    /// Remove `agent_id`'s stop flag, when it stops (`TOWN.STOP CLEAR ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// channel.clear_stop(me).await?;
    /// assert!(!channel.should_stop(me).await?);
    /// # Ok(()) }
    /// ```
    pub async fn clear_stop(&self, agent_id: AgentId) -> Result<()> {
        self.view().stop(agent_id).clear().await.map(drop)
    }

    /// Store `agent`'s record: the hash becomes exactly tinytown's fields
    /// for it, in one atomic step (`TOWN.AGENT SET ...`), and the agent is
    /// indexed by name.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{Agent, AgentState, AgentType, Channel};
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// let mut agent = Agent::new("backend", "claude", AgentType::Worker);
    /// channel.set_agent_state(&agent).await?;
    /// agent.state = AgentState::Idle;
    /// channel.set_agent_state(&agent).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_agent_state(&self, agent: &Agent) -> Result<()> {
        self.view().agent(agent.id).set(agent).await
    }

    /// `agent_id`'s record, or `None` (`TOWN.AGENT GET ...`). A record
    /// without a readable `id` is [`Error::InvalidRecord`]; other fields
    /// missing or unreadable take tinytown's defaults.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, worker: AgentId) -> dreamtown_client::Result<()> {
    /// if let Some(agent) = channel.get_agent_state(worker).await? {
    ///     println!("{} is {}", agent.display_name(), agent.state);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_agent_state(&self, agent_id: AgentId) -> Result<Option<Agent>> {
        self.view().agent(agent_id).get().await
    }

    /// Every agent of the town, ordered by id, from the module's index
    /// (`TOWN.AGENT LIST ...`; no `KEYS`). As in tinytown, a record that
    /// does not parse is left out (and left alone).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// for agent in channel.list_agents().await? {
    ///     println!("{} {} ({})", agent.id.short_id(), agent.name, agent.state);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_agents(&self) -> Result<Vec<Agent>> {
        self.view().agents().await
    }

    /// The agent named `name` (the lowest id if several), or `None`
    /// (`TOWN.AGENT BYNAME ...`, one indexed lookup).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// let backend = channel.get_agent_by_name("backend").await?;
    /// # Ok(()) }
    /// ```
    pub async fn get_agent_by_name(&self, name: &str) -> Result<Option<Agent>> {
        self.view().agent_named(name).await
    }

    /// Delete `agent_id`: its record, inbox, urgent inbox, pending list,
    /// activity log and stop flag, in one step (`TOWN.AGENT DEL ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, gone: AgentId) -> dreamtown_client::Result<()> {
    /// channel.delete_agent(gone).await?;
    /// assert!(channel.get_agent_state(gone).await?.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn delete_agent(&self, agent_id: AgentId) -> Result<()> {
        self.view().agent(agent_id).delete().await.map(drop)
    }

    /// Add one to `agent_id`'s `rounds_completed`; the new value
    /// (`TOWN.AGENT INCR ... ROUNDS`). An agent without a record is
    /// [`Error::Server`] (tinytown's `HINCRBY` made a stray hash).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// let rounds = channel.increment_agent_rounds(me).await?;
    /// # Ok(()) }
    /// ```
    pub async fn increment_agent_rounds(&self, agent_id: AgentId) -> Result<u64> {
        self.view().agent(agent_id).count_round().await
    }

    /// Add one to `agent_id`'s `tasks_completed`; the new value
    /// (`TOWN.AGENT INCR ... TASKS`). As
    /// [`increment_agent_rounds`](Self::increment_agent_rounds) for a missing agent.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// let done = channel.increment_agent_tasks_completed(me).await?;
    /// # Ok(()) }
    /// ```
    pub async fn increment_agent_tasks_completed(&self, agent_id: AgentId) -> Result<u64> {
        self.view().agent(agent_id).count_task().await
    }

    /// Set `agent_id`'s `last_heartbeat` to the server's clock
    /// (`TOWN.AGENT HEARTBEAT ...`); an agent without a record is [`Error::Server`].
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// channel.update_agent_heartbeat(me).await?;
    /// # Ok(()) }
    /// ```
    pub async fn update_agent_heartbeat(&self, agent_id: AgentId) -> Result<()> {
        self.view().agent(agent_id).heartbeat().await
    }

    /// Store `task`'s record: the hash becomes exactly tinytown's fields for
    /// it, in one atomic step, and the task is indexed (`TOWN.TASK SET ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{Channel, Task};
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// let task = Task::new("Write the parser").with_tags(["parser"]);
    /// channel.set_task(&task).await?;
    /// channel.backlog_push(task.id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_task(&self, task: &Task) -> Result<()> {
        self.view().task(task.id).set(task).await
    }

    /// `task_id`'s record, or `None` (`TOWN.TASK GET ...`); a record without
    /// a readable `id` is [`Error::InvalidRecord`].
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{Channel, TaskId};
    /// # async fn demo(channel: Channel, id: TaskId) -> dreamtown_client::Result<()> {
    /// if let Some(task) = channel.get_task(id).await? {
    ///     println!("{}: {:?}", task.description, task.state);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_task(&self, task_id: TaskId) -> Result<Option<Task>> {
        self.view().task(task_id).get().await
    }

    /// Delete `task_id`'s record; whether it existed (`TOWN.TASK DEL ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{Channel, TaskId};
    /// # async fn demo(channel: Channel, id: TaskId) -> dreamtown_client::Result<()> {
    /// let existed = channel.delete_task(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_task(&self, task_id: TaskId) -> Result<bool> {
        self.view().task(task_id).delete().await
    }

    /// Every task of the town, ordered by id, from the module's index
    /// (`TOWN.TASK LIST ...`; no `KEYS`). As in tinytown, a record that does
    /// not parse is left out (and left alone).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// let open = channel.list_tasks().await?.into_iter().filter(|t| !t.state.is_terminal()).count();
    /// # Ok(()) }
    /// ```
    pub async fn list_tasks(&self) -> Result<Vec<Task>> {
        self.view().tasks().await
    }

    /// Log what `agent_id` is doing: newest first, the last 10 kept, the log
    /// expiring an hour after its last entry, in one atomic step
    /// (`TOWN.ACTIVITY LOG ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// channel.log_agent_activity(me, "round 3: wrote the parser").await?;
    /// # Ok(()) }
    /// ```
    pub async fn log_agent_activity(&self, agent_id: AgentId, activity: &str) -> Result<()> {
        self.view().activity(agent_id).log(activity).await
    }

    /// `agent_id`'s newest 5 activity entries joined by `"\n"`, newest first,
    /// or `None` (`TOWN.ACTIVITY GET ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, worker: AgentId) -> dreamtown_client::Result<()> {
    /// if let Some(recent) = channel.get_agent_activity(worker).await? {
    ///     println!("{recent}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_agent_activity(&self, agent_id: AgentId) -> Result<Option<String>> {
        self.view().activity(agent_id).get().await
    }

    /// Append `task_id` to the town's backlog (`TOWN.BACKLOG PUSH ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{Channel, TaskId};
    /// # async fn demo(channel: Channel, id: TaskId) -> dreamtown_client::Result<()> {
    /// channel.backlog_push(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn backlog_push(&self, task_id: TaskId) -> Result<()> {
        self.view().backlog().push(task_id).await.map(drop)
    }

    /// Every task id in the backlog, oldest first (`TOWN.BACKLOG LIST ...`).
    /// As in tinytown, an entry that is not a task id is left out (and left
    /// alone).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// println!("{:?}", channel.backlog_list().await?);
    /// # Ok(()) }
    /// ```
    pub async fn backlog_list(&self) -> Result<Vec<TaskId>> {
        let entries = self.view().backlog().entries().await?;
        Ok(entries.iter().filter_map(|entry| std::str::from_utf8(entry).ok()?.parse().ok()).collect())
    }

    /// How many task ids are in the backlog (`TOWN.BACKLOG LEN ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// println!("{} waiting", channel.backlog_len().await?);
    /// # Ok(()) }
    /// ```
    pub async fn backlog_len(&self) -> Result<usize> {
        self.view().backlog().len().await
    }

    /// Take the oldest task id from the backlog, or `None`
    /// (`TOWN.BACKLOG POP ...`). An entry that is not a task id is taken
    /// too and returned inside [`Error::InvalidRecord`], quoted.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// if let Some(task_id) = channel.backlog_pop().await? {
    ///     let task = channel.get_task(task_id).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn backlog_pop(&self) -> Result<Option<TaskId>> {
        self.view().backlog().pop().await
    }

    /// Remove the first `task_id` from the backlog; whether it was there
    /// (`TOWN.BACKLOG REMOVE ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{Channel, TaskId};
    /// # async fn demo(channel: Channel, id: TaskId) -> dreamtown_client::Result<()> {
    /// let removed = channel.backlog_remove(id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn backlog_remove(&self, task_id: TaskId) -> Result<bool> {
        self.view().backlog().remove(task_id).await
    }

    /// Delete the town's state: every agent (record, inboxes, pending list,
    /// activity, stop flag), every task, the backlog, the docket and event
    /// streams, and the module's indexes, found through the indexes
    /// (`TOWN.RESET`; never `SCAN`). How many keys were deleted, the index
    /// keys included.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// println!("{} keys deleted", channel.reset_all().await?);
    /// # Ok(()) }
    /// ```
    pub async fn reset_all(&self) -> Result<usize> {
        self.view().reset().send().await
    }

    /// Delete only the agents' state (records, inboxes, pending lists,
    /// activity, stop flags and the agent indexes), keeping tasks, the
    /// backlog and the streams (`TOWN.RESET ... AGENTS`). How many keys
    /// were deleted.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// channel.reset_agents_only().await?;
    /// assert!(channel.list_agents().await?.is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn reset_agents_only(&self) -> Result<usize> {
        self.view().reset().agents_only().send().await
    }
}
