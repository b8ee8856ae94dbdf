//! [`Channel`]: one town's agent channel with the public API of tinytown's
//! `Channel`, each call one `TOWN.*` command (or one plain stream command
//! for the docket and the event stream). Every `TOWN.*` call is a thin
//! layer over the native [`Town`] view: it only reshapes arguments and
//! outcomes to tinytown's; the plain stream commands are sent from here
//! (`Channel::run`). This file holds the channel and its messages:
//! sending, receiving (plain, urgent, blocking, reliable), acknowledging,
//! requeueing, reclaiming and broadcasting.

use std::fmt::Display;
use std::time::Duration;

use dreamtown_protocol::keyspace::town::TownKeys;
use redis::aio::{ConnectionLike, MultiplexedConnection};

use super::delivery::Delivery;
use super::ids::AgentId;
use super::message::Message;
use super::view::{Received, Town};
use crate::call::{Call, Reply};
use crate::error::{Error, Result};
use crate::retry::DEFAULT_TRYAGAIN_DEADLINE;

/// One town's agent channel on a server with the dreamtown module, over any
/// async connection of the `redis` crate that can be cloned: a
/// [`MultiplexedConnection`], a [`ConnectionManager`](redis::aio::ConnectionManager)
/// (tinytown's) or a [cluster connection](redis::cluster_async::ClusterConnection).
/// Every key of the town shares one hash slot, so in a cluster each call
/// goes to the node that owns the town.
///
/// The methods are tinytown's (`Channel::new(conn, town)`, `send`,
/// `receive`, `set_agent_state`, `backlog_pop`, `docket_read`, ...), with
/// `&self` receivers like tinytown's: each call clones the connection
/// handle. Each sends exactly one command and the server does the rest
/// atomically; where tinytown needed several round trips (a reclaim, a
/// listing, a reset) the module does it in one.
///
/// Blocking calls ([`receive`](Self::receive), [`receive_reliable`](Self::receive_reliable)
/// with a timeout, [`docket_read`](Self::docket_read)) hold a connection
/// while they wait, and a multiplexed connection answers in order: give a
/// receiving agent its own connection, and one whose response timeout is
/// longer than the wait (or none; the `redis` crate's default is 500 ms, see
/// [`Error::ResponseTimeout`]).
///
/// ```no_run
/// use std::time::Duration;
/// use dreamtown_client::town::{AgentId, Channel, Message, MessageType};
///
/// # async fn demo() -> dreamtown_client::Result<()> {
/// let client = redis::Client::open("redis://127.0.0.1:6390/")?;
/// let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
/// let conn = client.get_multiplexed_async_connection_with_config(&config).await?;
/// let channel = Channel::new(conn, "acme");
///
/// let worker = AgentId::new();
/// let task = MessageType::Task { description: "Write the parser".into() };
/// channel.send(&Message::new(AgentId::supervisor(), worker, task)).await?;
/// if let Some(message) = channel.receive(worker, Duration::from_secs(5)).await? {
///     println!("{:?} from {}", message.msg_type, message.from);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Channel<C = MultiplexedConnection> {
    conn: C,
    town: String,
    keys: TownKeys,
    /// How long a call refused with `TRYAGAIN` is sent again (`crate::retry`).
    tryagain_deadline: Duration,
}

/// The lengths of an agent's three lists (`TOWN.LEN`).
///
/// ```
/// use dreamtown_client::town::MailboxLengths;
/// let lengths = MailboxLengths { inbox: 2, urgent: 1, pending: 1 };
/// assert_eq!(lengths.waiting(), 3);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MailboxLengths {
    /// Messages in the inbox.
    pub inbox: usize,
    /// Messages in the urgent inbox.
    pub urgent: usize,
    /// Messages received reliably and not yet acknowledged.
    pub pending: usize,
}

