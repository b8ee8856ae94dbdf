//! The [`Town`] view's containers, each a small sub-view borrowed from it:
//! an agent's record ([`AgentRecord`], `town.agent(id)`), a task's
//! ([`TaskRecord`], `town.task(id)`), the backlog ([`Backlog`]), an
//! agent's activity log ([`Activity`]) and stop flag ([`StopFlag`]). Each
//! call is one `TOWN.AGENT|TASK|BACKLOG|ACTIVITY|STOP` subcommand, built
//! from its request type.

use std::time::Duration;

use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::town as request;
use redis::aio::ConnectionLike;

use super::agent::Agent;
use super::channel::MailboxLengths;
use super::ids::{AgentId, TaskId};
use super::task::Task;
use super::view::{Town, TownStats, length};
use crate::call::Reply;
use crate::error::{Error, Result};

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Town<C> {
    /// Agent `id`'s record and state (`TOWN.AGENT ...`, `TOWN.LEN`, `TOWN.STATS`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{Agent, AgentType};
    /// # async fn demo(town: dreamtown_client::town::Town) -> dreamtown_client::Result<()> {
    /// let me = Agent::new("backend", "claude", AgentType::Worker);
    /// let agent = town.agent(me.id);
    /// agent.set(&me).await?;
    /// agent.heartbeat().await?;
    /// assert_eq!(agent.count_round().await?, 1);
    /// assert_eq!(agent.get().await?.map(|stored| stored.name), Some("backend".to_owned()));
    /// # Ok(()) }
    /// ```
    pub fn agent(&self, id: AgentId) -> AgentRecord<'_, C> {
        AgentRecord { town: self, id }
    }

    /// Task `id`'s record (`TOWN.TASK ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Task;
    /// # async fn demo(town: dreamtown_client::town::Town) -> dreamtown_client::Result<()> {
    /// let task = Task::new("Write the parser");
    /// town.task(task.id).set(&task).await?;
    /// town.backlog().push(task.id).await?;
    /// # Ok(()) }
    /// ```
    pub fn task(&self, id: TaskId) -> TaskRecord<'_, C> {
        TaskRecord { town: self, id }
    }

    /// The town's backlog of task ids (`TOWN.BACKLOG ...`).
    ///
    /// ```no_run
    /// # async fn demo(town: dreamtown_client::town::Town) -> dreamtown_client::Result<()> {
    /// if let Some(id) = town.backlog().pop().await? {
    ///     let task = town.task(id).get().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn backlog(&self) -> Backlog<'_, C> {
        Backlog { town: self }
    }

    /// Agent `id`'s activity log (`TOWN.ACTIVITY ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::AgentId;
    /// # async fn demo(town: dreamtown_client::town::Town, me: AgentId) -> dreamtown_client::Result<()> {
    /// town.activity(me).log("parsed 3 files").await?;
    /// println!("{:?}", town.activity(me).get().await?);
    /// # Ok(()) }
    /// ```
    pub fn activity(&self, id: AgentId) -> Activity<'_, C> {
        Activity { town: self, id }
    }

    /// Agent `id`'s stop flag (`TOWN.STOP ...`).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::town::AgentId;
    /// # async fn demo(town: dreamtown_client::town::Town, worker: AgentId) -> dreamtown_client::Result<()> {
    /// town.stop(worker).request().ttl(Duration::from_secs(600)).send().await?;
    /// assert!(town.stop(worker).requested().await?);
    /// # Ok(()) }
    /// ```
    pub fn stop(&self, id: AgentId) -> StopFlag<'_, C> {
        StopFlag { town: self, id }
    }
}

