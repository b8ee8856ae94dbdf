//! [`RedisFireQueue`]: one organization's Dreams fire queue, each operation
//! one `DREAMS.*` command, with the public API of the seed's
//! `RedisFireQueue` so that switching is a change of constructor.

use std::time::Duration;

use dreamtown::dreams::fire::FireOutcome;
use dreamtown::dreams::message::{FireMessage, RegionWriteCounters};
use dreamtown::dreams::quiet::QuietHours;
use dreamtown::dreams::region::RegionKey;
use dreamtown::dreams::store::RegionCounters;
use dreamtown::dreams::trigger::Trigger;
use redis::aio::{ConnectionLike, MultiplexedConnection};

use super::outcome::{
    AcknowledgeOutcome, DeliveryFence, DrainRate, DrainResult, LimitChange, OrgLimits, QueueLengths, RecordWriteOutcome,
};
use crate::call::{Call, Reply, timeout_secs};
use crate::error::{Error, Result};
use crate::lease::{Held, renew_period};
use crate::retry::DEFAULT_TRYAGAIN_DEADLINE;

/// One organization's Dreams fire queue on a server with the dreamtown
/// module, over any async connection of the `redis` crate: a
/// [`MultiplexedConnection`], a [`ConnectionManager`](redis::aio::ConnectionManager)
/// or a [cluster connection](redis::cluster_async::ClusterConnection). Every
/// key of the organization shares one hash slot, so in a cluster each call
/// goes to the one node that owns the organization.
///
/// Each method sends exactly one `DREAMS.*` command; the server does the
/// rest atomically. Time is the server's clock.
///
/// A blocking [`drain`](Self::drain) holds its connection for as long as it
/// waits: give a worker its own connection, and one whose response timeout
/// is longer than the drain timeout (the `redis` crate's default for a
/// multiplexed connection or a connection manager is 500 ms; see
/// [`Error::ResponseTimeout`]).
///
/// ```no_run
/// use std::time::Duration;
/// use dreamtown_client::dreams::{DrainResult, DreamsTrigger, QuietHours, RedisFireQueue, RegionKey};
///
/// # async fn demo() -> dreamtown_client::Result<()> {
/// let client = redis::Client::open("redis://127.0.0.1:6390/")?;
/// let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
/// let conn = client.get_multiplexed_async_connection_with_config(&config).await?;
/// let mut queue = RedisFireQueue::new(conn, QuietHours::nightly(), "acme");
///
/// let region = RegionKey::new("acme", "web", 3);
/// queue.record_write(&region, 5, 2, DreamsTrigger::default(), "node-a").await?;
/// if let DrainResult::Ready(fire) = queue.drain(Duration::from_secs(5)).await? {
///     // ... consolidate fire.region ...
///     queue.acknowledge(&fire, true, DreamsTrigger::default(), "node-a").await?;
/// }
/// # Ok(()) }
/// ```
pub struct RedisFireQueue<C = MultiplexedConnection> {
    conn: C,
    org: String,
    /// Per-node quiet hours preference (R-Dr14), sent with every drain.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{QuietHours, RedisFireQueue};
    /// # fn demo(mut queue: RedisFireQueue) -> Result<(), dreamtown_client::dreams::QuietHoursError> {
    /// queue.quiet_hours = "22-06".parse::<QuietHours>()?.with_utc_offset_minutes(60)?;
    /// # Ok(()) }
    /// ```
    pub quiet_hours: QuietHours,
    /// How long a call refused with `TRYAGAIN` is sent again (`crate::retry`).
    tryagain_deadline: Duration,
}