impl MailboxLengths {
    /// Messages waiting to be received: inbox + urgent inbox.
    ///
    /// ```
    /// assert_eq!(dreamtown_client::town::MailboxLengths::default().waiting(), 0);
    /// ```
    pub fn waiting(&self) -> usize {
        self.inbox.saturating_add(self.urgent)
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Channel<C> {
    /// The channel of town `town_name` over `conn`. Nothing is sent until
    /// the first call; a town name the server refuses (empty, or containing
    /// `{` or `}`) makes every call fail with [`Error::Server`].
    ///
    /// ```no_run
    /// use dreamtown_client::town::Channel;
    /// # async fn demo() -> dreamtown_client::Result<()> {
    /// let nodes = vec!["redis://127.0.0.1:7001/"];
    /// let cluster = redis::cluster::ClusterClient::new(nodes)?.get_async_connection().await?;
    /// let channel = Channel::new(cluster, "acme");
    /// assert_eq!(channel.town_name(), "acme");
    /// # Ok(()) }
    /// ```
    pub fn new(conn: C, town_name: impl Into<String>) -> Self {
        let town = town_name.into();
        Self { keys: TownKeys::new(&town), conn, town, tryagain_deadline: DEFAULT_TRYAGAIN_DEADLINE }
    }

    /// How long a call refused with `TRYAGAIN` (the town's slot is moving
    /// the legacy way; nothing ran) is sent again: [`DEFAULT_TRYAGAIN_DEADLINE`]
    /// says how, and is the default; `Duration::ZERO` returns the first one.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::town::Channel;
    /// # fn demo(conn: redis::aio::MultiplexedConnection) {
    /// let channel = Channel::new(conn, "acme").with_tryagain_deadline(Duration::from_secs(120));
    /// assert_eq!(channel.tryagain_deadline(), Duration::from_secs(120));
    /// # }
    /// ```
    pub fn with_tryagain_deadline(mut self, deadline: Duration) -> Self {
        self.tryagain_deadline = deadline;
        self
    }

    /// How long a call refused with `TRYAGAIN` is sent again.
    pub fn tryagain_deadline(&self) -> Duration {
        self.tryagain_deadline
    }

    /// The town this channel serves.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # fn demo(conn: redis::aio::MultiplexedConnection) {
    /// assert_eq!(Channel::new(conn, "acme").town_name(), "acme");
    /// # }
    /// ```
    pub fn town_name(&self) -> &str {
        &self.town
    }

    /// The tenant this channel serves (the town), named as on every view
    /// of a [`Dreamtown`](crate::Dreamtown) handle.
    pub fn tenant(&self) -> &str {
        &self.town
    }

    /// The connection, for commands of your own.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> redis::RedisResult<()> {
    /// let mut conn = channel.conn().clone();
    /// let pong: String = redis::cmd("PING").query_async(&mut conn).await?;
    /// # Ok(()) }
    /// ```
    pub fn conn(&self) -> &C {
        &self.conn
    }

    /// The names of the town's keys (`tt:{town}:...`), from the wire
    /// protocol's keyspace ([`crate::keyspace::town`]), as the module names them.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # fn demo(channel: Channel) {
    /// assert_eq!(channel.keys().backlog(), "tt:{acme}:backlog");
    /// # }
    /// ```
    pub fn keys(&self) -> &TownKeys {
        &self.keys
    }

    /// The native [`Town`] view of the same town over the same connection
    /// (what every `TOWN.*` call of this channel is a layer over).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::Channel;
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// println!("{:?}", channel.view().stats().await?.get("agents"));
    /// # Ok(()) }
    /// ```
    pub fn view(&self) -> Town<C> {
        Town::new(self.conn.clone(), self.town.clone(), self.tryagain_deadline)
    }

    /// Send `call` (a plain stream command of the docket or the event
    /// stream) over a clone of the connection.
    pub(super) async fn run(&self, call: Call) -> Result<Reply> {
        let mut conn = self.conn.clone();
        call.send_routed(&mut conn, self.tryagain_deadline).await
    }

    /// Send `message` to its recipient's inbox: `High`/`Urgent` at the head,
    /// `Normal`/`Low` at the tail (`TOWN.SEND`). Wakes a receiver blocked on
    /// that agent.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel, Message, MessageType, Priority};
    /// # async fn demo(channel: Channel, worker: AgentId) -> dreamtown_client::Result<()> {
    /// let m = Message::new(AgentId::supervisor(), worker, MessageType::StatusRequest).with_priority(Priority::High);
    /// channel.send(&m).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send(&self, message: &Message) -> Result<()> {
        self.send_to(message, false).await
    }

    /// Send `message` to its recipient's urgent inbox, read before the inbox
    /// (`TOWN.SEND ... URGENT`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel, Message, MessageType};
    /// # async fn demo(channel: Channel, worker: AgentId) -> dreamtown_client::Result<()> {
    /// channel.send_urgent(&Message::new(AgentId::supervisor(), worker, MessageType::Shutdown)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send_urgent(&self, message: &Message) -> Result<()> {
        self.send_to(message, true).await
    }

