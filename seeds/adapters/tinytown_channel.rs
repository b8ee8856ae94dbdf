//! tinytown's channel over dreamtown: this file replaces tinytown 0.10.0's
//! `src/channel.rs` whole (`make test-seeds`, docs/switching.md). The public
//! API is tinytown's `Channel` (same constructor over the same
//! `redis::aio::ConnectionManager`, same methods, same types), each call
//! sent by `dreamtown_client::town::Channel` (TOWN.* commands, and the
//! docket's stream commands on dreamtown's keys), written against that
//! crate's method names only.
//!
//! Not the transport, so left as tinytown has them: the event stream
//! (`event_stream`, `emit_event`: tinytown's own `EventStream` on its keys)
//! and everything callers do with `conn()` (missions).

use std::time::Duration;

use dreamtown_client::town as dt;
use redis::aio::ConnectionManager;
use serde::de::DeserializeOwned;
use serde::Serialize;

#[path = "dreamtown_bridge.rs"]
mod dreamtown_bridge;
use dreamtown_bridge::Bridge;

use crate::agent::AgentId;
use crate::error::{Error, Result};
use crate::events::{EventStream, TownEvent};
use crate::keys::RedisKeys;
use crate::message::Message;

/// tinytown's channel, over dreamtown.
#[derive(Clone)]
pub struct Channel {
    conn: ConnectionManager,
    keys: RedisKeys,
    inner: dt::Channel<Bridge<ConnectionManager>>,
}

/// One of tinytown's types as the client's (or back): both carry
/// tinytown's serde encoding, so the JSON is the conversion.
fn to<A: Serialize, B: DeserializeOwned>(value: &A) -> Result<B> {
    Ok(serde_json::from_value(serde_json::to_value(value)?)?)
}

/// A client error as tinytown's: a server refusal or an I/O failure is
/// `Error::Redis`, as a failed Redis call was.
fn err(error: dreamtown_client::Error) -> Error {
    Error::Redis(redis::RedisError::from((redis::ErrorKind::IoError, "dreamtown", error.to_string())))
}

fn message(delivery: dt::Delivery) -> Result<Message> {
    let message = delivery.into_message().map_err(err)?;
    to(&message)
}

impl Channel {
    /// As tinytown: the channel of `town_name` over `conn`.
    pub fn new(conn: ConnectionManager, town_name: impl Into<String>) -> Self {
        let town_name = town_name.into();
        Self {
            inner: dt::Channel::new(Bridge(conn.clone()), town_name.clone()),
            keys: RedisKeys::new(town_name),
            conn,
        }
    }

    /// The town name.
    pub fn town_name(&self) -> &str {
        self.keys.town_name()
    }

    /// The connection (callers keep their own keys on it: missions).
    pub fn conn(&self) -> &ConnectionManager {
        &self.conn
    }

    /// tinytown's key generator (for callers' own keys; the channel's data
    /// lives in dreamtown's `tt:{<town>}:...` keys, docs/town.md).
    pub fn keys(&self) -> &RedisKeys {
        &self.keys
    }

    fn agent(id: AgentId) -> Result<dt::AgentId> {
        to(&id)
    }

    pub async fn send(&self, message: &Message) -> Result<()> {
        self.inner.send(&to(message)?).await.map_err(err)
    }

    pub async fn send_urgent(&self, message: &Message) -> Result<()> {
        self.inner.send_urgent(&to(message)?).await.map_err(err)
    }

    pub async fn receive_urgent(&self, agent_id: AgentId) -> Result<Vec<Message>> {
        let deliveries = self.inner.receive_urgent(Self::agent(agent_id)?).await.map_err(err)?;
        deliveries.into_iter().map(message).collect()
    }

    pub async fn urgent_len(&self, agent_id: AgentId) -> Result<usize> {
        self.inner.urgent_len(Self::agent(agent_id)?).await.map_err(err)
    }

    pub async fn request_stop(&self, agent_id: AgentId) -> Result<()> {
        self.inner.request_stop(Self::agent(agent_id)?).await.map_err(err)
    }

    pub async fn should_stop(&self, agent_id: AgentId) -> Result<bool> {
        self.inner.should_stop(Self::agent(agent_id)?).await.map_err(err)
    }