impl<C: ConnectionLike + Send> RedisFireQueue<C> {
    /// The queue of organization `org` over `conn`; drains apply
    /// `quiet_hours`. Nothing is sent until the first call; an organization
    /// name the server refuses (empty, or containing `{` or `}`) makes every
    /// call fail with [`Error::Server`].
    ///
    /// ```no_run
    /// use dreamtown_client::dreams::{QuietHours, RedisFireQueue};
    /// # async fn demo() -> dreamtown_client::Result<()> {
    /// let nodes = vec!["redis://127.0.0.1:7001/"];
    /// let cluster = redis::cluster::ClusterClient::new(nodes)?.get_async_connection().await?;
    /// let queue = RedisFireQueue::new(cluster, QuietHours::none(), "acme");
    /// assert_eq!(queue.org(), "acme");
    /// # Ok(()) }
    /// ```
    pub fn new(conn: C, quiet_hours: QuietHours, org: impl Into<String>) -> Self {
        Self { conn, org: org.into(), quiet_hours, tryagain_deadline: DEFAULT_TRYAGAIN_DEADLINE }
    }

    /// How long a call refused with `TRYAGAIN` (the organization's slot is moving
    /// the legacy way; nothing ran) is sent again: [`DEFAULT_TRYAGAIN_DEADLINE`]
    /// says how, and is the default; `Duration::ZERO` returns the first one.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::dreams::{QuietHours, RedisFireQueue};
    /// # fn demo(conn: redis::aio::MultiplexedConnection) {
    /// let queue = RedisFireQueue::new(conn, QuietHours::none(), "acme")
    ///     .with_tryagain_deadline(Duration::from_secs(120));
    /// assert_eq!(queue.tryagain_deadline(), Duration::from_secs(120));
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

    /// The organization this queue serves.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{QuietHours, RedisFireQueue};
    /// # fn demo(conn: redis::aio::MultiplexedConnection) {
    /// let queue = RedisFireQueue::new(conn, QuietHours::none(), "acme");
    /// assert_eq!(queue.org(), "acme");
    /// # }
    /// ```
    pub fn org(&self) -> &str {
        &self.org
    }

    /// The connection, for commands of your own.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{QuietHours, RedisFireQueue};
    /// # async fn demo(mut queue: RedisFireQueue) -> redis::RedisResult<()> {
    /// let pong: String = redis::cmd("PING").query_async(queue.connection_mut()).await?;
    /// # Ok(()) }
    /// ```
    pub fn connection_mut(&mut self) -> &mut C {
        &mut self.conn
    }

    /// Give the connection back.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{QuietHours, RedisFireQueue};
    /// # fn demo(queue: RedisFireQueue) {
    /// let conn: redis::aio::MultiplexedConnection = queue.into_connection();
    /// # }
    /// ```
    pub fn into_connection(self) -> C {
        self.conn
    }

    /// Queue an explicit fire of `region` unless the queue (ready, deferred
    /// and in flight together) is at its ceiling:
    /// `DREAMS.FIRE <org> <project> <type> NODE <fired_by>`.
    /// Saturation drops the newest fire and leaves existing work untouched.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{FireOutcome, RedisFireQueue, RegionKey};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// let outcome = queue.fire(&RegionKey::new("acme", "web", 3), "node-a").await?;
    /// assert!(matches!(outcome, FireOutcome::Queued | FireOutcome::Dropped));
    /// # Ok(()) }
    /// ```
    pub async fn fire(&mut self, region: &RegionKey, fired_by: &str) -> Result<FireOutcome> {
        self.ensure_region(region)?;
        let reply = region_call("DREAMS.FIRE", region)
            .arg("NODE")
            .arg(fired_by)
            .send(&mut self.conn, self.tryagain_deadline)
            .await?;
        match reply.word()? {
            "queued" => Ok(FireOutcome::Queued),
            "dropped" => Ok(FireOutcome::Dropped),
            _ => Err(reply.unexpected()),
        }
    }

