//! tinytown's `Agent` record and its kinds and states, and how it is stored
//! as the hash `tt:{town}:agent:<id>` (the fields of tinytown's
//! `set_agent_state`, read back as its `parse_agent_from_hash` did).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ids::{AgentId, TaskId};
use super::record::{self, Fields};
use crate::error::Result;

/// The kind of an agent.
///
/// ```
/// use dreamtown_client::town::AgentType;
/// assert_eq!(serde_json::to_string(&AgentType::Supervisor).unwrap(), "\"supervisor\"");
/// assert_eq!(AgentType::default(), AgentType::Worker);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AgentType {
    /// Coordinates workers.
    Supervisor,
    /// Executes tasks.
    #[default]
    Worker,
}

/// How an agent session was created.
///
/// ```
/// use dreamtown_client::town::SpawnMode;
/// assert_eq!(SpawnMode::ForkedContext.to_string(), "forkedcontext");
/// assert_eq!(serde_json::to_string(&SpawnMode::ForkedContext).unwrap(), "\"forkedcontext\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SpawnMode {
    /// A fresh agent with no inherited context.
    #[default]
    Fresh,
    /// Forked from a parent, with its context.
    ForkedContext,
    /// Resumed from a previous session.
    Resumed,
}

impl std::fmt::Display for SpawnMode {
    /// The stored word.
    ///
    /// ```
    /// assert_eq!(dreamtown_client::town::SpawnMode::Resumed.to_string(), "resumed");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Fresh => "fresh",
            Self::ForkedContext => "forkedcontext",
            Self::Resumed => "resumed",
        })
    }
}

/// An agent's lifecycle state: cold → starting → idle ⇄ working → draining → stopped.
///
/// ```
/// use dreamtown_client::town::AgentState;
/// assert_eq!(AgentState::default(), AgentState::Starting);
/// assert!(AgentState::Idle.can_accept_work());
/// assert!(AgentState::Stopped.is_terminal());
/// assert_eq!(AgentState::Working.to_string(), "Working");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    /// Registered, no process running (scale-to-zero).
    Cold,
    /// Starting up.
    #[default]
    Starting,
    /// Waiting for work.
    Idle,
    /// Working on a task.
    Working,
    /// Paused.
    Paused,
    /// Finishing its current task, accepting no new work.
    Draining,
    /// Stopped.
    Stopped,
    /// Failed.
    Error,
}

impl AgentState {
    /// Stopped, failed or cold?
    ///
    /// ```
    /// assert!(dreamtown_client::town::AgentState::Cold.is_terminal());
    /// ```
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Stopped | Self::Error | Self::Cold)
    }

    /// Can it take new work (idle)?
    ///
    /// ```
    /// assert!(!dreamtown_client::town::AgentState::Working.can_accept_work());
    /// ```
    #[must_use]
    pub fn can_accept_work(&self) -> bool {
        matches!(self, Self::Idle)
    }

    /// Is its process running?
    ///
    /// ```
    /// assert!(dreamtown_client::town::AgentState::Draining.is_active());
    /// ```
    #[must_use]
    pub fn is_active(&self) -> bool {
        matches!(self, Self::Starting | Self::Idle | Self::Working | Self::Paused | Self::Draining)
    }
}

impl std::fmt::Display for AgentState {
    /// The capitalized name, as tinytown displays it.
    ///
    /// ```
    /// assert_eq!(dreamtown_client::town::AgentState::Idle.to_string(), "Idle");
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Cold => "Cold",
            Self::Starting => "Starting",
            Self::Idle => "Idle",
            Self::Working => "Working",
            Self::Paused => "Paused",
            Self::Draining => "Draining",
            Self::Stopped => "Stopped",
            Self::Error => "Error",
        })
    }
}

/// An agent of a town.
///
/// ```
/// use dreamtown_client::town::{Agent, AgentState, AgentType};
/// let agent = Agent::new("backend", "claude", AgentType::Worker).with_nickname("Bee");
/// assert_eq!(agent.state, AgentState::Starting);
/// assert_eq!(agent.display_name(), "Bee");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    /// Its id (its address).
    pub id: AgentId,
    /// Its human-readable name.
    pub name: String,
    /// A human-facing nickname.
    #[serde(default)]
    pub nickname: Option<String>,
    /// Its role (`worker`, `reviewer`, ...).
    #[serde(default)]
    pub role_id: Option<String>,
    /// The agent that spawned it.
    #[serde(default)]
    pub parent_agent_id: Option<AgentId>,
    /// How its session was created.
    #[serde(default)]
    pub spawn_mode: SpawnMode,
    /// Its kind.
    pub agent_type: AgentType,
    /// Its state.
    pub state: AgentState,
    /// The CLI it runs (`claude`, `codex`, ...).
    pub cli: String,
    /// Its current task.
    pub current_task: Option<TaskId>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// Its last heartbeat.
    pub last_heartbeat: DateTime<Utc>,
    /// Tasks completed.
    pub tasks_completed: u64,
    /// Rounds completed.
    #[serde(default)]
    pub rounds_completed: u64,
    /// When it last worked (idle-timeout detection).
    #[serde(default = "Utc::now")]
    pub last_active_at: DateTime<Utc>,
}

