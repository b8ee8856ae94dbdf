//! tinytown's `Task` record and its states, and how it is stored as the
//! hash `tt:{town}:task:<id>` (the fields of tinytown's `set_task`, read
//! back as its `parse_task_from_hash` did).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ids::{AgentId, TaskId};
use super::record::{self, Fields};
use crate::error::{Error, Result};

/// A task's execution state.
///
/// ```
/// use dreamtown_client::town::TaskState;
/// assert_eq!(TaskState::default(), TaskState::Pending);
/// assert!(TaskState::Cancelled.is_terminal());
/// assert_eq!(serde_json::to_string(&TaskState::Running).unwrap(), "\"running\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TaskState {
    /// Waiting to be assigned.
    #[default]
    Pending,
    /// Assigned to an agent.
    Assigned,
    /// Being worked on.
    Running,
    /// Done.
    Completed,
    /// Failed.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskState {
    /// Completed, failed or cancelled?
    ///
    /// ```
    /// assert!(!dreamtown_client::town::TaskState::Assigned.is_terminal());
    /// ```
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A task that can be assigned to an agent.
///
/// ```
/// use dreamtown_client::town::{AgentId, Task, TaskState};
/// let mut task = Task::new("Write the parser").with_tags(["parser"]);
/// task.assign(AgentId::new());
/// task.start();
/// task.complete("merged");
/// assert_eq!(task.state, TaskState::Completed);
/// assert_eq!(task.result.as_deref(), Some("merged"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Its id.
    pub id: TaskId,
    /// What to do.
    pub description: String,
    /// Its state.
    pub state: TaskState,
    /// The agent it is assigned to.
    pub assigned_to: Option<AgentId>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// When work on it started.
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
    /// When it completed or failed.
    pub completed_at: Option<DateTime<Utc>>,
    /// Its result or error.
    pub result: Option<String>,
    /// Its parent task.
    pub parent_id: Option<TaskId>,
    /// Tags for filtering.
    #[serde(default)]
    pub tags: Vec<String>,
}

impl Task {
    /// A new pending task, created now, with a new id.
    ///
    /// ```
    /// use dreamtown_client::town::{Task, TaskState};
    /// let task = Task::new("Fix the build");
    /// assert_eq!(task.state, TaskState::Pending);
    /// assert!(task.tags.is_empty());
    /// ```
    #[must_use]
    pub fn new(description: impl Into<String>) -> Self {
        let now = Utc::now();
        Self {
            id: TaskId::new(),
            description: description.into(),
            state: TaskState::Pending,
            assigned_to: None,
            created_at: now,
            updated_at: now,
            started_at: None,
            completed_at: None,
            result: None,
            parent_id: None,
            tags: Vec::new(),
        }
    }