    /// Count `memories` and `edges` written to `region` against its shared
    /// counters and, when `trigger` says it is due, create its one pending
    /// fire: `DREAMS.RECORD ... TRIGGER ...` without `EVENT`, so it is not
    /// deduplicated (the seed's generation-0 path).
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{DreamsTrigger, RecordWriteOutcome, RedisFireQueue, RegionKey};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// let region = RegionKey::new("acme", "web", 3);
    /// match queue.record_write(&region, 1, 4, DreamsTrigger::default(), "node-a").await? {
    ///     RecordWriteOutcome::Queued(counters) => println!("fired at {counters:?}"),
    ///     other => println!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn record_write(
        &mut self,
        region: &RegionKey,
        memories: u32,
        edges: u32,
        trigger: impl Into<Trigger>,
        fired_by: &str,
    ) -> Result<RecordWriteOutcome> {
        self.record(region, memories, edges, trigger.into(), fired_by, None).await
    }

    /// Record one stable durable ingest effect exactly once: a repeat of
    /// `delivery.event_id`, or a generation at or below the region's settled
    /// generation, replies [`RecordWriteOutcome::Accumulated`] and counts
    /// nothing (`DREAMS.RECORD ... EVENT <id> GENERATION <n> TRIGGER ...`).
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{DeliveryFence, DreamsTrigger, RedisFireQueue, RegionKey};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// let region = RegionKey::new("acme", "web", 3);
    /// let fence = DeliveryFence { event_id: "outbox-17", generation: 1 };
    /// queue.record_write_once(&region, 1, 0, DreamsTrigger::default(), "node-a", fence).await?;
    /// // An ambiguous retry of the same effect counts nothing.
    /// queue.record_write_once(&region, 1, 0, DreamsTrigger::default(), "node-a", fence).await?;
    /// # Ok(()) }
    /// ```
    pub async fn record_write_once(
        &mut self,
        region: &RegionKey,
        memories: u32,
        edges: u32,
        trigger: impl Into<Trigger>,
        fired_by: &str,
        delivery: DeliveryFence<'_>,
    ) -> Result<RecordWriteOutcome> {
        check_fence(delivery.event_id, delivery.generation)?;
        self.record(region, memories, edges, trigger.into(), fired_by, Some(delivery)).await
    }

    async fn record(
        &mut self,
        region: &RegionKey,
        memories: u32,
        edges: u32,
        trigger: Trigger,
        fired_by: &str,
        delivery: Option<DeliveryFence<'_>>,
    ) -> Result<RecordWriteOutcome> {
        self.ensure_region(region)?;
        let mut call = region_call("DREAMS.RECORD", region).arg(memories).arg(edges).arg("NODE").arg(fired_by);
        if let Some(fence) = delivery {
            call = call.arg("EVENT").arg(fence.event_id).arg("GENERATION").arg(fence.generation);
        }
        let reply = with_trigger(call, trigger).send(&mut self.conn, self.tryagain_deadline).await?;
        let (word, memories, edges) = reply.counted()?;
        RecordWriteOutcome::from_reply(word, snapshot(memories, edges))
    }

    /// Reclaim one effect identity once its authoritative outbox row has
    /// been acknowledged: raise the region's settled generation to
    /// `delivery_generation` (never lower it) and forget `event_id`, unless
    /// `retain_legacy_identity` (`DREAMS.SETTLE ... [RETAIN]`). Pending
    /// identities must never be forgotten here.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{RedisFireQueue, RegionKey};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// queue.forget_write_once(&RegionKey::new("acme", "web", 3), "outbox-17", 1, false).await?;
    /// # Ok(()) }
    /// ```
    pub async fn forget_write_once(
        &mut self,
        region: &RegionKey,
        event_id: &str,
        delivery_generation: u64,
        retain_legacy_identity: bool,
    ) -> Result<()> {
        self.ensure_region(region)?;
        check_fence(event_id, delivery_generation)?;
        region_call("DREAMS.SETTLE", region)
            .arg(event_id)
            .arg(delivery_generation)
            .arg_if(retain_legacy_identity, "RETAIN")
            .send(&mut self.conn, self.tryagain_deadline)
            .await?
            .ok()
    }

    /// Acknowledge a drained fire by its exact payload
    /// (`DREAMS.ACK <org> <payload> SUCCESS|FAILURE NODE <fired_by> TRIGGER ...`).
    /// Success subtracts exactly the fired snapshot; failure retains it and
    /// requeues the same fire. Both decide atomically whether the retained
    /// counters need another cycle.
    ///
    /// `notification` must come from [`drain`](Self::drain): without its
    /// `queued_payload` there is nothing exact to acknowledge and, as in the
    /// seed, the answer is [`AcknowledgeOutcome::Stale`] without a round trip.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::dreams::{DrainResult, DreamsTrigger, RedisFireQueue};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// if let DrainResult::Ready(fire) = queue.drain(Duration::from_secs(1)).await? {
    ///     let worked = true; // ... run the cycle ...
    ///     queue.acknowledge(&fire, worked, DreamsTrigger::default(), "node-a").await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acknowledge(
        &mut self,
        notification: &FireMessage,
        success: bool,
        trigger: impl Into<Trigger>,
        fired_by: &str,
    ) -> Result<AcknowledgeOutcome> {
        self.ensure_region(&notification.region)?;
        let Some(payload) = &notification.queued_payload else {
            return Ok(AcknowledgeOutcome::Stale);
        };
        let call = Call::new("DREAMS.ACK")
            .arg(&self.org)
            .arg(payload)
            .arg(if success { "SUCCESS" } else { "FAILURE" })
            .arg("NODE")
            .arg(fired_by);
        let reply = with_trigger(call, trigger.into()).send(&mut self.conn, self.tryagain_deadline).await?;
        let (word, memories, edges) = reply.counted()?;
        AcknowledgeOutcome::from_reply(word, snapshot(memories, edges))
    }

    /// Move the next fire that should run in flight and return it, waiting
    /// up to `timeout` (zero: forever) for one to be ready:
    /// `DREAMS.DRAIN <org> <secs> QUIET <HH-HH> OFFSET <minutes>` from
    /// [`quiet_hours`](Self::quiet_hours), or `NOQUIET` when it is disabled.
    ///
    /// The server promotes due deferrals and applies the quiet-hours rule in
    /// the same step, carrying on as repeated seed drains would, so the
    /// result is [`DrainResult::Ready`] (with `queued_payload` set to the
    /// exact payload) or [`DrainResult::TimedOut`], never
    /// [`DrainResult::Deferred`].
    ///
    /// The wait happens on the server and holds this connection: its
    /// response timeout must be longer than `timeout`, or the call fails with
    /// [`Error::ResponseTimeout`].
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::dreams::{DrainResult, RedisFireQueue};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// match queue.drain(Duration::from_millis(1500)).await? {
    ///     DrainResult::Ready(fire) => println!("consolidate {:?}", fire.region),
    ///     DrainResult::TimedOut => println!("idle"),
    ///     DrainResult::Deferred => unreachable!("dreamtown never defers to the client"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn drain(&mut self, timeout: Duration) -> Result<DrainResult> {
        self.drain_with(timeout, None).await
    }

    /// [`drain`](Self::drain), leasing the fire for `lease`
    /// (`DREAMS.DRAIN ... LEASE <secs>`): unless acknowledged or
    /// [`extend`](Self::extend)ed in time, the server puts it back at the
    /// head of ready by itself, for another worker.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::dreams::{DrainResult, RedisFireQueue};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// if let DrainResult::Ready(fire) = queue.drain_leased(Duration::from_secs(1), Duration::from_secs(30)).await? {
    ///     let held = queue.hold_lease(&fire, Duration::from_secs(30), async { /* consolidate */ true }).await?;
    ///     println!("worked: {}, lease kept: {}", held.output, held.lease_kept);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn drain_leased(&mut self, timeout: Duration, lease: Duration) -> Result<DrainResult> {
        self.drain_with(timeout, Some(lease)).await
    }

    /// Push the lease of a drained `fire` out to now + `lease`
    /// (`DREAMS.EXTEND`); false when it is leased to no one any more (its
    /// lease ran out, or it was acknowledged).
    pub async fn extend(&mut self, fire: &FireMessage, lease: Duration) -> Result<bool> {
        let Some(payload) = &fire.queued_payload else {
            return Ok(false);
        };
        let call = Call::new("DREAMS.EXTEND").arg(&self.org).arg(payload).arg(timeout_secs(lease));
        call.send(&mut self.conn, self.tryagain_deadline).await?.flag()
    }

    /// Run `work` while keeping `fire`'s lease alive: extended by `lease`
    /// every third of it until `work` finishes (as BullMQ renews job
    /// locks). If an extension finds the lease lost, renewing stops and the
    /// work still runs to its end; [`Held::lease_kept`] tells.
    pub async fn hold_lease<F: Future>(
        &mut self,
        fire: &FireMessage,
        lease: Duration,
        work: F,
    ) -> Result<Held<F::Output>> {
        let mut work = std::pin::pin!(work);
        let period = renew_period(lease);
        loop {
            tokio::select! {
                output = &mut work => return Ok(Held { output, lease_kept: true }),
                () = tokio::time::sleep(period) => {}
            }
            if !self.extend(fire, lease).await? {
                return Ok(Held { output: work.await, lease_kept: false });
            }
        }
    }

    async fn drain_with(&mut self, timeout: Duration, lease: Option<Duration>) -> Result<DrainResult> {
        let reply = self.drain_call(timeout, lease).send(&mut self.conn, self.tryagain_deadline).await?;
        self.drained(&reply)
    }

    /// `DREAMS.DRAIN <org> <secs> QUIET ... | NOQUIET [LEASE <secs>]`.
    fn drain_call(&self, timeout: Duration, lease: Option<Duration>) -> Call {
        let call = Call::new("DREAMS.DRAIN").arg(&self.org).arg(timeout_secs(timeout));
        let call = if self.quiet_hours.enabled {
            call.arg("QUIET").arg(self.quiet_hours.to_string()).arg("OFFSET").arg(self.quiet_hours.utc_offset_minutes)
        } else {
            call.arg("NOQUIET")
        };
        match lease {
            Some(lease) => call.arg("LEASE").arg(timeout_secs(lease)),
            None => call,
        }
    }

    /// A drain's reply: one payload, or nil on timeout.
    fn drained(&self, reply: &Reply) -> Result<DrainResult> {
        match reply.optional_bulk()? {
            Some(payload) => self.fire_of(payload).map(DrainResult::Ready),
            None => Ok(DrainResult::TimedOut),
        }
    }

    /// A drained payload as a fire of this organization, its exact bytes
    /// kept for the acknowledgement.
    fn fire_of(&self, payload: &[u8]) -> Result<FireMessage> {
        let invalid = || Error::InvalidPayload { payload: String::from_utf8_lossy(payload).into_owned() };
        let mut message = FireMessage::parse(payload).ok_or_else(invalid)?;
        if message.region.org != self.org {
            return Err(invalid());
        }
        message.queued_payload = Some(String::from_utf8(payload.to_vec()).map_err(|_| invalid())?);
        Ok(message)
    }

    /// The worker loop's one round trip: acknowledge `done` exactly as
    /// [`acknowledge`](Self::acknowledge) would, then drain the next fire as
    /// [`drain`](Self::drain) would, in one command
    /// (`DREAMS.DRAIN ... ACK <payload> SUCCESS|FAILURE NODE <id> [TRIGGER ...]`).
    ///
    /// The acknowledgement is applied before the server waits: a timeout
    /// ([`DrainResult::TimedOut`]) or a lost connection while waiting never
    /// undoes it. An error means nothing was acknowledged, except for an
    /// error that comes while the call waits (the organization's slot moved:
    /// `TRYAGAIN`): then the acknowledgement stands, and acknowledging again
    /// is harmless (it comes back [`AcknowledgeOutcome::Stale`]). A call
    /// resent after a failover also reports `Stale` for a fire the first
    /// attempt acknowledged. A `done` with no payload (not drained from this
    /// queue) is `Stale` without asking the server, and the drain still runs.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::dreams::{DrainResult, DreamsTrigger, RedisFireQueue};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// let wait = Duration::from_secs(5);
    /// let mut next = queue.drain(wait).await?;
    /// while let DrainResult::Ready(fire) = next {
    ///     let worked = true; // ... consolidate fire.region ...
    ///     let (acked, following) = queue
    ///         .acknowledge_and_drain(&fire, worked, DreamsTrigger::default(), "node-a", wait)
    ///         .await?;
    ///     println!("{acked:?}");
    ///     next = following;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acknowledge_and_drain(
        &mut self,
        done: &FireMessage,
        success: bool,
        trigger: impl Into<Trigger>,
        fired_by: &str,
        timeout: Duration,
    ) -> Result<(AcknowledgeOutcome, DrainResult)> {
        self.acknowledge_and_drain_with(done, success, trigger.into(), fired_by, timeout, None).await
    }

    /// [`acknowledge_and_drain`](Self::acknowledge_and_drain), leasing the
    /// next fire for `lease` as [`drain_leased`](Self::drain_leased) does.
    pub async fn acknowledge_and_drain_leased(
        &mut self,
        done: &FireMessage,
        success: bool,
        trigger: impl Into<Trigger>,
        fired_by: &str,
        timeout: Duration,
        lease: Duration,
    ) -> Result<(AcknowledgeOutcome, DrainResult)> {
        self.acknowledge_and_drain_with(done, success, trigger.into(), fired_by, timeout, Some(lease)).await
    }

    async fn acknowledge_and_drain_with(
        &mut self,
        done: &FireMessage,
        success: bool,
        trigger: Trigger,
        fired_by: &str,
        timeout: Duration,
        lease: Option<Duration>,
    ) -> Result<(AcknowledgeOutcome, DrainResult)> {
        self.ensure_region(&done.region)?;
        let Some(payload) = &done.queued_payload else {
            return Ok((AcknowledgeOutcome::Stale, self.drain_with(timeout, lease).await?));
        };
        let call = self
            .drain_call(timeout, lease)
            .arg("ACK")
            .arg(payload)
            .arg(if success { "SUCCESS" } else { "FAILURE" })
            .arg("NODE")
            .arg(fired_by);
        let (acked, drained) =
            with_trigger(call, trigger).send(&mut self.conn, self.tryagain_deadline).await?.halves()?;
        let (word, memories, edges) = acked.counted()?;
        let outcome = AcknowledgeOutcome::from_reply(word, snapshot(memories, edges))?;
        Ok((outcome, self.drained(&drained)?))
    }

    /// Up to `count` fires in one call (`DREAMS.DRAIN ... COUNT <n>`), each
    /// moved in flight (and leased, with `lease`) as one
    /// [`drain`](Self::drain) would, in the order single drains would hand
    /// them out; waits up to `timeout` for the first; empty on timeout.
    /// Acknowledge each as usual.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use dreamtown_client::dreams::{DreamsTrigger, RedisFireQueue};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// for fire in queue.drain_batch(Duration::from_secs(5), 10, None).await? {
    ///     queue.acknowledge(&fire, true, DreamsTrigger::default(), "node-a").await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn drain_batch(
        &mut self,
        timeout: Duration,
        count: u32,
        lease: Option<Duration>,
    ) -> Result<Vec<FireMessage>> {
        let reply = self
            .drain_call(timeout, lease)
            .arg("COUNT")
            .arg(count.max(1))
            .send(&mut self.conn, self.tryagain_deadline)
            .await?;
        let payloads = reply.optional_bulks()?.unwrap_or_default();
        payloads.iter().map(|payload| self.fire_of(payload)).collect()
    }

    /// Requeue every fire left in flight by a dead owner (`DREAMS.RECOVER`);
    /// how many moved. Call once after acquiring Dreams ownership, before
    /// draining.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::RedisFireQueue;
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// let recovered = queue.recover_inflight().await?;
    /// println!("{recovered} fires handed back");
    /// # Ok(()) }
    /// ```
    pub async fn recover_inflight(&mut self) -> Result<u64> {
        Call::new("DREAMS.RECOVER").arg(&self.org).send(&mut self.conn, self.tryagain_deadline).await?.count()
    }

    /// The lengths of the ready list, the deferred set and the in-flight
    /// list (`DREAMS.LEN`).
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::RedisFireQueue;
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// let lengths = queue.lengths().await?;
    /// println!("{} ready, {} in flight", lengths.ready, lengths.processing);
    /// # Ok(()) }
    /// ```
    pub async fn lengths(&mut self) -> Result<QueueLengths> {
        let [ready, deferred, processing] =
            Call::new("DREAMS.LEN").arg(&self.org).send(&mut self.conn, self.tryagain_deadline).await?.counts::<3>()?;
        Ok(QueueLengths { ready, deferred, processing })
    }

    /// The region's shared counters as stored (`DREAMS.COUNTERS`); every
    /// field is `None` for a region never written.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{RedisFireQueue, RegionKey};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// let counters = queue.counters(&RegionKey::new("acme", "web", 3)).await?;
    /// println!("{:?} memories, pending fire: {}", counters.memories, counters.pending.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn counters(&mut self, region: &RegionKey) -> Result<RegionCounters> {
        self.ensure_region(region)?;
        let reply = region_call("DREAMS.COUNTERS", region).send(&mut self.conn, self.tryagain_deadline).await?;
        let pairs = reply.pairs()?;
        let field = |name: &str| pairs.iter().find(|(field, _)| field == name).map(|(_, value)| value.clone());
        RegionCounters::parse(field).map_err(|_| reply.unexpected())
    }

    fn ensure_region(&self, region: &RegionKey) -> Result<()> {
        if region.org == self.org {
            Ok(())
        } else {
            Err(Error::ForeignRegion { queue: self.org.clone(), region: region.org.clone() })
        }
    }
}

