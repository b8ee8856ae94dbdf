//! tinytown's structured event log on the town-wide stream `tt:{town}:events`
//! ([`TownEvent`]s as `event_type` + JSON `data` fields, capped near 1000
//! entries), written and read with one plain stream command per call.

use chrono::{DateTime, Utc};
use redis::aio::ConnectionLike;
use serde::{Deserialize, Serialize};

use super::agent::SpawnMode;
use super::channel::Channel;
use super::ids::{AgentId, MissionId, TaskId};
use super::stream;
use crate::call::Call;
use crate::error::{Error, Result};

/// How many entries the town-wide stream keeps, about (`MAXLEN ~`).
const TOWN_STREAM_MAXLEN: usize = 1000;

/// What happened.
///
/// ```
/// use dreamtown_client::town::EventType;
/// assert_eq!(EventType::AgentStateChanged.to_string(), "agent_state_changed");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    /// An agent changed state.
    AgentStateChanged,
    /// An agent was spawned.
    AgentSpawned,
    /// An agent stopped.
    AgentStopped,
    /// A task was assigned.
    TaskAssigned,
    /// A task completed.
    TaskCompleted,
    /// A task failed.
    TaskFailed,
    /// A mission changed state.
    MissionStateChanged,
    /// Mission work became ready.
    MissionWorkPromoted,
    /// Mission work was assigned.
    MissionWorkAssigned,
    /// Mission work completed.
    MissionWorkCompleted,
    /// Mission work is blocked.
    MissionWorkBlocked,
    /// A mission needs help.
    MissionHelpNeeded,
    /// A mission watch triggered.
    MissionWatchTriggered,
    /// Any other mission event.
    MissionEvent,
    /// A task was delegated from one agent to another.
    TaskDelegated,
    /// An agent was interrupted (preempted by higher-priority work).
    AgentInterrupted,
    /// An interrupted agent was resumed.
    AgentResumed,
    /// An agent completed its assigned scope.
    AgentCompleted,
    /// An agent failed its assigned scope.
    AgentFailed,
    /// Work was handed to a reviewer.
    ReviewerHandoff,
    /// A reviewer approved the work.
    ReviewerApproval,
    /// An agent escalated to the conductor.
    ConductorEscalation,
}

impl std::fmt::Display for EventType {
    /// The stream's `event_type` field: the serde word.
    ///
    /// ```
    /// assert_eq!(dreamtown_client::town::EventType::ReviewerHandoff.to_string(), "reviewer_handoff");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(word)) => f.write_str(&word),
            _ => write!(f, "{self:?}"),
        }
    }
}

/// One structured event (tinytown's RAR-compatible record).
///
/// ```
/// use dreamtown_client::town::{AgentId, EventType, TownEvent};
/// let event = TownEvent::new(EventType::AgentStateChanged, "backend is idle")
///     .with_agent(AgentId::supervisor())
///     .with_transition("starting", "idle");
/// let json = serde_json::to_string(&event).unwrap();
/// assert!(!json.contains("task_id"), "unset fields are left out: {json}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TownEvent {
    /// What happened.
    pub event_type: EventType,
    /// The agent concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The task concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// The mission concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mission_id: Option<MissionId>,
    /// The state before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_state: Option<String>,
    /// The state after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_state: Option<String>,
    /// A human-readable message.
    pub message: String,
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    /// The agent that spawned or delegated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<AgentId>,
    /// The agent spawned or delegated to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child_agent_id: Option<AgentId>,
    /// The scope of the agent's assignment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The spawn mode of a child agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn_mode: Option<SpawnMode>,
}

impl TownEvent {
    /// An event of `event_type` happening now.
    ///
    /// ```
    /// use dreamtown_client::town::{EventType, TownEvent};
    /// let event = TownEvent::new(EventType::TaskCompleted, "parser merged");
    /// assert_eq!(event.message, "parser merged");
    /// ```
    #[must_use]
    pub fn new(event_type: EventType, message: impl Into<String>) -> Self {
        Self {
            event_type,
            agent_id: None,
            task_id: None,
            mission_id: None,
            old_state: None,
            new_state: None,
            message: message.into(),
            timestamp: Utc::now(),
            parent_agent_id: None,
            child_agent_id: None,
            scope: None,
            spawn_mode: None,
        }
    }