/// One agent of a [`Town`]: `town.agent(id)`.
#[derive(Clone, Debug)]
pub struct AgentRecord<'a, C> {
    town: &'a Town<C>,
    id: AgentId,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> AgentRecord<'_, C> {
    /// The agent's id.
    pub fn id(&self) -> AgentId {
        self.id
    }

    /// The agent's record, or `None` (`TOWN.AGENT GET`). A record without a
    /// readable `id` is [`Error::InvalidRecord`]; other fields missing or
    /// unreadable take tinytown's defaults.
    pub async fn get(&self) -> Result<Option<Agent>> {
        let id = self.id.to_string();
        optional_record(
            &self.town.call(&request::AgentGet { town: self.town.name(), agent: &id }).await?,
            Agent::from_fields,
        )
    }

    /// Replace the agent's record with `agent`, whole and in one step
    /// (`TOWN.AGENT SET`); `agent.id` must be this agent's.
    pub async fn set(&self, agent: &Agent) -> Result<()> {
        if agent.id != self.id {
            return Err(Error::InvalidArgument("the agent's id is not the record's"));
        }
        let id = self.id.to_string();
        let fields = request::FieldSet::from_pairs(agent.to_fields()?);
        self.town
            .call(&request::AgentSet { town: self.town.name(), agent: &id, fields })
            .await?
            .decode::<reply::AgentSet>()
            .map(drop)
    }

    /// Delete the agent: its record, inboxes, pending list, activity log and
    /// stop flag, in one step (`TOWN.AGENT DEL`); how many keys went.
    pub async fn delete(&self) -> Result<usize> {
        let id = self.id.to_string();
        self.town
            .call(&request::AgentDel { town: self.town.name(), agent: &id })
            .await?
            .decode::<reply::AgentDel>()
            .map(length)
    }

    /// Set the record's `last_heartbeat` to the server's clock
    /// (`TOWN.AGENT HEARTBEAT`).
    pub async fn heartbeat(&self) -> Result<()> {
        let id = self.id.to_string();
        self.town
            .call(&request::AgentHeartbeat { town: self.town.name(), agent: &id })
            .await?
            .decode::<reply::AgentHeartbeat>()
            .map(drop)
    }

    /// Add 1 to `rounds_completed` (`TOWN.AGENT INCR ... ROUNDS`); the new count.
    pub async fn count_round(&self) -> Result<u64> {
        self.increment(request::Counter::Rounds).await
    }

    /// Add 1 to `tasks_completed` (`TOWN.AGENT INCR ... TASKS`); the new count.
    pub async fn count_task(&self) -> Result<u64> {
        self.increment(request::Counter::Tasks).await
    }

    async fn increment(&self, counter: request::Counter) -> Result<u64> {
        let id = self.id.to_string();
        let reply = self.town.call(&request::AgentIncr { town: self.town.name(), agent: &id, counter }).await?;
        let reply::AgentIncr(count) = reply.decode()?;
        u64::try_from(count).map_err(|_| reply.unexpected())
    }

    /// The lengths of the agent's lists ([`Town::lengths`]).
    pub async fn lengths(&self) -> Result<MailboxLengths> {
        self.town.lengths(self.id).await
    }

    /// The agent's statistics (`TOWN.STATS <town> <agent>`): list lengths,
    /// leases, ages, totals.
    pub async fn stats(&self) -> Result<TownStats> {
        let id = self.id.to_string();
        TownStats::of(&self.town.call(&request::Stats { town: self.town.name(), agent: Some(&id) }).await?)
    }
}

/// One task of a [`Town`]: `town.task(id)`.
#[derive(Clone, Debug)]
pub struct TaskRecord<'a, C> {
    town: &'a Town<C>,
    id: TaskId,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> TaskRecord<'_, C> {
    /// The task's id.
    pub fn id(&self) -> TaskId {
        self.id
    }

    /// The task's record, or `None` (`TOWN.TASK GET`).
    pub async fn get(&self) -> Result<Option<Task>> {
        let id = self.id.to_string();
        optional_record(
            &self.town.call(&request::TaskGet { town: self.town.name(), task: &id }).await?,
            Task::from_fields,
        )
    }

    /// Replace the task's record with `task`, whole and in one step
    /// (`TOWN.TASK SET`); `task.id` must be this task's.
    pub async fn set(&self, task: &Task) -> Result<()> {
        if task.id != self.id {
            return Err(Error::InvalidArgument("the task's id is not the record's"));
        }
        let id = self.id.to_string();
        let fields = request::FieldSet::from_pairs(task.to_fields()?);
        self.town
            .call(&request::TaskSet { town: self.town.name(), task: &id, fields })
            .await?
            .decode::<reply::TaskSet>()
            .map(drop)
    }

    /// Delete the task's record (`TOWN.TASK DEL`); whether there was one.
    pub async fn delete(&self) -> Result<bool> {
        let id = self.id.to_string();
        self.town
            .call(&request::TaskDel { town: self.town.name(), task: &id })
            .await?
            .decode::<reply::TaskDel>()
            .map(|reply::Flag(deleted)| deleted)
    }
}

