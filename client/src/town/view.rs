//! [`Town`]: one town's agent channel as a view of a
//! [`Dreamtown`](crate::Dreamtown) handle. Every call is one `TOWN.*`
//! command, built from its request type
//! (`dreamtown_protocol::request::town`); what a command may leave out is a
//! builder method, never a positional `bool` or `None`; outcomes are the
//! client's own types. The town's records, backlog, activity and stop
//! flags are small sub-views (`town.agent(id)`, `town.backlog()` ...) in
//! `containers.rs`. The seed-shaped [`Channel`] stays beside it
//! ([`Town::channel`]).

use std::fmt::Display;
use std::time::Duration;

use dreamtown_protocol::reply::town as reply;
use dreamtown_protocol::request::options::lease_from_duration;
use dreamtown_protocol::request::town as request;
use redis::aio::{ConnectionLike, MultiplexedConnection};

use super::agent::Agent;
use super::channel::{Channel, MailboxLengths};
use super::delivery::Delivery;
use super::ids::AgentId;
use super::message::Message;
use super::task::Task;
use crate::call::{Call, Reply, timeout_ms};
use crate::error::{Error, Result};
use crate::lease::{self, Held};

/// One town's agent channel: `dreamtown.town("acme")`.
///
/// Receivers are `&self`, as on every view of a [`Dreamtown`](crate::Dreamtown):
/// each call clones the connection handle, so a view can be shared between
/// tasks. A blocking [`recv`](Self::recv) holds its connection on the
/// server while it waits: give a receiving agent a handle of its own, over
/// a connection whose response timeout is longer than the wait
/// ([`Error::ResponseTimeout`]; [`Dreamtown::connect`](crate::Dreamtown::connect)
/// sets none).
///
/// ```no_run
/// use std::time::Duration;
/// use dreamtown_client::Dreamtown;
/// use dreamtown_client::town::{Agent, AgentType, Message, MessageType};
///
/// # async fn demo() -> dreamtown_client::Result<()> {
/// let dreamtown = Dreamtown::connect("redis://127.0.0.1:6390/").await?;
/// let town = dreamtown.town("acme");
/// let me = Agent::new("backend", "claude", AgentType::Worker);
/// town.agent(me.id).set(&me).await?;
/// town.requeue(me.id).await?; // what a previous run left unacknowledged
///
/// let task = MessageType::Task { description: "Write the parser".into() };
/// town.send(&Message::new(me.id, me.id, task)).send().await?;
/// let wait = Duration::from_secs(1);
/// let mut batch = town.recv(me.id).block(wait).reliable().send().await?.into_messages();
/// while let Some(delivery) = batch.pop() {
///     // ... act on delivery.message() ...
///     let Some(done) = delivery.ack_id() else { break };
///     batch = town.recv(me.id).block(wait).reliable().ack(&done).send().await?.1.into_messages();
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Town<C = MultiplexedConnection> {
    conn: C,
    town: String,
    tryagain_deadline: Duration,
}

/// What a receive took ([`Recv::send`]).
///
/// ```
/// use dreamtown_client::town::Received;
/// assert!(Received::TimedOut.into_messages().is_empty());
/// assert!(!Received::Taken(vec![]).timed_out());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Received {
    /// The messages taken, urgent inbox first, head first; empty when there
    /// was nothing and the receive did not block. Every stored message
    /// comes back, one the client cannot parse as [`Delivery::Unparsed`].
    Taken(Vec<Delivery>),
    /// A [`block`](Recv::block)ing receive waited its whole timeout.
    TimedOut,
}

impl Received {
    /// The messages taken (none when the wait ran out).
    pub fn into_messages(self) -> Vec<Delivery> {
        match self {
            Self::Taken(messages) => messages,
            Self::TimedOut => Vec::new(),
        }
    }

    /// Whether a blocking receive's wait ran out.
    pub fn timed_out(&self) -> bool {
        matches!(self, Self::TimedOut)
    }

    fn of(received: reply::Recv<Vec<u8>>) -> Self {
        match received {
            reply::Recv::Messages(payloads) => Self::Taken(payloads.into_iter().map(Delivery::from_payload).collect()),
            reply::Recv::TimedOut => Self::TimedOut,
        }
    }
}