/// Fair shares (`DREAMS.LIMIT`, `DREAMS.PAUSE`, `DREAMS.RESUME`): an
/// operator's calls. `DREAMS.LIMIT <subcommand> <org>` names its
/// organization second, so over a cluster connection it is routed to the
/// organization's node by the client ([`crate::cluster_routing`]).
impl<C: ConnectionLike + Send + 'static> RedisFireQueue<C> {
    /// Change the organization's fair share (`DREAMS.LIMIT SET`): a cap
    /// on fires in flight, a rate of drains; what `change` leaves `None`
    /// stays as it is. Drains of the organization, from every worker, then
    /// hand out no more than it allows; blocked drains are served, first
    /// come first served, as capacity returns.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{DrainRate, LimitChange, RedisFireQueue};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// queue.set_limits(LimitChange::default().concurrency(4).rate(DrainRate { count: 60, seconds: 60 })).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_limits(&mut self, change: LimitChange) -> Result<()> {
        if change == LimitChange::default() {
            return Err(Error::InvalidArgument("a limit change needs a concurrency or a rate"));
        }
        let mut call = Call::new("DREAMS.LIMIT").arg("SET").arg(&self.org);
        match change.concurrency {
            Some(Some(cap)) => call = call.arg("CONCURRENCY").arg(cap),
            Some(None) => call = call.arg("CONCURRENCY").arg("NONE"),
            None => {}
        }
        match change.rate {
            Some(Some(rate)) => call = call.arg("RATE").arg(rate.count).arg(rate.seconds),
            Some(None) => call = call.arg("RATE").arg("NONE"),
            None => {}
        }
        call.send_routed(&mut self.conn, self.tryagain_deadline).await?.ok()
    }

    /// The organization's fair share as it stands, with its fires in
    /// flight and the rate's tokens left (`DREAMS.LIMIT GET`).
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::RedisFireQueue;
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// let limits = queue.limits().await?;
    /// println!("{} in flight of {:?}", limits.in_flight, limits.concurrency);
    /// # Ok(()) }
    /// ```
    pub async fn limits(&mut self) -> Result<OrgLimits> {
        let reply = Call::new("DREAMS.LIMIT")
            .arg("GET")
            .arg(&self.org)
            .send_routed(&mut self.conn, self.tryagain_deadline)
            .await?;
        let fields = crate::call::fields(reply.value()).ok_or_else(|| reply.unexpected())?;
        let get = |name: &str| fields.iter().find(|(field, _)| field == name).map(|(_, value)| *value);
        let number = |name: &str| -> Result<Option<u64>> {
            match get(name) {
                None | Some(redis::Value::Nil) => Ok(None),
                Some(redis::Value::Int(n)) => u64::try_from(*n).map(Some).map_err(|_| reply.unexpected()),
                Some(_) => Err(reply.unexpected()),
            }
        };
        let rate = match (number("rate_count")?, number("rate_seconds")?) {
            (Some(count), Some(seconds)) => Some(DrainRate { count, seconds }),
            _ => None,
        };
        Ok(OrgLimits {
            concurrency: number("concurrency")?,
            rate,
            in_flight: number("in_flight")?.unwrap_or(0),
            tokens_left: number("tokens_left")?,
            paused: number("paused")? == Some(1),
        })
    }

    /// Remove the organization's concurrency cap and rate
    /// (`DREAMS.LIMIT CLEAR`; a pause stays); whether it had one.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::RedisFireQueue;
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// let had_limits = queue.clear_limits().await?;
    /// # Ok(()) }
    /// ```
    pub async fn clear_limits(&mut self) -> Result<bool> {
        Call::new("DREAMS.LIMIT")
            .arg("CLEAR")
            .arg(&self.org)
            .send_routed(&mut self.conn, self.tryagain_deadline)
            .await?
            .flag()
    }

    /// Hand out nothing of this organization until [`RedisFireQueue::resume`]
    /// (`DREAMS.PAUSE`); whether it was running. Work keeps arriving, and
    /// what is in flight can still be acknowledged.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::RedisFireQueue;
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// queue.pause().await?;
    /// // ... the organization's model quota is exhausted ...
    /// queue.resume().await?;
    /// # Ok(()) }
    /// ```
    pub async fn pause(&mut self) -> Result<bool> {
        Call::new("DREAMS.PAUSE").arg(&self.org).send(&mut self.conn, self.tryagain_deadline).await?.flag()
    }

    /// End a pause (`DREAMS.RESUME`): blocked drains are served at once;
    /// whether it was paused.
    pub async fn resume(&mut self) -> Result<bool> {
        Call::new("DREAMS.RESUME").arg(&self.org).send(&mut self.conn, self.tryagain_deadline).await?.flag()
    }
}