    pub async fn clear_stop(&self, agent_id: AgentId) -> Result<()> {
        self.inner.clear_stop(Self::agent(agent_id)?).await.map_err(err)
    }

    pub async fn receive(&self, agent_id: AgentId, timeout: Duration) -> Result<Option<Message>> {
        match self.inner.receive(Self::agent(agent_id)?, timeout).await.map_err(err)? {
            Some(message) => Ok(Some(to(&message)?)),
            None => Ok(None),
        }
    }

    pub async fn try_receive(&self, agent_id: AgentId) -> Result<Option<Message>> {
        match self.inner.try_receive(Self::agent(agent_id)?).await.map_err(err)? {
            Some(message) => Ok(Some(to(&message)?)),
            None => Ok(None),
        }
    }

    pub async fn inbox_len(&self, agent_id: AgentId) -> Result<usize> {
        self.inner.inbox_len(Self::agent(agent_id)?).await.map_err(err)
    }

    /// tinytown's `LRANGE 0 count-1`: a positive count is the first
    /// `count`; 0 is all; a negative count all but the last `-count`.
    pub async fn peek_inbox(&self, agent_id: AgentId, count: isize) -> Result<Vec<Message>> {
        let agent = Self::agent(agent_id)?;
        let n = if count > 0 {
            count.unsigned_abs()
        } else {
            let len = self.inner.inbox_len(agent).await.map_err(err)?;
            len.saturating_sub(count.unsigned_abs())
        };
        if n == 0 {
            return Ok(Vec::new());
        }
        let deliveries = self.inner.peek_inbox(agent, n).await.map_err(err)?;
        // As tinytown: entries that are not messages are skipped.
        Ok(deliveries.into_iter().filter_map(|d| message(d).ok()).collect())
    }

    pub async fn broadcast(&self, message: &Message) -> Result<()> {
        self.inner.broadcast(&to(message)?).await.map_err(err)
    }

    pub async fn set_agent_state(&self, agent: &crate::agent::Agent) -> Result<()> {
        self.inner.set_agent_state(&to(agent)?).await.map_err(err)
    }

    pub async fn get_agent_state(&self, agent_id: AgentId) -> Result<Option<crate::agent::Agent>> {
        match self.inner.get_agent_state(Self::agent(agent_id)?).await.map_err(err)? {
            Some(agent) => Ok(Some(to(&agent)?)),
            None => Ok(None),
        }
    }

    pub async fn list_agents(&self) -> Result<Vec<crate::agent::Agent>> {
        let agents = self.inner.list_agents().await.map_err(err)?;
        agents.iter().map(to).collect()
    }

    pub async fn get_agent_by_name(&self, name: &str) -> Result<Option<crate::agent::Agent>> {
        match self.inner.get_agent_by_name(name).await.map_err(err)? {
            Some(agent) => Ok(Some(to(&agent)?)),
            None => Ok(None),
        }
    }

    pub async fn delete_agent(&self, agent_id: AgentId) -> Result<()> {
        self.inner.delete_agent(Self::agent(agent_id)?).await.map_err(err)
    }

    pub async fn increment_agent_rounds(&self, agent_id: AgentId) -> Result<u64> {
        self.inner.increment_agent_rounds(Self::agent(agent_id)?).await.map_err(err)
    }

    pub async fn increment_agent_tasks_completed(&self, agent_id: AgentId) -> Result<u64> {
        self.inner.increment_agent_tasks_completed(Self::agent(agent_id)?).await.map_err(err)
    }

    pub async fn update_agent_heartbeat(&self, agent_id: AgentId) -> Result<()> {
        self.inner.update_agent_heartbeat(Self::agent(agent_id)?).await.map_err(err)
    }

    pub async fn set_task(&self, task: &crate::task::Task) -> Result<()> {
        self.inner.set_task(&to(task)?).await.map_err(err)
    }

    pub async fn get_task(&self, task_id: crate::task::TaskId) -> Result<Option<crate::task::Task>> {
        match self.inner.get_task(to(&task_id)?).await.map_err(err)? {
            Some(task) => Ok(Some(to(&task)?)),
            None => Ok(None),
        }
    }

    pub async fn delete_task(&self, task_id: crate::task::TaskId) -> Result<bool> {
        self.inner.delete_task(to(&task_id)?).await.map_err(err)
    }