/// `TOWN.STATS`: a town's or an agent's statistics, field by field, as
/// the server names them (`dreamtown_protocol::stats::town` lists them:
/// `agents`, `backlog`, ... for a town; `inbox`, `pending`, `leased`,
/// `next_message_age_ms` ... for an agent; then the totals).
///
/// ```
/// use dreamtown_client::town::TownStats;
/// let stats = TownStats::default();
/// assert_eq!(stats.get("agents"), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TownStats {
    /// Every field in the server's order; `None` where the server says nil
    /// (an age of an empty list).
    pub fields: Vec<(String, Option<i64>)>,
}

impl TownStats {
    /// The value of `field`: `None` when absent or nil.
    pub fn get(&self, field: &str) -> Option<i64> {
        self.fields.iter().find(|(name, _)| name == field).and_then(|(_, value)| *value)
    }

    pub(super) fn of(reply: &Reply) -> Result<Self> {
        let stats: reply::Stats = reply.decode()?;
        Ok(Self { fields: stats.fields.into_iter().map(|(name, value)| (name.into_owned(), value)).collect() })
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Town<C> {
    pub(crate) fn new(conn: C, town: String, tryagain_deadline: Duration) -> Self {
        Self { conn, town, tryagain_deadline }
    }

    /// The town.
    pub fn name(&self) -> &str {
        &self.town
    }

    /// The tenant this view serves (the town), named as on every view:
    /// `dreamtown.dreams(t).tenant()` and `dreamtown.town(t).tenant()` are `t`.
    pub fn tenant(&self) -> &str {
        &self.town
    }

    /// How long a call refused with `TRYAGAIN` is sent again (the handle's).
    pub fn tryagain_deadline(&self) -> Duration {
        self.tryagain_deadline
    }

    /// The connection, for commands of your own (clone it to send).
    pub fn connection(&self) -> &C {
        &self.conn
    }

    /// The seed-shaped (tinytown) [`Channel`] of the same town over the same
    /// connection, for code written against tinytown's API, and for the
    /// docket and event streams (plain stream commands, not `TOWN.*`).
    ///
    /// ```no_run
    /// # async fn demo(dreamtown: dreamtown_client::Dreamtown) -> dreamtown_client::Result<()> {
    /// let channel = dreamtown.town("acme").channel();
    /// channel.docket_ensure_group().await?;
    /// # Ok(()) }
    /// ```
    pub fn channel(&self) -> Channel<C> {
        Channel::new(self.conn.clone(), self.town.clone()).with_tryagain_deadline(self.tryagain_deadline)
    }

    pub(super) async fn call<'a, R: dreamtown_protocol::request::Request<'a>>(&self, request: &R) -> Result<Reply> {
        Call::request(request).send_routed(&mut self.conn.clone(), self.tryagain_deadline).await
    }

    /// Send `message` to its `to` agent (`TOWN.SEND`): a [`SendMessage`]
    /// to make [`urgent`](SendMessage::urgent) or [`send`](SendMessage::send)
    /// as it is (`High`/`Urgent` priorities at the inbox's head,
    /// `Normal`/`Low` at its tail). Wakes a receiver blocked on that agent.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Message, MessageType};
    /// # async fn demo(town: dreamtown_client::town::Town, worker: AgentId) -> dreamtown_client::Result<()> {
    /// let stop = Message::new(AgentId::supervisor(), worker, MessageType::Shutdown);
    /// let waiting = town.send(&stop).urgent().send().await?;
    /// # Ok(()) }
    /// ```
    pub fn send<'a>(&'a self, message: &'a Message) -> SendMessage<'a, C> {
        SendMessage { town: self, message, urgent: false }
    }

    /// Receive `agent`'s messages (`TOWN.RECV`): a [`Recv`] taking one
    /// message, urgent inbox first, without waiting, unless told otherwise
    /// ([`block`](Recv::block), [`count`](Recv::count), [`urgent_only`](Recv::urgent_only),
    /// [`reliable`](Recv::reliable), [`lease`](Recv::lease), [`ack`](Recv::ack)).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::town::{AgentId, Received};
    /// # async fn demo(town: dreamtown_client::town::Town, me: AgentId) -> dreamtown_client::Result<()> {
    /// match town.recv(me).block(Duration::from_secs(30)).count(10).send().await? {
    ///     Received::Taken(messages) => println!("{} message(s)", messages.len()),
    ///     Received::TimedOut => println!("nothing for 30 s"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn recv(&self, agent: AgentId) -> Recv<'_, C> {
        Recv {
            town: self,
            agent: agent.to_string(),
            block: None,
            count: None,
            urgent: false,
            reliable: false,
            lease: None,
        }
    }

    /// Acknowledge messages received [`reliable`](Recv::reliable)y: remove
    /// the first pending message of each id, in order (`TOWN.ACK`). How many
    /// were pending. No ids, no call (0). Takes [`MessageId`](super::MessageId)s
    /// or the text of [`Delivery::ack_id`].
    ///
    /// ```no_run
    /// # use dreamtown_client::town::AgentId;
    /// # async fn demo(town: dreamtown_client::town::Town, me: AgentId) -> dreamtown_client::Result<()> {
    /// let batch = town.recv(me).count(10).reliable().send().await?.into_messages();
    /// let done: Vec<String> = batch.iter().filter_map(|delivery| delivery.ack_id()).collect();
    /// assert_eq!(town.ack(me, &done).await?, done.len());
    /// # Ok(()) }
    /// ```
    pub async fn ack<I>(&self, agent: AgentId, message_ids: I) -> Result<usize>
    where
        I: IntoIterator,
        I::Item: Display,
    {
        let message_ids: Vec<String> = message_ids.into_iter().map(|id| id.to_string()).collect();
        if message_ids.is_empty() {
            return Ok(0);
        }
        let agent = agent.to_string();
        let ids: Vec<&[u8]> = message_ids.iter().map(String::as_bytes).collect();
        self.call(&request::Ack { town: &self.town, agent: &agent, ids: &ids })
            .await?
            .decode::<reply::Ack>()
            .map(length)
    }

    /// Hand every unacknowledged pending message of `agent` back to the head
    /// of its inbox, in the order received (`TOWN.REQUEUE`): what an agent
    /// does when it restarts. How many moved.
    pub async fn requeue(&self, agent: AgentId) -> Result<usize> {
        let agent = agent.to_string();
        self.call(&request::Requeue { town: &self.town, agent: &agent }).await?.decode::<reply::Requeue>().map(length)
    }

    /// Push the lease of a message received with [`lease`](Recv::lease) out
    /// to now + `lease` (`TOWN.EXTEND`); false when it is leased to no one
    /// any more (it went back to the inbox).
    pub async fn extend(&self, agent: AgentId, message_id: impl Display, lease: Duration) -> Result<bool> {
        let (agent, message_id) = (agent.to_string(), message_id.to_string());
        let request = request::Extend {
            town: &self.town,
            agent: &agent,
            message_id: message_id.as_bytes(),
            lease: lease_from_duration(lease)?,
        };
        self.call(&request).await?.decode::<reply::Extend>().map(|reply::Flag(extended)| extended)
    }

    /// Run `work` while keeping a leased message's lease alive: extended by
    /// `lease` every third of it until `work` finishes. If an extension finds
    /// the lease lost, renewing stops and the work still runs to its end;
    /// [`Held::lease_kept`] tells.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::town::AgentId;
    /// # async fn demo(town: dreamtown_client::town::Town, me: AgentId) -> dreamtown_client::Result<()> {
    /// let lease = Duration::from_secs(30);
    /// for delivery in town.recv(me).lease(lease).send().await?.into_messages() {
    ///     let Some(id) = delivery.ack_id() else { continue };
    ///     if town.hold(me, &id, lease, async { /* work */ }).await?.lease_kept {
    ///         town.ack(me, [&id]).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn hold<F: std::future::Future>(
        &self,
        agent: AgentId,
        message_id: impl Display,
        lease: Duration,
        work: F,
    ) -> Result<Held<F::Output>> {
        let message_id = message_id.to_string();
        lease::hold(lease, work, || self.extend(agent, &message_id, lease)).await
    }