impl Agent {
    /// A new agent, starting, created now, with a new id. (tinytown also
    /// picks a nickname from the id; set one with [`with_nickname`](Self::with_nickname).)
    ///
    /// ```
    /// use dreamtown_client::town::{Agent, AgentType};
    /// let agent = Agent::new("backend", "claude", AgentType::Worker);
    /// assert_eq!(agent.tasks_completed, 0);
    /// assert_eq!(agent.created_at, agent.last_heartbeat);
    /// ```
    #[must_use]
    pub fn new(name: impl Into<String>, cli: impl Into<String>, agent_type: AgentType) -> Self {
        let now = Utc::now();
        Self {
            id: AgentId::new(),
            name: name.into(),
            nickname: None,
            role_id: None,
            parent_agent_id: None,
            spawn_mode: SpawnMode::Fresh,
            agent_type,
            state: AgentState::Starting,
            cli: cli.into(),
            current_task: None,
            created_at: now,
            last_heartbeat: now,
            tasks_completed: 0,
            rounds_completed: 0,
            last_active_at: now,
        }
    }

    /// The supervisor agent, with its well-known id.
    ///
    /// ```
    /// use dreamtown_client::town::{Agent, AgentId, AgentType};
    /// let boss = Agent::supervisor("conductor");
    /// assert_eq!(boss.id, AgentId::supervisor());
    /// assert_eq!(boss.agent_type, AgentType::Supervisor);
    /// ```
    #[must_use]
    pub fn supervisor(name: impl Into<String>) -> Self {
        Self { id: AgentId::supervisor(), ..Self::new(name, "supervisor", AgentType::Supervisor) }
    }

    /// With role `role_id`.
    ///
    /// ```
    /// # use dreamtown_client::town::{Agent, AgentType};
    /// assert_eq!(Agent::new("a", "c", AgentType::Worker).with_role("reviewer").effective_role(), "reviewer");
    /// ```
    #[must_use]
    pub fn with_role(mut self, role_id: impl Into<String>) -> Self {
        self.role_id = Some(role_id.into());
        self
    }

    /// With a nickname.
    ///
    /// ```
    /// # use dreamtown_client::town::{Agent, AgentType};
    /// assert_eq!(Agent::new("a", "c", AgentType::Worker).with_nickname("Fred").nickname.as_deref(), Some("Fred"));
    /// ```
    #[must_use]
    pub fn with_nickname(mut self, nickname: impl Into<String>) -> Self {
        self.nickname = Some(nickname.into());
        self
    }

    /// Spawned by `parent_id`.
    ///
    /// ```
    /// # use dreamtown_client::town::{Agent, AgentId, AgentType};
    /// let parent = AgentId::supervisor();
    /// assert_eq!(Agent::new("a", "c", AgentType::Worker).with_parent(parent).parent_agent_id, Some(parent));
    /// ```
    #[must_use]
    pub fn with_parent(mut self, parent_id: AgentId) -> Self {
        self.parent_agent_id = Some(parent_id);
        self
    }

    /// Created by `mode`.
    ///
    /// ```
    /// # use dreamtown_client::town::{Agent, AgentType, SpawnMode};
    /// let agent = Agent::new("a", "c", AgentType::Worker).with_spawn_mode(SpawnMode::Resumed);
    /// assert_eq!(agent.spawn_mode, SpawnMode::Resumed);
    /// ```
    #[must_use]
    pub fn with_spawn_mode(mut self, mode: SpawnMode) -> Self {
        self.spawn_mode = mode;
        self
    }

    /// The nickname if set, else the name.
    ///
    /// ```
    /// # use dreamtown_client::town::{Agent, AgentType};
    /// assert_eq!(Agent::new("backend", "c", AgentType::Worker).display_name(), "backend");
    /// ```
    #[must_use]
    pub fn display_name(&self) -> &str {
        self.nickname.as_deref().unwrap_or(&self.name)
    }

    /// The role, or `default`.
    ///
    /// ```
    /// # use dreamtown_client::town::{Agent, AgentType};
    /// assert_eq!(Agent::new("a", "c", AgentType::Worker).effective_role(), "default");
    /// ```
    #[must_use]
    pub fn effective_role(&self) -> &str {
        self.role_id.as_deref().unwrap_or("default")
    }

