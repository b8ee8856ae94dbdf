//! [`RedisFireQueue`]: the seed's `RedisFireQueue` API (switching is a
//! change of constructor), a thin compatibility layer over the native
//! [`Dreams`] view: each method is one call of the view.

use std::time::Duration;

use dreamtown::dreams::fire::FireOutcome;
use dreamtown::dreams::message::FireMessage;
use dreamtown::dreams::quiet::QuietHours;
use dreamtown::dreams::region::RegionKey;
use dreamtown::dreams::trigger::Trigger;
use redis::aio::{ConnectionLike, MultiplexedConnection};

use super::outcome::{
    AcknowledgeOutcome, DeliveryFence, DrainResult, LimitChange, OrgLimits, QueueLengths, RecordWriteOutcome,
};
use super::view::{Counters, Dreams, Verdict};
use crate::error::Result;
use crate::lease::Held;
use crate::retry::DEFAULT_TRYAGAIN_DEADLINE;

/// The seed's API over [`Dreams`] (`Dreamtown::dreams`, the native
/// view, is what new code uses): one organization's Dreams fire queue on a
/// server with the dreamtown module, over any async connection of the
/// `redis` crate (cloneable, as all of them are): a
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
/// [`Error::ResponseTimeout`](crate::Error::ResponseTimeout)).
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

impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisFireQueue<C> {
    /// The queue of organization `org` over `conn`; drains apply
    /// `quiet_hours`. Nothing is sent until the first call; an organization
    /// name the server refuses (empty, or containing `{` or `}`) makes every
    /// call fail with [`Error::Server`](crate::Error::Server).
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

    /// The native view this queue's calls go through, with its quiet hours.
    pub fn view(&self) -> Dreams<C> {
        Dreams::new(self.conn.clone(), self.org.clone(), self.tryagain_deadline).with_quiet_hours(self.quiet_hours)
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
        self.view().fire(region, fired_by).await
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
        self.view().record(region, memories, edges, fired_by).trigger(trigger.into()).send().await
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
        self.view().record(region, memories, edges, fired_by).trigger(trigger.into()).once(delivery).send().await
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
        let view = self.view();
        let settle = view.settle(region, event_id, delivery_generation);
        if retain_legacy_identity { settle.retain_identity().send().await } else { settle.send().await }
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
        self.view().ack(notification, Verdict::from_success(success), fired_by).trigger(trigger.into()).send().await
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
    /// [`Error::ResponseTimeout`](crate::Error::ResponseTimeout).
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
        self.view().extend(fire, lease).await
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
        self.view().hold_lease(fire, lease, work).await
    }

    async fn drain_with(&mut self, timeout: Duration, lease: Option<Duration>) -> Result<DrainResult> {
        let view = self.view();
        let drain = view.drain(timeout);
        let drain = match lease {
            Some(lease) => drain.lease(lease),
            None => drain,
        };
        Ok(ready_or_timed_out(drain.send().await?))
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
        let view = self.view();
        let both = view.ack(done, Verdict::from_success(success), fired_by).trigger(trigger).and_drain(timeout);
        let both = match lease {
            Some(lease) => both.lease(lease),
            None => both,
        };
        let (acked, next) = both.send().await?;
        Ok((acked, ready_or_timed_out(next)))
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
        let view = self.view();
        let drain = view.drain(timeout);
        let drain = match lease {
            Some(lease) => drain.lease(lease),
            None => drain,
        };
        drain.batch(count).await
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
        self.view().recover().await
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
        self.view().lengths().await
    }

    /// The region's shared counters as stored (`DREAMS.COUNTERS`); every
    /// field is `None` for a region never written.
    ///
    /// ```no_run
    /// # use dreamtown_client::dreams::{RedisFireQueue, RegionKey};
    /// # async fn demo(mut queue: RedisFireQueue) -> dreamtown_client::Result<()> {
    /// let counters = queue.counters(&RegionKey::new("acme", "web", 3)).await?;
    /// println!("{:?} memories, pending fire: {:?}", counters.memories, counters.pending_fire);
    /// # Ok(()) }
    /// ```
    pub async fn counters(&mut self, region: &RegionKey) -> Result<Counters> {
        self.view().counters(region).await
    }
}

/// Fair shares (`DREAMS.LIMIT`, `DREAMS.PAUSE`, `DREAMS.RESUME`): an
/// operator's calls. `DREAMS.LIMIT <subcommand> <org>` names its
/// organization second, so over a cluster connection it is routed to the
/// organization's node by the client ([`crate::cluster_routing`]).
impl<C: ConnectionLike + Clone + Send + Sync + 'static> RedisFireQueue<C> {
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
        self.view().set_limits(change).await
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
        self.view().limits().await
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
        self.view().clear_limits().await
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
        self.view().pause().await
    }

    /// End a pause (`DREAMS.RESUME`): blocked drains are served at once;
    /// whether it was paused.
    pub async fn resume(&mut self) -> Result<bool> {
        self.view().resume().await
    }
}

/// The seed's drain result from the view's: a fire, or the wait ran out.
fn ready_or_timed_out(fire: Option<FireMessage>) -> DrainResult {
    match fire {
        Some(fire) => DrainResult::Ready(fire),
        None => DrainResult::TimedOut,
    }
}