    /// Look at the head of `agent`'s inbox without taking anything
    /// (`TOWN.PEEK`): a [`Peek`] of one message unless [`count`](Peek::count)
    /// says more.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::AgentId;
    /// # async fn demo(town: dreamtown_client::town::Town, me: AgentId) -> dreamtown_client::Result<()> {
    /// for delivery in town.peek(me).count(10).send().await? {
    ///     println!("{}", String::from_utf8_lossy(delivery.payload()));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn peek(&self, agent: AgentId) -> Peek<'_, C> {
        Peek { town: self, agent, count: 1 }
    }

    /// The lengths of `agent`'s inbox, urgent inbox and pending list, in one
    /// consistent read (`TOWN.LEN`).
    pub async fn lengths(&self, agent: AgentId) -> Result<MailboxLengths> {
        let agent = agent.to_string();
        let reply = self.call(&request::Len { town: &self.town, agent: &agent }).await?;
        let reply::Len { inbox, urgent, pending } = reply.decode()?;
        let size = |n: u64| length(reply::Count(n));
        Ok(MailboxLengths { inbox: size(inbox), urgent: size(urgent), pending: size(pending) })
    }

    /// Move all of a dead agent's mail (urgent, pending, inbox) to `to`, each
    /// message readdressed, in one atomic step (`TOWN.RECLAIM`). How many
    /// moved. Reclaiming an agent onto itself is refused ([`Error::Server`]).
    pub async fn reclaim(&self, from: AgentId, to: AgentId) -> Result<usize> {
        let (from, to) = (from.to_string(), to.to_string());
        self.call(&request::Reclaim { town: &self.town, from: &from, to: &to })
            .await?
            .decode::<reply::Reclaim>()
            .map(length)
    }

    /// Publish `message` to every subscriber of the town's broadcast channel
    /// `tt:{town}:broadcast` (`TOWN.BROADCAST`); how many received it (as
    /// `PUBLISH`). An ACL user needs that channel (`&tt:{town}:*`).
    pub async fn broadcast(&self, message: &Message) -> Result<usize> {
        let json = serde_json::to_vec(message).map_err(Error::Encode)?;
        self.call(&request::Broadcast { town: &self.town, message: &json })
            .await?
            .decode::<reply::Broadcast>()
            .map(length)
    }

    /// Delete the town's state, found through the module's indexes
    /// (`TOWN.RESET`): a [`Reset`] of everything unless
    /// [`agents_only`](Reset::agents_only).
    ///
    /// ```no_run
    /// # async fn demo(town: dreamtown_client::town::Town) -> dreamtown_client::Result<()> {
    /// let deleted = town.reset().agents_only().send().await?;
    /// # Ok(()) }
    /// ```
    pub fn reset(&self) -> Reset<'_, C> {
        Reset { town: self, agents_only: false }
    }

    /// The town's statistics (`TOWN.STATS <town>`): its indexes, backlog
    /// and totals. An agent's: [`town.agent(id).stats()`](super::AgentRecord::stats).
    ///
    /// ```no_run
    /// # async fn demo(town: dreamtown_client::town::Town) -> dreamtown_client::Result<()> {
    /// println!("{:?} agents", town.stats().await?.get("agents"));
    /// # Ok(()) }
    /// ```
    pub async fn stats(&self) -> Result<TownStats> {
        TownStats::of(&self.call(&request::Stats { town: &self.town, agent: None }).await?)
    }

    /// Every agent of the town, ordered by id (`TOWN.AGENT LIST`). A record
    /// that does not parse is left out (and left alone).
    pub async fn agents(&self) -> Result<Vec<Agent>> {
        let reply = self.call(&request::AgentList { town: &self.town }).await?;
        let records = records(&reply, reply.decode::<reply::AgentList<Vec<u8>>>()?)?;
        Ok(records.iter().filter_map(|fields| Agent::from_fields(fields).ok()).collect())
    }

    /// The agent named `name` (the lowest id if several), or `None`
    /// (`TOWN.AGENT BYNAME`).
    pub async fn agent_named(&self, name: &str) -> Result<Option<Agent>> {
        let reply = self.call(&request::AgentByName { town: &self.town, name: name.as_bytes() }).await?;
        super::containers::optional_record(&reply, Agent::from_fields)
    }

    /// Every task of the town, ordered by id (`TOWN.TASK LIST`). A record
    /// that does not parse is left out.
    pub async fn tasks(&self) -> Result<Vec<Task>> {
        let reply = self.call(&request::TaskList { town: &self.town }).await?;
        let records = records(&reply, reply.decode::<reply::TaskList<Vec<u8>>>()?)?;
        Ok(records.iter().filter_map(|fields| Task::from_fields(fields).ok()).collect())
    }
}