    /// With these tags.
    ///
    /// ```
    /// # use dreamtown_client::town::Task;
    /// assert_eq!(Task::new("t").with_tags(["a", "b"]).tags, ["a", "b"]);
    /// ```
    #[must_use]
    pub fn with_tags(mut self, tags: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// A subtask of `parent`.
    ///
    /// ```
    /// # use dreamtown_client::town::Task;
    /// let parent = Task::new("epic");
    /// assert_eq!(Task::new("t").with_parent(parent.id).parent_id, Some(parent.id));
    /// ```
    #[must_use]
    pub fn with_parent(mut self, parent: TaskId) -> Self {
        self.parent_id = Some(parent);
        self
    }

    /// Assigned to `agent`.
    ///
    /// ```
    /// # use dreamtown_client::town::{AgentId, Task, TaskState};
    /// let mut task = Task::new("t");
    /// task.assign(AgentId::supervisor());
    /// assert_eq!(task.state, TaskState::Assigned);
    /// ```
    pub fn assign(&mut self, agent: AgentId) {
        self.assigned_to = Some(agent);
        self.state = TaskState::Assigned;
        self.updated_at = Utc::now();
    }

    /// Running, from now.
    ///
    /// ```
    /// # use dreamtown_client::town::{Task, TaskState};
    /// let mut task = Task::new("t");
    /// task.start();
    /// assert_eq!(task.state, TaskState::Running);
    /// assert!(task.started_at.is_some());
    /// ```
    pub fn start(&mut self) {
        let now = Utc::now();
        self.state = TaskState::Running;
        self.started_at = Some(now);
        self.updated_at = now;
    }

    /// Completed with `result`.
    ///
    /// ```
    /// # use dreamtown_client::town::{Task, TaskState};
    /// let mut task = Task::new("t");
    /// task.complete("ok");
    /// assert!(task.completed_at.is_some());
    /// ```
    pub fn complete(&mut self, result: impl Into<String>) {
        self.finish(TaskState::Completed, result.into());
    }

    /// Failed with `error`.
    ///
    /// ```
    /// # use dreamtown_client::town::{Task, TaskState};
    /// let mut task = Task::new("t");
    /// task.fail("timeout");
    /// assert_eq!((task.state, task.result.as_deref()), (TaskState::Failed, Some("timeout")));
    /// ```
    pub fn fail(&mut self, error: impl Into<String>) {
        self.finish(TaskState::Failed, error.into());
    }

    fn finish(&mut self, state: TaskState, result: String) {
        let now = Utc::now();
        self.state = state;
        self.result = Some(result);
        self.completed_at = Some(now);
        self.updated_at = now;
    }

    /// The hash fields tinytown's `set_task` writes, in its order; optional
    /// fields only when set (`TOWN.TASK SET` removes the rest).
    pub(crate) fn to_fields(&self) -> Result<Vec<(&'static str, String)>> {
        let mut fields = vec![
            ("id", self.id.to_string()),
            ("description", self.description.clone()),
            ("state", record::word(&self.state)?),
            ("created_at", record::time(&self.created_at)),
            ("updated_at", record::time(&self.updated_at)),
            ("tags", serde_json::to_string(&self.tags).map_err(Error::Encode)?),
        ];
        let optional = [
            ("assigned_to", self.assigned_to.map(|id| id.to_string())),
            ("started_at", self.started_at.as_ref().map(record::time)),
            ("completed_at", self.completed_at.as_ref().map(record::time)),
            ("result", self.result.clone()),
            ("parent_id", self.parent_id.map(|id| id.to_string())),
        ];
        fields.extend(optional.into_iter().filter_map(|(name, value)| Some((name, value?))));
        Ok(fields)
    }

    /// Read a stored record as tinytown's `parse_task_from_hash` did: the
    /// `id` is required; anything else missing or unreadable takes its
    /// default (times: now; tags: none).
    pub(crate) fn from_fields(stored: &[(String, Vec<u8>)]) -> Result<Self> {
        let fields = Fields(stored);
        Ok(Self {
            id: fields.id("task")?,
            description: fields.string("description").unwrap_or_default(),
            state: fields.word("state"),
            assigned_to: fields.parsed("assigned_to"),
            created_at: fields.time("created_at").unwrap_or_else(Utc::now),
            updated_at: fields.time("updated_at").unwrap_or_else(Utc::now),
            started_at: fields.time("started_at"),
            completed_at: fields.time("completed_at"),
            result: fields.string("result"),
            parent_id: fields.parsed("parent_id"),
            tags: fields.text("tags").and_then(|tags| serde_json::from_str(tags).ok()).unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_tinytowns_and_reads_back() {
        let when: DateTime<Utc> = "2025-01-01T09:00:00Z".parse().unwrap();
        let mut task = Task::new("Write the parser").with_tags(["parser", "rust"]);
        task.created_at = when;
        task.updated_at = when;
        task.started_at = Some(when);
        task.result = Some("half done".into());
        let fields = task.to_fields().unwrap();
        let names: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["id", "description", "state", "created_at", "updated_at", "tags", "started_at", "result"]);
        assert_eq!(fields[5].1, r#"["parser","rust"]"#);
        let stored: Vec<(String, Vec<u8>)> = fields.into_iter().map(|(f, v)| (f.to_owned(), v.into_bytes())).collect();
        assert_eq!(Task::from_fields(&stored).unwrap(), task);
    }

    #[test]
    fn missing_fields_take_tinytowns_defaults() {
        let id = TaskId::new();
        let stored = vec![("id".to_owned(), id.to_string().into_bytes()), ("tags".to_owned(), b"not json".to_vec())];
        let task = Task::from_fields(&stored).unwrap();
        assert_eq!((task.id, task.state, task.tags.len()), (id, TaskState::Pending, 0));
        assert!(Task::from_fields(&[("id".to_owned(), b"t-42".to_vec())]).is_err());
    }
}