/// A [`Town`]'s backlog of task ids: `town.backlog()`.
#[derive(Clone, Debug)]
pub struct Backlog<'a, C> {
    town: &'a Town<C>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Backlog<'_, C> {
    /// Append `task` (`TOWN.BACKLOG PUSH`); the backlog's new length.
    pub async fn push(&self, task: TaskId) -> Result<usize> {
        let id = task.to_string();
        self.town
            .call(&request::BacklogPush { town: self.town.name(), task: &id })
            .await?
            .decode::<reply::BacklogPush>()
            .map(length)
    }

    /// Take the oldest task id, or `None` (`TOWN.BACKLOG POP`).
    pub async fn pop(&self) -> Result<Option<TaskId>> {
        let reply = self.town.call(&request::BacklogPop { town: self.town.name() }).await?;
        let reply::MaybeBulk(entry) = reply.decode::<reply::BacklogPop<Vec<u8>>>()?;
        entry.map(|entry| task_id(&entry, "taken from the backlog")).transpose()
    }

    /// Every task id, oldest first (`TOWN.BACKLOG LIST`). An entry that is
    /// not a task id is [`Error::InvalidRecord`] (never skipped; the
    /// seed-shaped [`Channel::backlog_list`](super::Channel::backlog_list)
    /// leaves it out, as tinytown did).
    pub async fn list(&self) -> Result<Vec<TaskId>> {
        self.entries().await?.iter().map(|entry| task_id(entry, "in the backlog")).collect()
    }

    /// Every entry as stored, oldest first (`TOWN.BACKLOG LIST`): what
    /// [`list`](Self::list) reads, and what the seed-shaped
    /// [`Channel::backlog_list`](super::Channel::backlog_list) filters.
    pub(super) async fn entries(&self) -> Result<Vec<Vec<u8>>> {
        self.town
            .call(&request::BacklogList { town: self.town.name() })
            .await?
            .decode::<reply::BacklogList<Vec<u8>>>()
            .map(|list| list.items)
    }

    /// How many task ids wait (`TOWN.BACKLOG LEN`).
    pub async fn len(&self) -> Result<usize> {
        self.town.call(&request::BacklogLen { town: self.town.name() }).await?.decode::<reply::BacklogLen>().map(length)
    }

    /// Whether the backlog is empty (`TOWN.BACKLOG LEN`).
    pub async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }

    /// Remove the first `task`; whether it was there (`TOWN.BACKLOG REMOVE`).
    pub async fn remove(&self, task: TaskId) -> Result<bool> {
        let id = task.to_string();
        self.town
            .call(&request::BacklogRemove { town: self.town.name(), task: &id })
            .await?
            .decode::<reply::BacklogRemove>()
            .map(|reply::Flag(removed)| removed)
    }
}

/// An agent's activity log: `town.activity(id)`.
#[derive(Clone, Debug)]
pub struct Activity<'a, C> {
    town: &'a Town<C>,
    id: AgentId,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Activity<'_, C> {
    /// Log `text` (`TOWN.ACTIVITY LOG`); the log keeps the newest entries.
    pub async fn log(&self, text: &str) -> Result<()> {
        let id = self.id.to_string();
        let request = request::ActivityLog { town: self.town.name(), agent: &id, text: text.as_bytes() };
        self.town.call(&request).await?.decode::<reply::ActivityLog>().map(drop)
    }

    /// The newest entries, one per line, or `None` when nothing was logged
    /// (`TOWN.ACTIVITY GET`).
    pub async fn get(&self) -> Result<Option<String>> {
        let id = self.id.to_string();
        let reply = self.town.call(&request::ActivityGet { town: self.town.name(), agent: &id }).await?;
        let reply::MaybeBulk(text) = reply.decode::<reply::ActivityGet<Vec<u8>>>()?;
        text.map(|text| String::from_utf8(text).map_err(|_| reply.unexpected())).transpose()
    }
}

/// An agent's stop flag: `town.stop(id)`.
#[derive(Clone, Debug)]
pub struct StopFlag<'a, C> {
    town: &'a Town<C>,
    id: AgentId,
}