/// `<name> <org> <project> <memory-type>`.
fn region_call(name: &'static str, region: &RegionKey) -> Call {
    Call::new(name).arg(&region.org).arg(&region.project).arg(region.memory_type)
}

/// `... TRIGGER <memories> <edges> <min-interval-secs> <age-floor-secs>`.
fn with_trigger(call: Call, trigger: Trigger) -> Call {
    call.arg("TRIGGER")
        .arg(trigger.memory_threshold)
        .arg(trigger.edge_threshold)
        .arg(trigger.min_interval_secs)
        .arg(trigger.age_floor_secs)
}

fn snapshot(memories: u32, edges: u32) -> RegionWriteCounters {
    RegionWriteCounters {
        memories_since_last_cycle: memories,
        edges_since_last_cycle: edges,
        seconds_since_last_cycle: 0,
    }
}

fn check_fence(event_id: &str, generation: u64) -> Result<()> {
    if event_id.is_empty() {
        return Err(Error::InvalidArgument("Dreams write event id must not be empty"));
    }
    if generation == 0 {
        return Err(Error::InvalidArgument("Dreams delivery generation must be positive"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_checked_before_sending() {
        assert!(check_fence("", 1).is_err());
        assert!(check_fence("e", 0).is_err());
        assert!(check_fence("e", 1).is_ok());
    }
}
