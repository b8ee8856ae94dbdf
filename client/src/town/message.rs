//! tinytown's `Message`: what agents send each other, with its JSON shape
//! (`type` and its fields flattened into the object, priority in lowercase),
//! which `TOWN.SEND` stores byte for byte.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::ids::{AgentId, MessageId};

/// How urgently a message wants attention. `High` and `Urgent` messages go
/// to the head of the inbox, `Normal` and `Low` ones to its tail.
///
/// ```
/// use dreamtown_client::town::Priority;
/// assert_eq!(serde_json::to_string(&Priority::Urgent).unwrap(), "\"urgent\"");
/// assert_eq!(Priority::default(), Priority::Normal);
/// assert!(Priority::High > Priority::Normal);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Processed when idle.
    Low,
    /// Standard processing.
    #[default]
    Normal,
    /// Processed before normal messages.
    High,
    /// Interrupts current work.
    Urgent,
}

/// What a confirmation confirms.
///
/// ```
/// use dreamtown_client::town::ConfirmationType;
/// let rejected = ConfirmationType::Rejected { reason: "no tests".into() };
/// assert_eq!(serde_json::to_string(&rejected).unwrap(), r#"{"type":"rejected","reason":"no tests"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConfirmationType {
    /// The message was received.
    Received,
    /// The message was acknowledged.
    Acknowledged,
    /// Thanks.
    Thanks,
    /// Approved.
    Approved,
    /// Rejected, with a reason.
    Rejected {
        /// Why.
        reason: String,
    },
}

/// The kind of a message and its payload, flattened into the message's JSON
/// under `"type"`.
///
/// ```
/// use dreamtown_client::town::MessageType;
/// let done = MessageType::TaskDone { task_id: "t-1".into(), result: "ok".into() };
/// assert_eq!(serde_json::to_string(&done).unwrap(), r#"{"type":"task_done","task_id":"t-1","result":"ok"}"#);
/// assert!(MessageType::Ping.is_actionable());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageType {
    /// A task to do.
    Task {
        /// What to do.
        description: String,
    },
    /// A question.
    Query {
        /// The question.
        question: String,
    },
    /// Information, no action needed.
    Informational {
        /// The summary.
        summary: String,
    },
    /// A confirmation or acknowledgement.
    Confirmation {
        /// What is confirmed.
        ack_type: ConfirmationType,
    },
    /// A task assignment from a supervisor to a worker.
    TaskAssign {
        /// The task.
        task_id: String,
    },
    /// A task is done.
    TaskDone {
        /// The task.
        task_id: String,
        /// Its result.
        result: String,
    },
    /// A task failed.
    TaskFailed {
        /// The task.
        task_id: String,
        /// The error.
        error: String,
    },
    /// A status request.
    StatusRequest,
    /// A status response.
    StatusResponse {
        /// The agent's state.
        state: String,
        /// Its current task, if any.
        current_task: Option<String>,
    },
    /// Heartbeat ping.
    Ping,
    /// Heartbeat pong.
    Pong,
    /// A shutdown request.
    Shutdown,
    /// Anything else.
    Custom {
        /// What kind.
        kind: String,
        /// The payload.
        payload: String,
    },
}

impl MessageType {
    /// Does this message likely ask for work or an answer?
    ///
    /// ```
    /// use dreamtown_client::town::MessageType;
    /// assert!(MessageType::Task { description: "fix it".into() }.is_actionable());
    /// assert!(!MessageType::Pong.is_actionable());
    /// ```
    #[must_use]
    pub fn is_actionable(&self) -> bool {
        matches!(
            self,
            Self::Task { .. }
                | Self::Query { .. }
                | Self::TaskAssign { .. }
                | Self::StatusRequest
                | Self::Ping
                | Self::Shutdown
                | Self::Custom { .. }
        )
    }
}

/// A message between agents, as tinytown serializes it:
/// `{"id":..,"from":..,"to":..,"type":..,<type fields>,"priority":..,"created_at":..,"correlation_id":..}`.
///
/// ```
/// use dreamtown_client::town::{AgentId, Message, MessageType, Priority};
///
/// let message = Message::new(AgentId::supervisor(), AgentId::new(), MessageType::Ping)
///     .with_priority(Priority::High);
/// let json = serde_json::to_string(&message).unwrap();
/// assert!(json.contains(r#""type":"ping","priority":"high""#), "{json}");
/// let back: Message = serde_json::from_str(&json).unwrap();
/// assert_eq!(back, message);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Unique message id.
    pub id: MessageId,
    /// The sender.
    pub from: AgentId,
    /// The recipient: the inbox it goes to.
    pub to: AgentId,
    /// Its kind and payload.
    #[serde(flatten)]
    pub msg_type: MessageType,
    /// Its priority.
    pub priority: Priority,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// The message this one answers, if any.
    pub correlation_id: Option<MessageId>,
}