    /// The hash fields tinytown's `set_agent_state` writes, in its order;
    /// optional fields only when set (`TOWN.AGENT SET` removes the rest).
    pub(crate) fn to_fields(&self) -> Result<Vec<(&'static str, String)>> {
        let mut fields = vec![
            ("id", self.id.to_string()),
            ("name", self.name.clone()),
            ("agent_type", record::word(&self.agent_type)?),
            ("state", record::word(&self.state)?),
            ("cli", self.cli.clone()),
            ("created_at", record::time(&self.created_at)),
            ("last_heartbeat", record::time(&self.last_heartbeat)),
            ("tasks_completed", self.tasks_completed.to_string()),
            ("rounds_completed", self.rounds_completed.to_string()),
            ("last_active_at", record::time(&self.last_active_at)),
            ("spawn_mode", record::word(&self.spawn_mode)?),
        ];
        let optional = [
            ("current_task", self.current_task.map(|id| id.to_string())),
            ("nickname", self.nickname.clone()),
            ("role_id", self.role_id.clone()),
            ("parent_agent_id", self.parent_agent_id.map(|id| id.to_string())),
        ];
        fields.extend(optional.into_iter().filter_map(|(name, value)| Some((name, value?))));
        Ok(fields)
    }

    /// Read a stored record as tinytown's `parse_agent_from_hash` did: the
    /// `id` is required; anything else missing or unreadable takes its
    /// default (times: now; `last_active_at`: `created_at`).
    pub(crate) fn from_fields(stored: &[(String, Vec<u8>)]) -> Result<Self> {
        let fields = Fields(stored);
        let created_at = fields.time("created_at").unwrap_or_else(Utc::now);
        Ok(Self {
            id: fields.id("agent")?,
            name: fields.string("name").unwrap_or_default(),
            nickname: fields.string("nickname"),
            role_id: fields.string("role_id"),
            parent_agent_id: fields.parsed("parent_agent_id"),
            spawn_mode: fields.word("spawn_mode"),
            agent_type: fields.word("agent_type"),
            state: fields.word("state"),
            cli: fields.string("cli").unwrap_or_default(),
            current_task: fields.parsed("current_task"),
            created_at,
            last_heartbeat: fields.time("last_heartbeat").unwrap_or_else(Utc::now),
            tasks_completed: fields.parsed("tasks_completed").unwrap_or(0),
            rounds_completed: fields.parsed("rounds_completed").unwrap_or(0),
            last_active_at: fields.time("last_active_at").unwrap_or(created_at),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(fields: Vec<(&'static str, String)>) -> Vec<(String, Vec<u8>)> {
        fields.into_iter().map(|(f, v)| (f.to_owned(), v.into_bytes())).collect()
    }

    #[test]
    fn the_hash_is_tinytowns_and_reads_back() {
        let when: DateTime<Utc> = "2025-01-01T09:00:00Z".parse().unwrap();
        let mut agent = Agent::new("backend", "claude", AgentType::Worker)
            .with_role("reviewer")
            .with_spawn_mode(SpawnMode::ForkedContext);
        agent.created_at = when;
        agent.last_heartbeat = when;
        agent.last_active_at = when;
        agent.state = AgentState::Working;
        agent.current_task = Some(TaskId::from_uuid(uuid::Uuid::from_u128(9)));
        let fields = agent.to_fields().unwrap();
        let names: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            names,
            [
                "id",
                "name",
                "agent_type",
                "state",
                "cli",
                "created_at",
                "last_heartbeat",
                "tasks_completed",
                "rounds_completed",
                "last_active_at",
                "spawn_mode",
                "current_task",
                "role_id",
            ]
        );
        let get = |name: &str| fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str());
        assert_eq!(get("state"), Some("working"));
        assert_eq!(get("spawn_mode"), Some("forkedcontext"));
        assert_eq!(get("created_at"), Some("2025-01-01T09:00:00+00:00"));
        assert_eq!(Agent::from_fields(&owned(fields)).unwrap(), agent);
    }

    #[test]
    fn missing_fields_take_tinytowns_defaults() {
        let id = AgentId::new();
        let stored = vec![
            ("id".to_owned(), id.to_string().into_bytes()),
            ("state".to_owned(), b"dancing".to_vec()),
            ("created_at".to_owned(), b"2025-01-01T09:00:00+00:00".to_vec()),
            ("tasks_completed".to_owned(), b"many".to_vec()),
        ];
        let agent = Agent::from_fields(&stored).unwrap();
        assert_eq!(agent.id, id);
        assert_eq!(agent.state, AgentState::Starting);
        assert_eq!(agent.agent_type, AgentType::Worker);
        assert_eq!(agent.tasks_completed, 0);
        assert_eq!(agent.last_active_at, agent.created_at);
        assert!(Agent::from_fields(&[("name".to_owned(), b"x".to_vec())]).is_err());
        assert!(Agent::from_fields(&[("id".to_owned(), b"worker-1".to_vec())]).is_err());
    }
}