    pub async fn list_tasks(&self) -> Result<Vec<crate::task::Task>> {
        let tasks = self.inner.list_tasks().await.map_err(err)?;
        tasks.iter().map(to).collect()
    }

    pub async fn log_agent_activity(&self, agent_id: AgentId, activity: &str) -> Result<()> {
        self.inner.log_agent_activity(Self::agent(agent_id)?, activity).await.map_err(err)
    }

    pub async fn get_agent_activity(&self, agent_id: AgentId) -> Result<Option<String>> {
        self.inner.get_agent_activity(Self::agent(agent_id)?).await.map_err(err)
    }

    /// tinytown's own event stream, on its own keys (not the transport).
    pub fn event_stream(&self) -> EventStream {
        EventStream::new(self.conn.clone(), self.town_name())
    }

    /// As tinytown: best effort, never an error.
    pub async fn emit_event(&self, event: &TownEvent) {
        let _ = self.event_stream().emit(event).await;
    }

    pub async fn backlog_push(&self, task_id: crate::task::TaskId) -> Result<()> {
        self.inner.backlog_push(to(&task_id)?).await.map_err(err)
    }

    pub async fn backlog_list(&self) -> Result<Vec<crate::task::TaskId>> {
        let ids = self.inner.backlog_list().await.map_err(err)?;
        ids.iter().map(to).collect()
    }

    pub async fn backlog_len(&self) -> Result<usize> {
        self.inner.backlog_len().await.map_err(err)
    }

    pub async fn backlog_pop(&self) -> Result<Option<crate::task::TaskId>> {
        match self.inner.backlog_pop().await.map_err(err)? {
            Some(id) => Ok(Some(to(&id)?)),
            None => Ok(None),
        }
    }

    pub async fn backlog_remove(&self, task_id: crate::task::TaskId) -> Result<bool> {
        self.inner.backlog_remove(to(&task_id)?).await.map_err(err)
    }

    pub async fn drain_inbox(&self, agent_id: AgentId) -> Result<Vec<Message>> {
        let deliveries = self.inner.drain_inbox(Self::agent(agent_id)?).await.map_err(err)?;
        deliveries.into_iter().map(message).collect()
    }

    pub async fn move_message_to_inbox(&self, message: &Message, to_agent: AgentId) -> Result<()> {
        self.inner.move_message_to_inbox(&to(message)?, Self::agent(to_agent)?).await.map_err(err)
    }

    pub async fn reset_all(&self) -> Result<usize> {
        self.inner.reset_all().await.map_err(err)
    }

    pub async fn reset_agents_only(&self) -> Result<usize> {
        self.inner.reset_agents_only().await.map_err(err)
    }

    pub async fn docket_ensure_group(&self) -> Result<()> {
        self.inner.docket_ensure_group().await.map_err(err)
    }

    pub async fn docket_push(
        &self,
        task_id: crate::task::TaskId,
        description: &str,
        priority: &str,
        from: &str,
        to_agent: &str,
    ) -> Result<String> {
        self.inner.docket_push(to(&task_id)?, description, priority, from, to_agent).await.map_err(err)
    }

    pub async fn docket_read(
        &self,
        consumer_name: &str,
        block_ms: usize,
    ) -> Result<Option<(String, std::collections::HashMap<String, String>)>> {
        self.inner.docket_read(consumer_name, block_ms).await.map_err(err)
    }

    pub async fn docket_ack(&self, entry_id: &str) -> Result<()> {
        self.inner.docket_ack(entry_id).await.map_err(err)
    }

    pub async fn docket_len(&self) -> Result<usize> {
        self.inner.docket_len().await.map_err(err)
    }

    pub async fn docket_pending_count(&self) -> Result<usize> {
        self.inner.docket_pending_count().await.map_err(err)
    }

    pub async fn docket_group_lag(&self) -> Result<Option<usize>> {
        self.inner.docket_group_lag().await.map_err(err)
    }

    pub async fn docket_log_event(&self, task_id: crate::task::TaskId, event_type: &str, detail: &str) -> Result<String> {
        self.inner.docket_log_event(to(&task_id)?, event_type, detail).await.map_err(err)
    }
}
