//! The [`Channel`]'s docket: tinytown's stream-based task dispatch on
//! `tt:{town}:docket:tasks` (consumer group `workers`) and its lifecycle
//! log `tt:{town}:docket:events`, each call one plain stream command, so
//! any Redis tool reads the same entries.

use std::collections::HashMap;

use chrono::Utc;
use redis::aio::ConnectionLike;

use super::channel::Channel;
use super::ids::TaskId;
use super::stream;
use crate::call::Call;
use crate::error::Result;

/// The docket's consumer group.
///
/// ```
/// assert_eq!(dreamtown_client::town::DOCKET_GROUP, "workers");
/// ```
pub const DOCKET_GROUP: &str = "workers";

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Channel<C> {
    /// Create the docket stream and its `workers` group if missing, reading
    /// only entries added from now on (`XGROUP CREATE <key> workers $ MKSTREAM`);
    /// a group that already exists (`BUSYGROUP`) is fine.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// channel.docket_ensure_group().await?;
    /// channel.docket_ensure_group().await?; // again: still fine
    /// # Ok(()) }
    /// ```
    pub async fn docket_ensure_group(&self) -> Result<()> {
        let call = Call::new("XGROUP")
            .arg("CREATE")
            .arg(self.keys().docket_tasks())
            .arg(DOCKET_GROUP)
            .arg("$")
            .arg("MKSTREAM");
        match self.run(call).await {
            Ok(reply) => reply.ok(),
            Err(error) if error.server_code() == Some("BUSYGROUP") => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Add a task to the docket (`XADD <key> * task_id .. type task_assign
    /// message .. priority .. from .. to .. timestamp ..`, the entry format
    /// of tinytown, with this client's clock in `timestamp`). The entry id.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{Channel, TaskId};
    /// # async fn demo(channel: Channel, task: TaskId) -> dreamtown_client::Result<()> {
    /// let entry = channel.docket_push(task, "Write the parser", "normal", "conductor", "backend").await?;
    /// # Ok(()) }
    /// ```
    pub async fn docket_push(
        &self,
        task_id: TaskId,
        description: &str,
        priority: &str,
        from: &str,
        to: &str,
    ) -> Result<String> {
        let call = Call::new("XADD")
            .arg(self.keys().docket_tasks())
            .arg("*")
            .arg("task_id")
            .arg(task_id.to_string())
            .arg("type")
            .arg("task_assign")
            .arg("message")
            .arg(description)
            .arg("priority")
            .arg(priority)
            .arg("from")
            .arg(from)
            .arg("to")
            .arg(to)
            .arg("timestamp")
            .arg(Utc::now().to_rfc3339());
        Ok(self.run(call).await?.word()?.to_owned())
    }

    /// Read the next undelivered docket entry as consumer `consumer_name`,
    /// waiting up to `block_ms` milliseconds (0 waits forever):
    /// `XREADGROUP GROUP workers <consumer> COUNT 1 BLOCK <ms> STREAMS <key> >`.
    /// `(entry id, fields)`, or `None` when nothing came. The entry stays
    /// pending for the group until [`docket_ack`](Self::docket_ack).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// if let Some((entry, fields)) = channel.docket_read("backend", 5_000).await? {
    ///     println!("task {:?}: {:?}", fields.get("task_id"), fields.get("message"));
    ///     channel.docket_ack(&entry).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn docket_read(
        &self,
        consumer_name: &str,
        block_ms: usize,
    ) -> Result<Option<(String, HashMap<String, String>)>> {
        let call = Call::new("XREADGROUP")
            .arg("GROUP")
            .arg(DOCKET_GROUP)
            .arg(consumer_name)
            .arg("COUNT")
            .arg(1)
            .arg("BLOCK")
            .arg(block_ms)
            .arg("STREAMS")
            .arg(self.keys().docket_tasks())
            .arg(">");
        let reply = self.run(call).await?;
        let mut entries = stream::read_entries(reply.value()).ok_or_else(|| reply.unexpected())?;
        if entries.len() > 1 {
            return Err(reply.unexpected());
        }
        Ok(entries.pop().map(|entry| {
            let fields = entry
                .fields
                .iter()
                .map(|(field, value)| (field.clone(), String::from_utf8_lossy(value).into_owned()))
                .collect();
            (entry.id, fields)
        }))
    }

    /// Acknowledge a docket entry as processed, removing it from the group's
    /// pending entries (`XACK <key> workers <id>`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel, entry: String) -> dreamtown_client::Result<()> {
    /// channel.docket_ack(&entry).await?;
    /// # Ok(()) }
    /// ```
    pub async fn docket_ack(&self, entry_id: &str) -> Result<()> {
        let call = Call::new("XACK").arg(self.keys().docket_tasks()).arg(DOCKET_GROUP).arg(entry_id);
        self.run(call).await?.count().map(drop)
    }

    /// How many entries the docket stream holds, acknowledged or not (`XLEN`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// println!("{} entries", channel.docket_len().await?);
    /// # Ok(()) }
    /// ```
    pub async fn docket_len(&self) -> Result<usize> {
        self.run(Call::new("XLEN").arg(self.keys().docket_tasks())).await?.length()
    }

    /// How many docket entries were delivered and not yet acknowledged
    /// (`XPENDING <key> workers`). A missing group is [`Error::Server`](crate::Error::Server)
    /// (`NOGROUP`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// println!("{} in flight", channel.docket_pending_count().await?);
    /// # Ok(()) }
    /// ```
    pub async fn docket_pending_count(&self) -> Result<usize> {
        let call = Call::new("XPENDING").arg(self.keys().docket_tasks()).arg(DOCKET_GROUP);
        let reply = self.run(call).await?;
        stream::pending_count(reply.value())
            .and_then(|count| usize::try_from(count).ok())
            .ok_or_else(|| reply.unexpected())
    }

    /// How many docket entries the `workers` group has not read yet, from
    /// `XINFO GROUPS` (unlike [`docket_len`](Self::docket_len), this leaves
    /// out entries already handled). `None` when that is unknowable: no
    /// docket stream, no `workers` group, or no numeric `lag` (after
    /// deletions or trimming); fall back to `docket_len` then.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// let unread = match channel.docket_group_lag().await? {
    ///     Some(lag) => lag,
    ///     None => channel.docket_len().await?,
    /// };
    /// # Ok(()) }
    /// ```
    pub async fn docket_group_lag(&self) -> Result<Option<usize>> {
        let call = Call::new("XINFO").arg("GROUPS").arg(self.keys().docket_tasks());
        let reply = match self.run(call).await {
            Ok(reply) => reply,
            // No stream, so no group either.
            Err(error) if error.server_code() == Some("ERR") && error.to_string().contains("no such key") => {
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        let lag = stream::group_lag(reply.value(), DOCKET_GROUP).ok_or_else(|| reply.unexpected())?;
        Ok(lag.and_then(|lag| usize::try_from(lag).ok()))
    }

    /// Log a task lifecycle event (`started`, `completed`, `failed` ...) to
    /// `tt:{town}:docket:events` (`XADD <key> * task_id .. event .. detail ..
    /// timestamp ..`). The entry id.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{Channel, TaskId};
    /// # async fn demo(channel: Channel, task: TaskId) -> dreamtown_client::Result<()> {
    /// channel.docket_log_event(task, "started", "picked up by backend").await?;
    /// # Ok(()) }
    /// ```
    pub async fn docket_log_event(&self, task_id: TaskId, event_type: &str, detail: &str) -> Result<String> {
        let call = Call::new("XADD")
            .arg(self.keys().docket_events())
            .arg("*")
            .arg("task_id")
            .arg(task_id.to_string())
            .arg("event")
            .arg(event_type)
            .arg("detail")
            .arg(detail)
            .arg("timestamp")
            .arg(Utc::now().to_rfc3339());
        Ok(self.run(call).await?.word()?.to_owned())
    }
}