    /// About agent `id`.
    ///
    /// ```
    /// # use dreamtown_client::town::{AgentId, EventType, TownEvent};
    /// assert!(TownEvent::new(EventType::AgentSpawned, "").with_agent(AgentId::new()).agent_id.is_some());
    /// ```
    #[must_use]
    pub fn with_agent(mut self, id: AgentId) -> Self {
        self.agent_id = Some(id);
        self
    }

    /// About task `id`.
    ///
    /// ```
    /// # use dreamtown_client::town::{EventType, TaskId, TownEvent};
    /// assert!(TownEvent::new(EventType::TaskAssigned, "").with_task(TaskId::new()).task_id.is_some());
    /// ```
    #[must_use]
    pub fn with_task(mut self, id: TaskId) -> Self {
        self.task_id = Some(id);
        self
    }

    /// About mission `id`.
    ///
    /// ```
    /// # use dreamtown_client::town::{EventType, MissionId, TownEvent};
    /// assert!(TownEvent::new(EventType::MissionEvent, "").with_mission(MissionId::new()).mission_id.is_some());
    /// ```
    #[must_use]
    pub fn with_mission(mut self, id: MissionId) -> Self {
        self.mission_id = Some(id);
        self
    }

    /// A transition from `old` to `new`.
    ///
    /// ```
    /// # use dreamtown_client::town::{EventType, TownEvent};
    /// let e = TownEvent::new(EventType::AgentStateChanged, "").with_transition("idle", "working");
    /// assert_eq!((e.old_state.as_deref(), e.new_state.as_deref()), (Some("idle"), Some("working")));
    /// ```
    #[must_use]
    pub fn with_transition(mut self, old: impl Into<String>, new: impl Into<String>) -> Self {
        self.old_state = Some(old.into());
        self.new_state = Some(new.into());
        self
    }

    /// Spawned or delegated by `id`.
    ///
    /// ```
    /// # use dreamtown_client::town::{AgentId, EventType, TownEvent};
    /// assert!(TownEvent::new(EventType::TaskDelegated, "").with_parent_agent(AgentId::new()).parent_agent_id.is_some());
    /// ```
    #[must_use]
    pub fn with_parent_agent(mut self, id: AgentId) -> Self {
        self.parent_agent_id = Some(id);
        self
    }

    /// Spawned or delegated to `id`.
    ///
    /// ```
    /// # use dreamtown_client::town::{AgentId, EventType, TownEvent};
    /// assert!(TownEvent::new(EventType::TaskDelegated, "").with_child_agent(AgentId::new()).child_agent_id.is_some());
    /// ```
    #[must_use]
    pub fn with_child_agent(mut self, id: AgentId) -> Self {
        self.child_agent_id = Some(id);
        self
    }

    /// With the scope of the assignment.
    ///
    /// ```
    /// # use dreamtown_client::town::{EventType, TownEvent};
    /// assert_eq!(TownEvent::new(EventType::AgentCompleted, "").with_scope("parser").scope.as_deref(), Some("parser"));
    /// ```
    #[must_use]
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// With the spawn mode of a child agent.
    ///
    /// ```
    /// # use dreamtown_client::town::{EventType, SpawnMode, TownEvent};
    /// let e = TownEvent::new(EventType::AgentSpawned, "").with_spawn_mode(SpawnMode::ForkedContext);
    /// assert_eq!(e.spawn_mode, Some(SpawnMode::ForkedContext));
    /// ```
    #[must_use]
    pub fn with_spawn_mode(mut self, mode: SpawnMode) -> Self {
        self.spawn_mode = Some(mode);
        self
    }
}