/// `TOWN.SEND`, from [`Town::send`].
#[must_use = "a SendMessage does nothing until sent"]
pub struct SendMessage<'a, C> {
    town: &'a Town<C>,
    message: &'a Message,
    urgent: bool,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> SendMessage<'_, C> {
    /// Into the urgent inbox, read before the inbox (`URGENT`).
    pub fn urgent(mut self) -> Self {
        self.urgent = true;
        self
    }

    /// Send it: the length of the list it went to (the inbox, or the urgent
    /// inbox).
    pub async fn send(self) -> Result<usize> {
        let json = serde_json::to_vec(self.message).map_err(Error::Encode)?;
        let request = request::Send { town: &self.town.town, message: &json, urgent: self.urgent };
        self.town.call(&request).await?.decode::<reply::Send>().map(length)
    }
}

/// `TOWN.RECV`, from [`Town::recv`].
#[must_use = "a Recv does nothing until sent"]
pub struct Recv<'a, C> {
    town: &'a Town<C>,
    agent: String,
    block: Option<Duration>,
    count: Option<u64>,
    urgent: bool,
    reliable: bool,
    lease: Option<Duration>,
}

impl<'a, C: ConnectionLike + Clone + Send + Sync + 'static> Recv<'a, C> {
    /// Wait up to `timeout` for a message when there is none
    /// (`BLOCK <secs>`; `Duration::ZERO` waits forever): a send to the
    /// agent wakes it. A wait that runs out is [`Received::TimedOut`].
    pub fn block(mut self, timeout: Duration) -> Self {
        self.block = Some(timeout);
        self
    }

    /// Take up to `count` messages (`COUNT <n>`; 0 counts as 1).
    pub fn count(mut self, count: usize) -> Self {
        self.count = Some((count as u64).clamp(1, i64::MAX as u64));
        self
    }

    /// Take up to `count` messages, sent as given (`COUNT <n>`: the server
    /// refuses 0 and more than `i64::MAX`): the seed-shaped
    /// [`Channel`]'s reliable receives, which never clamped.
    pub(super) fn count_as_given(mut self, count: u64) -> Self {
        self.count = Some(count);
        self
    }

    /// Read only the urgent inbox, and all of it unless [`count`](Self::count)
    /// says otherwise (`URGENT`).
    pub fn urgent_only(mut self) -> Self {
        self.urgent = true;
        self
    }

    /// Keep every message taken in the agent's pending list until
    /// [`Town::ack`] (`RELIABLE`); [`Town::requeue`] hands unacknowledged
    /// ones back.
    pub fn reliable(mut self) -> Self {
        self.reliable = true;
        self
    }

    /// Receive reliably and lease each message for `lease`
    /// (`RELIABLE LEASE <secs>`): unless acknowledged or
    /// [`extend`](Town::extend)ed in time, the server puts it back at the
    /// head of the inbox by itself.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.reliable = true;
        self.lease = Some(lease);
        self
    }

    /// The agent loop's one round trip: acknowledge `done` (as
    /// [`Town::ack`] would), then receive reliably as this call says
    /// (`RELIABLE ... ACK <message-id>`). The acknowledgement is applied
    /// before the server waits: a timeout or a lost connection while
    /// waiting never undoes it.
    pub fn ack(mut self, done: impl Display) -> AckAndRecv<'a, C> {
        self.reliable = true;
        AckAndRecv { recv: self, done: done.to_string() }
    }

    /// The request; a lease the module would refuse is refused here, in
    /// its words.
    fn request<'r>(&'r self, ack: Option<&'r [u8]>) -> Result<request::Recv<'r>> {
        Ok(request::Recv {
            block_ms: self.block.map(timeout_ms),
            count: self.count,
            urgent: self.urgent,
            reliable: self.reliable,
            lease: self.lease.map(lease_from_duration).transpose()?,
            ack,
            ..request::Recv::new(&self.town.town, &self.agent)
        })
    }

    /// Send it: what was taken.
    pub async fn send(self) -> Result<Received> {
        self.town.call(&self.request(None)?).await?.decode::<reply::Recv<Vec<u8>>>().map(Received::of)
    }
}