    async fn send_to(&self, message: &Message, urgent: bool) -> Result<()> {
        let town = self.view();
        let send = town.send(message);
        let send = if urgent { send.urgent() } else { send };
        send.send().await.map(drop)
    }

    /// Take every urgent message of `agent_id`, newest first, without
    /// blocking (`TOWN.RECV ... URGENT`). Messages that are not tinytown
    /// messages come back as [`Delivery::Unparsed`] (tinytown failed on them
    /// and lost the rest).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// for delivery in channel.receive_urgent(me).await? {
    ///     match delivery.message() {
    ///         Some(message) => println!("urgent: {:?}", message.msg_type),
    ///         None => eprintln!("urgent, unreadable: {:?}", String::from_utf8_lossy(delivery.payload())),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn receive_urgent(&self, agent_id: AgentId) -> Result<Vec<Delivery>> {
        Ok(self.view().recv(agent_id).urgent_only().send().await?.into_messages())
    }

    /// How many urgent messages wait for `agent_id` (`TOWN.LEN`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// if channel.urgent_len(me).await? > 0 { /* interrupt */ }
    /// # Ok(()) }
    /// ```
    pub async fn urgent_len(&self, agent_id: AgentId) -> Result<usize> {
        Ok(self.lengths(agent_id).await?.urgent)
    }

    /// How many messages wait in `agent_id`'s inbox (`TOWN.LEN`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// println!("{} in the inbox", channel.inbox_len(me).await?);
    /// # Ok(()) }
    /// ```
    pub async fn inbox_len(&self, agent_id: AgentId) -> Result<usize> {
        Ok(self.lengths(agent_id).await?.inbox)
    }

    /// The lengths of `agent_id`'s inbox, urgent inbox and pending list, in
    /// one consistent read (`TOWN.LEN`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// let lengths = channel.lengths(me).await?;
    /// println!("{} waiting, {} unacknowledged", lengths.waiting(), lengths.pending);
    /// # Ok(()) }
    /// ```
    pub async fn lengths(&self, agent_id: AgentId) -> Result<MailboxLengths> {
        self.view().lengths(agent_id).await
    }

    /// Receive one message for `agent_id`, waiting up to `timeout` for one
    /// to arrive (`Duration::ZERO` waits forever): `TOWN.RECV ... BLOCK`.
    /// `None` when the wait ended without a message. Urgent messages come
    /// first (tinytown's `receive` read only the inbox).
    ///
    /// A received message that is not a tinytown message is
    /// [`Error::UnparsedMessage`], which carries its bytes.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// match channel.receive(me, Duration::from_secs(30)).await? {
    ///     Some(message) => println!("{:?}", message.msg_type),
    ///     None => println!("nothing for 30 s"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn receive(&self, agent_id: AgentId, timeout: Duration) -> Result<Option<Message>> {
        single(self.view().recv(agent_id).block(timeout).send().await?)
    }

    /// Receive one message for `agent_id` if there is one, without waiting
    /// (`TOWN.RECV`); urgent messages first. As [`receive`](Self::receive)
    /// for messages that do not parse.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// while let Some(message) = channel.try_receive(me).await? {
    ///     println!("{:?}", message.msg_type);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_receive(&self, agent_id: AgentId) -> Result<Option<Message>> {
        single(self.view().recv(agent_id).send().await?)
    }

    /// Up to `count` messages from the head of `agent_id`'s inbox, without
    /// removing them (`TOWN.PEEK`). Every stored message comes back; one
    /// that is not a tinytown message as [`Delivery::Unparsed`] (tinytown
    /// skipped those).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// for delivery in channel.peek_inbox(me, 10).await? {
    ///     println!("{}", String::from_utf8_lossy(delivery.payload()));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn peek_inbox(&self, agent_id: AgentId, count: usize) -> Result<Vec<Delivery>> {
        self.view().peek(agent_id).count(count).send().await
    }

    /// Publish `message` to every subscriber of the town's broadcast channel
    /// `tt:{town}:broadcast` (`TOWN.BROADCAST`). An ACL user needs that
    /// channel (`&tt:{town}:*`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel, Message, MessageType};
    /// # async fn demo(channel: Channel) -> dreamtown_client::Result<()> {
    /// let everyone = AgentId::supervisor();
    /// channel.broadcast(&Message::new(AgentId::supervisor(), everyone, MessageType::Shutdown)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn broadcast(&self, message: &Message) -> Result<()> {
        self.view().broadcast(message).await.map(drop)
    }

    /// Take every message of `agent_id`, without waiting: its urgent inbox,
    /// then its inbox, in one `TOWN.RECV ... COUNT`. (tinytown's
    /// `drain_inbox` took only the inbox and skipped messages it could not
    /// parse; here every one comes back, unparsed ones as
    /// [`Delivery::Unparsed`].) To hand a dead agent's mail to another, use
    /// [`reclaim`](Self::reclaim), which does it in one atomic step.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, dead: AgentId) -> dreamtown_client::Result<()> {
    /// let mail = channel.drain_inbox(dead).await?;
    /// println!("{} message(s) taken", mail.len());
    /// # Ok(()) }
    /// ```
    pub async fn drain_inbox(&self, agent_id: AgentId) -> Result<Vec<Delivery>> {
        Ok(self.view().recv(agent_id).count(usize::MAX).send().await?.into_messages())
    }

    /// Send a copy of `message` addressed to `to_agent` (`TOWN.SEND`).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, dead: AgentId, heir: AgentId) -> dreamtown_client::Result<()> {
    /// for delivery in channel.drain_inbox(dead).await? {
    ///     if let Some(message) = delivery.message() {
    ///         channel.move_message_to_inbox(message, heir).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn move_message_to_inbox(&self, message: &Message, to_agent: AgentId) -> Result<()> {
        let mut moved = message.clone();
        moved.to = to_agent;
        self.send(&moved).await
    }

    /// Receive up to `count` (at least 1) messages for `agent_id` (urgent first) and keep
    /// each in its pending list until [`ack_message`](Self::ack_message):
    /// `TOWN.RECV ... COUNT <count> RELIABLE`, with `BLOCK` when `wait` is
    /// given (`Some(Duration::ZERO)` waits forever). Empty when nothing came.
    /// Unparsed messages come back as [`Delivery::Unparsed`] and stay pending
    /// too. `count` is sent as given: 0 is refused ([`Error::Server`]).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// for delivery in channel.receive_reliable(me, 1, Some(Duration::from_secs(5))).await? {
    ///     // ... act on delivery.message() ...
    ///     if let Some(id) = delivery.ack_id() {
    ///         channel.ack_message(me, id).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn receive_reliable(
        &self,
        agent_id: AgentId,
        count: usize,
        wait: Option<Duration>,
    ) -> Result<Vec<Delivery>> {
        let town = self.view();
        let recv = town.recv(agent_id).reliable().count_as_given(count as u64);
        let recv = match wait {
            Some(wait) => recv.block(wait),
            None => recv,
        };
        Ok(recv.send().await?.into_messages())
    }

    /// [`receive_reliable`](Self::receive_reliable), leasing each message
    /// for `lease` (`TOWN.RECV ... RELIABLE LEASE <secs>`): unless
    /// acknowledged or [`extend_message`](Self::extend_message)ed in time,
    /// the server puts it back at the head of the inbox by itself.
    pub async fn receive_leased(
        &self,
        agent_id: AgentId,
        count: usize,
        wait: Option<Duration>,
        lease: Duration,
    ) -> Result<Vec<Delivery>> {
        let town = self.view();
        let recv = town.recv(agent_id).lease(lease).count_as_given(count as u64);
        let recv = match wait {
            Some(wait) => recv.block(wait),
            None => recv,
        };
        Ok(recv.send().await?.into_messages())
    }

    /// Push the lease of a message received with
    /// [`receive_leased`](Self::receive_leased) out to now + `lease`
    /// (`TOWN.EXTEND`); false when it is leased to no one any more.
    pub async fn extend_message(&self, agent_id: AgentId, message_id: impl Display, lease: Duration) -> Result<bool> {
        self.view().extend(agent_id, message_id, lease).await
    }

    /// Run `work` while keeping a leased message's lease alive: extended
    /// by `lease` every third of it until `work` finishes. If an extension
    /// finds the lease lost, renewing stops and the work still runs to its
    /// end; [`Held::lease_kept`](crate::lease::Held) tells.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// let lease = Duration::from_secs(30);
    /// for delivery in channel.receive_leased(me, 1, Some(Duration::from_secs(5)), lease).await? {
    ///     let Some(id) = delivery.ack_id() else { continue };
    ///     let held = channel.hold_lease(me, &id, lease, async { /* work */ }).await?;
    ///     if held.lease_kept {
    ///         channel.ack_message(me, &id).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn hold_lease<F: std::future::Future>(
        &self,
        agent_id: AgentId,
        message_id: impl Display,
        lease: Duration,
        work: F,
    ) -> Result<crate::lease::Held<F::Output>> {
        self.view().hold(agent_id, message_id, lease, work).await
    }

    /// Acknowledge a message received with [`receive_reliable`](Self::receive_reliable):
    /// remove the first pending message whose `id` is `message_id`
    /// (`TOWN.ACK`). Whether one was there. Takes a [`MessageId`](super::MessageId)
    /// or the text of [`Delivery::ack_id`].
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel, Message};
    /// # async fn demo(channel: Channel, me: AgentId, done: Message) -> dreamtown_client::Result<()> {
    /// assert!(channel.ack_message(me, done.id).await?);
    /// assert!(!channel.ack_message(me, done.id).await?, "only once");
    /// # Ok(()) }
    /// ```
    pub async fn ack_message(&self, agent_id: AgentId, message_id: impl Display) -> Result<bool> {
        Ok(self.view().ack(agent_id, [message_id]).await? > 0)
    }

    /// Acknowledge several messages in one call, in order, exactly as one
    /// [`ack_message`](Self::ack_message) per id would (`TOWN.ACK` of
    /// every id, as `XACK` takes them): what an agent that took a batch
    /// with [`receive_reliable`](Self::receive_reliable) sends when it is
    /// done with it. How many were pending and removed. No ids, no call (0).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// let batch = channel.receive_reliable(me, 10, Some(Duration::from_secs(5))).await?;
    /// // ... act on every delivery.message() ...
    /// let done: Vec<String> = batch.iter().filter_map(|delivery| delivery.ack_id()).collect();
    /// assert_eq!(channel.ack_messages(me, &done).await?, done.len());
    /// # Ok(()) }
    /// ```
    pub async fn ack_messages<I>(&self, agent_id: AgentId, message_ids: I) -> Result<usize>
    where
        I: IntoIterator,
        I::Item: Display,
    {
        self.view().ack(agent_id, message_ids).await
    }

    /// The agent loop's one round trip: acknowledge `done` exactly as
    /// [`ack_message`](Self::ack_message) would, then receive reliably as
    /// [`receive_reliable`](Self::receive_reliable) (with `lease`:
    /// [`receive_leased`](Self::receive_leased)) would, in one command
    /// (`TOWN.RECV ... RELIABLE [LEASE <secs>] ACK <message-id>`). Whether
    /// `done` was pending, and the messages received (empty on timeout).
    ///
    /// The acknowledgement is applied before the server waits: a timeout or
    /// a lost connection while waiting never undoes it. An error means
    /// nothing was acknowledged, except one that comes while the call waits
    /// (the town's slot moved): then it stands, and acknowledging again is
    /// harmless (false).
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// let wait = Some(Duration::from_secs(5));
    /// let mut batch = channel.receive_reliable(me, 1, wait).await?;
    /// while let Some(delivery) = batch.pop() {
    ///     // ... act on delivery.message() ...
    ///     let Some(id) = delivery.ack_id() else { break };
    ///     let (acked, next) = channel.ack_and_receive(me, id, 1, wait, None).await?;
    ///     assert!(acked);
    ///     batch = next;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn ack_and_receive(
        &self,
        agent_id: AgentId,
        done: impl Display,
        count: usize,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<(bool, Vec<Delivery>)> {
        let town = self.view();
        let mut recv = town.recv(agent_id).reliable().count_as_given(count as u64);
        if let Some(wait) = wait {
            recv = recv.block(wait);
        }
        if let Some(lease) = lease {
            recv = recv.lease(lease);
        }
        let (acked, received) = recv.ack(done).send().await?;
        Ok((acked, received.into_messages()))
    }

    /// Hand every unacknowledged pending message of `agent_id` back to the
    /// head of its inbox, in the order received (`TOWN.REQUEUE`): call it
    /// when an agent restarts. How many moved.
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, me: AgentId) -> dreamtown_client::Result<()> {
    /// let back = channel.requeue_pending(me).await?;
    /// println!("{back} message(s) to redo");
    /// # Ok(()) }
    /// ```
    pub async fn requeue_pending(&self, agent_id: AgentId) -> Result<usize> {
        self.view().requeue(agent_id).await
    }

    /// Move all of a dead agent's mail (urgent, pending, inbox) to `to_agent`
    /// in one atomic step, as if re-sent, each message readdressed
    /// (`TOWN.RECLAIM`); messages that do not parse move unchanged. How many
    /// moved. Reclaiming an agent onto itself is refused ([`Error::Server`]).
    ///
    /// ```no_run
    /// # use dreamtown_client::town::{AgentId, Channel};
    /// # async fn demo(channel: Channel, dead: AgentId, heir: AgentId) -> dreamtown_client::Result<()> {
    /// let moved = channel.reclaim(dead, heir).await?;
    /// println!("{moved} message(s) now with {heir}");
    /// # Ok(()) }
    /// ```
    pub async fn reclaim(&self, from_agent: AgentId, to_agent: AgentId) -> Result<usize> {
        self.view().reclaim(from_agent, to_agent).await
    }
}

/// The one message of a `TOWN.RECV` without `COUNT`, if any.
fn single(received: Received) -> Result<Option<Message>> {
    let mut received = received.into_messages();
    if received.len() > 1 {
        return Err(Error::UnexpectedReply {
            command: "TOWN.RECV",
            reply: format!("{} messages without COUNT", received.len()),
        });
    }
    received.pop().map(|delivery| delivery.into_message_of("TOWN.RECV")).transpose()
}