impl Message {
    /// A new message of normal priority, created now, with a new id.
    ///
    /// ```
    /// use dreamtown_client::town::{AgentId, Message, MessageType, Priority};
    /// let m = Message::new(AgentId::new(), AgentId::new(), MessageType::Shutdown);
    /// assert_eq!(m.priority, Priority::Normal);
    /// assert_eq!(m.correlation_id, None);
    /// ```
    #[must_use]
    pub fn new(from: AgentId, to: AgentId, msg_type: MessageType) -> Self {
        Self {
            id: MessageId::new(),
            from,
            to,
            msg_type,
            priority: Priority::Normal,
            created_at: Utc::now(),
            correlation_id: None,
        }
    }

    /// The same message with priority `priority`.
    ///
    /// ```
    /// use dreamtown_client::town::{AgentId, Message, MessageType, Priority};
    /// let m = Message::new(AgentId::new(), AgentId::new(), MessageType::Ping).with_priority(Priority::Low);
    /// assert_eq!(m.priority, Priority::Low);
    /// ```
    #[must_use]
    pub fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// The same message as an answer to message `id`.
    ///
    /// ```
    /// use dreamtown_client::town::{AgentId, Message, MessageId, MessageType};
    /// let question = MessageId::new();
    /// let m = Message::new(AgentId::new(), AgentId::new(), MessageType::Pong).with_correlation(question);
    /// assert_eq!(m.correlation_id, Some(question));
    /// ```
    #[must_use]
    pub fn with_correlation(mut self, id: MessageId) -> Self {
        self.correlation_id = Some(id);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_is_tinytowns_field_for_field() {
        let message = Message {
            id: "4f1c9a6e-0b7d-4a43-9d7e-2b8f0c1d5e11".parse().unwrap(),
            from: AgentId::supervisor(),
            to: "7a2e0c3b-5d61-4f0e-8c9a-1e2d3f4a5b60".parse().unwrap(),
            msg_type: MessageType::Task { description: "Write the parser".into() },
            priority: Priority::Urgent,
            created_at: "2025-01-01T09:00:00Z".parse().unwrap(),
            correlation_id: None,
        };
        let json = serde_json::to_string(&message).unwrap();
        assert_eq!(
            json,
            r#"{"id":"4f1c9a6e-0b7d-4a43-9d7e-2b8f0c1d5e11","from":"00000000-0000-0000-0000-000000000001","to":"7a2e0c3b-5d61-4f0e-8c9a-1e2d3f4a5b60","type":"task","description":"Write the parser","priority":"urgent","created_at":"2025-01-01T09:00:00Z","correlation_id":null}"#
        );
        assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), message);
    }

    #[test]
    fn every_type_round_trips() {
        let types = [
            MessageType::Task { description: "d".into() },
            MessageType::Query { question: "q".into() },
            MessageType::Informational { summary: "s".into() },
            MessageType::Confirmation { ack_type: ConfirmationType::Received },
            MessageType::Confirmation { ack_type: ConfirmationType::Rejected { reason: "r".into() } },
            MessageType::TaskAssign { task_id: "t".into() },
            MessageType::TaskDone { task_id: "t".into(), result: "r".into() },
            MessageType::TaskFailed { task_id: "t".into(), error: "e".into() },
            MessageType::StatusRequest,
            MessageType::StatusResponse { state: "idle".into(), current_task: None },
            MessageType::Ping,
            MessageType::Pong,
            MessageType::Shutdown,
            MessageType::Custom { kind: "k".into(), payload: "{}".into() },
        ];
        for msg_type in types {
            let message = Message::new(AgentId::new(), AgentId::new(), msg_type);
            let json = serde_json::to_string(&message).unwrap();
            assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), message, "{json}");
        }
    }

    #[test]
    fn a_message_of_another_shape_does_not_parse() {
        for json in [
            r#"{"to":"worker-1"}"#,
            r#"{"id":"4f1c9a6e-0b7d-4a43-9d7e-2b8f0c1d5e11","from":"00000000-0000-0000-0000-000000000001","to":"00000000-0000-0000-0000-000000000001","type":"dance","priority":"normal","created_at":"2025-01-01T09:00:00Z","correlation_id":null}"#,
        ] {
            assert!(serde_json::from_str::<Message>(json).is_err(), "{json}");
        }
    }
}