impl<'a, C: ConnectionLike + Clone + Send + Sync + 'static> StopFlag<'a, C> {
    /// Ask the agent to stop (`TOWN.STOP REQUEST`): a [`StopRequest`]
    /// whose flag expires after the module's default (an hour) unless
    /// [`ttl`](StopRequest::ttl) says otherwise.
    pub fn request(&self) -> StopRequest<'a, C> {
        StopRequest { flag: StopFlag { town: self.town, id: self.id }, ttl_secs: None }
    }

    /// Whether a stop is requested (`TOWN.STOP CHECK`).
    pub async fn requested(&self) -> Result<bool> {
        let id = self.id.to_string();
        self.town
            .call(&request::StopCheck { town: self.town.name(), agent: &id })
            .await?
            .decode::<reply::StopCheck>()
            .map(|reply::Flag(set)| set)
    }

    /// Remove the flag (`TOWN.STOP CLEAR`); whether there was one.
    pub async fn clear(&self) -> Result<bool> {
        let id = self.id.to_string();
        self.town
            .call(&request::StopClear { town: self.town.name(), agent: &id })
            .await?
            .decode::<reply::StopClear>()
            .map(|reply::Flag(was)| was)
    }
}

/// `TOWN.STOP REQUEST`, from [`StopFlag::request`].
#[must_use = "a StopRequest does nothing until sent"]
pub struct StopRequest<'a, C> {
    flag: StopFlag<'a, C>,
    ttl_secs: Option<u64>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> StopRequest<'_, C> {
    /// The flag expires after `ttl` (`TTL <secs>`: rounded up to whole
    /// seconds, at least 1, at most the longest the server takes,
    /// `STOP_TTL_SECS_MAX` seconds).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl_secs = Some(whole_secs(ttl).min(request::STOP_TTL_SECS_MAX));
        self
    }

    /// As [`ttl`](Self::ttl) without the cap: a TTL longer than the server
    /// takes is sent as it is and refused ([`Error::Server`]), as the
    /// seed-shaped [`Channel::request_stop_for`](super::Channel::request_stop_for) does.
    pub(super) fn ttl_uncapped(mut self, ttl: Duration) -> Self {
        self.ttl_secs = Some(whole_secs(ttl));
        self
    }

    /// Send it.
    pub async fn send(self) -> Result<()> {
        let id = self.flag.id.to_string();
        let request = request::StopRequest { town: self.flag.town.name(), agent: &id, ttl_secs: self.ttl_secs };
        self.flag.town.call(&request).await?.decode::<reply::StopRequest>().map(drop)
    }
}

/// A TTL in whole seconds, rounded up, at least 1.
fn whole_secs(ttl: Duration) -> u64 {
    ttl.as_secs().saturating_add(u64::from(ttl.subsec_nanos() > 0)).max(1)
}

/// A backlog entry as a task id (`place` says where it was, for the error).
fn task_id(entry: &[u8], place: &str) -> Result<TaskId> {
    let text = String::from_utf8_lossy(entry);
    text.parse().map_err(|error| Error::InvalidRecord {
        what: "backlog task id",
        reason: format!("{text:?} ({place}): {error}"),
    })
}

/// A record's fields, their names as text.
pub(super) type Fields = Vec<(String, Vec<u8>)>;

/// Reads one stored record.
type RecordParser<T> = fn(&[(String, Vec<u8>)]) -> Result<T>;

/// A record reply (`TOWN.AGENT GET`, `TOWN.AGENT BYNAME`, `TOWN.TASK
/// GET`): `None` when empty, else parsed.
pub(super) fn optional_record<T>(reply: &Reply, parse: RecordParser<T>) -> Result<Option<T>> {
    let fields = record_fields(reply, reply.decode()?)?;
    if fields.is_empty() {
        return Ok(None);
    }
    parse(&fields).map(Some)
}

/// A record's fields with their names as text (a name that is not text is
/// a reply this client does not understand).
pub(super) fn record_fields(reply: &Reply, record: reply::Record<Vec<u8>>) -> Result<Fields> {
    let named = |(name, value): (Vec<u8>, Vec<u8>)| Some((String::from_utf8(name).ok()?, value));
    record.fields.into_iter().map(named).collect::<Option<_>>().ok_or_else(|| reply.unexpected())
}