/// `TOWN.RECV ... RELIABLE ACK <id>`, from [`Recv::ack`].
#[must_use = "an AckAndRecv does nothing until sent"]
pub struct AckAndRecv<'a, C> {
    recv: Recv<'a, C>,
    done: String,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> AckAndRecv<'_, C> {
    /// As [`Recv::block`].
    pub fn block(mut self, timeout: Duration) -> Self {
        self.recv = self.recv.block(timeout);
        self
    }

    /// As [`Recv::count`].
    pub fn count(mut self, count: usize) -> Self {
        self.recv = self.recv.count(count);
        self
    }

    /// As [`Recv::lease`].
    pub fn lease(mut self, lease: Duration) -> Self {
        self.recv = self.recv.lease(lease);
        self
    }

    /// Send it: whether `done` was pending (and is now acknowledged), and
    /// what was taken.
    pub async fn send(self) -> Result<(bool, Received)> {
        let request = self.recv.request(Some(self.done.as_bytes()))?;
        let reply::AckThenRecv { acked: reply::Flag(acked), received } =
            self.recv.town.call(&request).await?.decode()?;
        Ok((acked, Received::of(received)))
    }
}

/// `TOWN.PEEK`, from [`Town::peek`].
#[must_use = "a Peek does nothing until sent"]
pub struct Peek<'a, C> {
    town: &'a Town<C>,
    agent: AgentId,
    count: usize,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Peek<'_, C> {
    /// Look at up to `count` messages (0: none).
    pub fn count(mut self, count: usize) -> Self {
        self.count = count;
        self
    }

    /// Send it: the messages at the inbox's head, head first.
    pub async fn send(self) -> Result<Vec<Delivery>> {
        let agent = self.agent.to_string();
        let count = (self.count as u64).min(i64::MAX as u64);
        let reply = self.town.call(&request::Peek { town: &self.town.town, agent: &agent, count }).await?;
        let reply::Bulks { items } = reply.decode::<reply::Peek<Vec<u8>>>()?;
        Ok(items.into_iter().map(Delivery::from_payload).collect())
    }
}

/// `TOWN.RESET`, from [`Town::reset`].
#[must_use = "a Reset does nothing until sent"]
pub struct Reset<'a, C> {
    town: &'a Town<C>,
    agents_only: bool,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Reset<'_, C> {
    /// Delete only the agents' state (records, inboxes, pending lists,
    /// activity, stop flags, agent indexes), keeping tasks, the backlog and
    /// the streams (`AGENTS`).
    pub fn agents_only(mut self) -> Self {
        self.agents_only = true;
        self
    }

    /// Send it: how many keys were deleted, the index keys included.
    pub async fn send(self) -> Result<usize> {
        let request = request::Reset { town: &self.town.town, agents_only: self.agents_only };
        self.town.call(&request).await?.decode::<reply::Reset>().map(length)
    }
}

/// A count as a length (past `usize::MAX`, which no list reaches, `usize::MAX`).
pub(super) fn length(reply::Count(count): reply::Count) -> usize {
    usize::try_from(count).unwrap_or(usize::MAX)
}

/// Records with their field names as text.
fn records(reply: &Reply, records: reply::Records<Vec<u8>>) -> Result<Vec<super::containers::Fields>> {
    records.records.into_iter().map(|record| super::containers::record_fields(reply, record)).collect()
}