/// The town-wide event stream `tt:{town}:events`, as tinytown's `EventStream`.
/// Only the town-wide stream is written: tinytown also copied each event to
/// per-agent and per-mission streams, which would take more than one
/// command per event and which `TOWN.RESET` does not know.
///
/// ```no_run
/// use dreamtown_client::town::{Channel, EventType, TownEvent};
/// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
/// let events = channel.event_stream();
/// events.emit(&TownEvent::new(EventType::AgentSpawned, "backend started")).await?;
/// for (id, event) in events.read_recent_town_events(10).await? {
///     println!("{id} {} {}", event.event_type, event.message);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct EventStream<C = redis::aio::MultiplexedConnection> {
    channel: Channel<C>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> EventStream<C> {
    /// The event stream of town `town_name` over `conn`.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::EventStream;
    /// # fn demo(conn: redis::aio::MultiplexedConnection) {
    /// let events = EventStream::new(conn, "acme");
    /// # }
    /// ```
    pub fn new(conn: C, town_name: impl Into<String>) -> Self {
        Self { channel: Channel::new(conn, town_name) }
    }

    /// Append `event` to the town-wide stream, keeping about the newest 1000
    /// (`XADD <key> MAXLEN ~ 1000 * event_type .. data <json>`). The entry id.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{EventStream, EventType, TownEvent};
    /// # async fn demo(events: EventStream) -> dreamtown_client::Result<()> {
    /// let id = events.emit(&TownEvent::new(EventType::TaskCompleted, "done")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn emit(&self, event: &TownEvent) -> Result<String> {
        let json = serde_json::to_string(event).map_err(Error::Encode)?;
        let call = Call::new("XADD")
            .arg(self.channel.keys().events())
            .arg("MAXLEN")
            .arg("~")
            .arg(TOWN_STREAM_MAXLEN)
            .arg("*")
            .arg("event_type")
            .arg(event.event_type.to_string())
            .arg("data")
            .arg(json);
        Ok(self.channel.run(call).await?.word()?.to_owned())
    }

    /// Up to `count` events from entry `last_id` on, inclusive, oldest first
    /// (`XRANGE <key> <last_id> + COUNT <count>`; `"0-0"` for all). As in
    /// tinytown, entries whose `data` is not a [`TownEvent`] are left out
    /// (the stream is not consumed, so nothing is lost).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::EventStream;
    /// # async fn demo(events: EventStream) -> dreamtown_client::Result<()> {
    /// let all = events.read_town_events("0-0", 100).await?;
    /// # Ok(()) }
    /// ```
    pub async fn read_town_events(&self, last_id: &str, count: usize) -> Result<Vec<(String, TownEvent)>> {
        let call = Call::new("XRANGE").arg(self.channel.keys().events()).arg(last_id).arg("+").arg("COUNT").arg(count);
        self.read(call).await
    }

    /// The newest `count` events, oldest first (`XREVRANGE <key> + - COUNT <count>`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::EventStream;
    /// # async fn demo(events: EventStream) -> dreamtown_client::Result<()> {
    /// let recent = events.read_recent_town_events(20).await?;
    /// # Ok(()) }
    /// ```
    pub async fn read_recent_town_events(&self, count: usize) -> Result<Vec<(String, TownEvent)>> {
        let call = Call::new("XREVRANGE").arg(self.channel.keys().events()).arg("+").arg("-").arg("COUNT").arg(count);
        let mut events = self.read(call).await?;
        events.reverse();
        Ok(events)
    }

    async fn read(&self, call: Call) -> Result<Vec<(String, TownEvent)>> {
        let reply = self.channel.run(call).await?;
        let entries = stream::entries(reply.value()).ok_or_else(|| reply.unexpected())?;
        Ok(entries
            .into_iter()
            .filter_map(|entry| {
                let event = serde_json::from_str(&entry.text("data")?).ok()?;
                Some((entry.id, event))
            })
            .collect())
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Channel<C> {
    /// The town's event stream, over this channel's connection.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// let recent = channel.event_stream().read_recent_town_events(5).await?;
    /// # Ok(()) }
    /// ```
    pub fn event_stream(&self) -> EventStream<C> {
        EventStream { channel: self.clone() }
    }

    /// Emit `event` to the town's event stream ([`EventStream::emit`]); the
    /// entry id. (tinytown's `emit_event` swallowed errors so that events
    /// never broke a workflow; here the caller decides, e.g. with `.ok()`.)
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{Channel, EventType, TownEvent};
    /// # async fn demo(channel: Channel) {
    /// channel.emit_event(&TownEvent::new(EventType::AgentStopped, "bye")).await.ok();
    /// # }
    /// ```
    pub async fn emit_event(&self, event: &TownEvent) -> Result<String> {
        self.event_stream().emit(event).await
    }
}
