//! [`Dreams`]: one organization's fire queue as a view of a
//! [`Dreamtown`](crate::Dreamtown) handle. Every call is one `DREAMS.*`
//! command; what a command may leave out is a builder method, never a
//! positional `bool` or `None`; outcomes are enums. The seed-shaped
//! [`RedisFireQueue`](super::RedisFireQueue) is a thin layer over this.

use std::time::Duration;

use dreamtown::dreams::fire::FireOutcome;
use dreamtown::dreams::message::FireMessage;
use dreamtown::dreams::quiet::QuietHours;
use dreamtown::dreams::region::RegionKey;
use dreamtown::dreams::store::RegionCounters;
use dreamtown::dreams::trigger::Trigger;
use dreamtown_protocol::reply::dreams as reply;
use dreamtown_protocol::request::dreams::{self as request, quiet::QuietWindow};
use dreamtown_protocol::request::options::{Timeout, lease_from_duration};
use redis::aio::{ConnectionLike, MultiplexedConnection};

use super::outcome::{
    AcknowledgeOutcome, DeliveryFence, DrainRate, LimitChange, OrgLimits, QueueLengths, RecordWriteOutcome,
};
use crate::call::{Call, Reply};
use crate::error::{Error, Result};
use crate::lease::{self, Held};

/// How a worker's cycle went: what an acknowledgement reports
/// (`DREAMS.ACK ... SUCCESS|FAILURE`).
///
/// ```
/// use dreamtown_client::dreams::Verdict;
/// assert_eq!(Verdict::from_success(false), Verdict::Failure);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The cycle ran: the fired snapshot is subtracted from the counters.
    Success,
    /// The cycle failed: the counters are kept and the same fire requeued.
    Failure,
}

impl Verdict {
    /// `Success` for `true`, `Failure` for `false` (for code that has a bool).
    pub fn from_success(success: bool) -> Self {
        if success { Self::Success } else { Self::Failure }
    }
}

/// A region's counters as stored (`DREAMS.COUNTERS`): each `None` when the
/// field is absent (a region never written has none).
///
/// ```
/// use dreamtown_client::dreams::Counters;
/// assert!(Counters::default().pending_fire.is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Memories written since the last successful cycle.
    pub memories: Option<i64>,
    /// Edges written since the last successful cycle.
    pub edges: Option<i64>,
    /// When the last cycle succeeded (unix seconds).
    pub last_success: Option<i64>,
    /// The highest delivery generation settled (`DREAMS.SETTLE`).
    pub settled_generation: Option<i64>,
    /// The id of the region's one pending fire, if any.
    pub pending_fire: Option<String>,
}

impl Counters {
    /// The counters as the server store type reads them; private, so the
    /// client's API names no server store type.
    fn from_stored(stored: RegionCounters) -> Self {
        Self {
            memories: stored.memories,
            edges: stored.edges,
            last_success: stored.last_success,
            settled_generation: stored.settled_generation,
            pending_fire: stored.pending.map(|id| String::from_utf8_lossy(&id).into_owned()),
        }
    }
}

/// One organization's Dreams fire queue: `dreamtown.dreams("acme")`.
///
/// Receivers are `&self`, as on every view of a [`Dreamtown`](crate::Dreamtown):
/// each call clones the connection handle (cheap: the `redis` crate's async
/// connections share one pipeline), so a view can be shared between tasks.
/// A blocking [`drain`](Self::drain) holds its connection on the server for
/// as long as it waits: give a worker a handle of its own, over a
/// connection whose response timeout is longer than the drain's wait
/// ([`Error::ResponseTimeout`]).
///
/// ```no_run
/// use std::time::Duration;
/// use dreamtown_client::Dreamtown;
/// use dreamtown_client::dreams::{RegionKey, Trigger, Verdict};
///
/// # async fn demo() -> dreamtown_client::Result<()> {
/// let dreamtown = Dreamtown::connect("redis://127.0.0.1:6390/").await?;
/// let dreams = dreamtown.dreams("acme");
/// let region = RegionKey::new("acme", "web", 3);
/// dreams.record(&region, 5, 2, "node-a").trigger(Trigger::default()).send().await?;
/// let mut next = dreams.drain(Duration::from_secs(1)).send().await?;
/// while let Some(fire) = next {
///     // ... consolidate fire.region ...
///     next = dreams.ack(&fire, Verdict::Success, "node-a").and_drain(Duration::from_secs(1)).send().await?.1;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Dreams<C = MultiplexedConnection> {
    conn: C,
    org: String,
    quiet_hours: QuietHours,
    tryagain_deadline: Duration,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Dreams<C> {
    pub(crate) fn new(conn: C, org: String, tryagain_deadline: Duration) -> Self {
        Self { conn, org, quiet_hours: QuietHours::none(), tryagain_deadline }
    }

    /// Drains apply these quiet hours (R-Dr14: `QUIET <HH-HH> OFFSET <minutes>`);
    /// none by default (`NOQUIET`).
    ///
    /// ```no_run
    /// # use dreamtown_client::{Dreamtown, dreams::QuietHours};
    /// # fn demo(dreamtown: Dreamtown) {
    /// let dreams = dreamtown.dreams("acme").with_quiet_hours(QuietHours::nightly());
    /// assert!(dreams.quiet_hours().enabled);
    /// # }
    /// ```
    pub fn with_quiet_hours(mut self, quiet_hours: QuietHours) -> Self {
        self.quiet_hours = quiet_hours;
        self
    }

    /// The quiet hours drains apply.
    pub fn quiet_hours(&self) -> QuietHours {
        self.quiet_hours
    }

    /// The organization.
    pub fn org(&self) -> &str {
        &self.org
    }

    /// The tenant this view serves (the organization), named as on every
    /// view: `dreamtown.dreams(t).tenant()` and `dreamtown.town(t).tenant()` are `t`.
    pub fn tenant(&self) -> &str {
        &self.org
    }

    /// How long a call refused with `TRYAGAIN` is sent again (the handle's).
    pub fn tryagain_deadline(&self) -> Duration {
        self.tryagain_deadline
    }

    async fn send(&self, call: Call) -> Result<Reply> {
        call.send(&mut self.conn.clone(), self.tryagain_deadline).await
    }

    /// Queue an explicit fire of `region` unless the queue is at its
    /// ceiling (`DREAMS.FIRE <org> <project> <type> NODE <node>`).
    pub async fn fire(&self, region: &RegionKey, node: &str) -> Result<FireOutcome> {
        self.ensure_region(region)?;
        let request = request::Fire { region: region.into(), node: Some(node) };
        let reply::Fire(outcome) = self.send(Call::request(&request)).await?.decode()?;
        Ok(outcome)
    }

    /// Count `memories` and `edges` written to `region` by `node`
    /// (`DREAMS.RECORD`): a [`Record`] to finish with a trigger or a
    /// delivery fence, then [`send`](Record::send).
    pub fn record<'a>(&'a self, region: &'a RegionKey, memories: u32, edges: u32, node: &'a str) -> Record<'a, C> {
        Record { dreams: self, region, memories, edges, node, trigger: Trigger::default(), fence: None }
    }

    /// Reclaim a delivered effect's identity (`DREAMS.SETTLE <org> <project>
    /// <type> <event-id> <generation>`): a [`Settle`] to [`send`](Settle::send).
    pub fn settle<'a>(&'a self, region: &'a RegionKey, event_id: &'a str, generation: u64) -> Settle<'a, C> {
        Settle { dreams: self, region, event_id, generation, retain: false }
    }

    /// Acknowledge a drained `fire` by its exact payload (`DREAMS.ACK`): an
    /// [`Ack`] to [`send`](Ack::send), or to turn into the worker loop's one
    /// round trip with [`and_drain`](Ack::and_drain).
    pub fn ack<'a>(&'a self, fire: &'a FireMessage, verdict: Verdict, node: &'a str) -> Ack<'a, C> {
        Ack { dreams: self, fire, verdict, node, trigger: Trigger::default() }
    }

    /// Take the next fire, waiting up to `wait` (zero: forever)
    /// (`DREAMS.DRAIN`): a [`Drain`] to lease or batch, then send.
    pub fn drain(&self, wait: Duration) -> Drain<'_, C> {
        Drain { dreams: self, wait, lease: None }
    }

    /// Push the lease of a drained `fire` out to now + `lease`
    /// (`DREAMS.EXTEND`); false when it is leased to no one any more.
    pub async fn extend(&self, fire: &FireMessage, lease: Duration) -> Result<bool> {
        let Some(payload) = &fire.queued_payload else {
            return Ok(false);
        };
        let lease_secs = lease_from_duration(lease)?;
        let request = request::Extend { org: &self.org, payload: payload.as_bytes(), lease_secs };
        let reply::Flag(extended) = self.send(Call::request(&request)).await?.decode::<reply::Extend>()?;
        Ok(extended)
    }

    /// Run `work` while keeping `fire`'s lease alive, extended by `lease`
    /// every third of it; [`Held::lease_kept`] tells whether every
    /// extension found it still ours.
    pub async fn hold_lease<F: Future>(&self, fire: &FireMessage, lease: Duration, work: F) -> Result<Held<F::Output>> {
        lease::hold(lease, work, || self.extend(fire, lease)).await
    }

    /// Requeue every fire left in flight by a dead owner (`DREAMS.RECOVER`);
    /// how many moved.
    pub async fn recover(&self) -> Result<u64> {
        let recovered: reply::Recover =
            self.send(Call::request(&request::Recover { org: &self.org })).await?.decode()?;
        Ok(recovered.moved)
    }

    /// Ready, deferred and in-flight lengths (`DREAMS.LEN`).
    pub async fn lengths(&self) -> Result<QueueLengths> {
        let request = request::Len { org: &self.org };
        let reply::Len { ready, deferred, processing } = self.send(Call::request(&request)).await?.decode()?;
        Ok(QueueLengths { ready, deferred, processing })
    }

    /// The region's counters as stored (`DREAMS.COUNTERS`).
    pub async fn counters(&self, region: &RegionKey) -> Result<Counters> {
        self.stored_counters(region).await.map(Counters::from_stored)
    }

    pub(crate) async fn stored_counters(&self, region: &RegionKey) -> Result<RegionCounters> {
        self.ensure_region(region)?;
        let reply = self.send(Call::request(&request::Counters { region: region.into() })).await?;
        let stored: reply::Counters = reply.decode()?;
        let field = |name: &str| stored.get(name).map(<[u8]>::to_vec);
        RegionCounters::parse(field).map_err(|_| reply.unexpected())
    }

    /// Change the organization's fair share (`DREAMS.LIMIT SET`); what
    /// `change` leaves unset stays as it is.
    pub async fn set_limits(&self, change: LimitChange) -> Result<()> {
        if change == LimitChange::default() {
            return Err(Error::InvalidArgument("a limit change needs a concurrency or a rate"));
        }
        let request = request::LimitSet {
            org: &self.org,
            concurrency: change.concurrency,
            rate: change.rate.map(|rate| rate.map(|DrainRate { count, seconds }| request::Rate { count, seconds })),
        };
        let reply::Done = Call::request(&request)
            .send_routed(&mut self.conn.clone(), self.tryagain_deadline)
            .await?
            .decode::<reply::LimitSet>()?;
        Ok(())
    }

    /// The organization's fair share as it stands (`DREAMS.LIMIT GET`).
    pub async fn limits(&self) -> Result<OrgLimits> {
        let reply = Call::request(&request::LimitGet { org: &self.org })
            .send_routed(&mut self.conn.clone(), self.tryagain_deadline)
            .await?;
        let limits: reply::LimitGet = reply.decode()?;
        let rate = match (limits.rate_count, limits.rate_seconds) {
            (Some(count), Some(seconds)) => Some(DrainRate { count, seconds }),
            _ => None,
        };
        Ok(OrgLimits {
            concurrency: limits.concurrency,
            rate,
            in_flight: limits.in_flight,
            tokens_left: limits.tokens_left,
            paused: limits.paused,
        })
    }

    /// Remove the concurrency cap and rate (`DREAMS.LIMIT CLEAR`); whether
    /// there was one.
    pub async fn clear_limits(&self) -> Result<bool> {
        let reply::Flag(had) = Call::request(&request::LimitClear { org: &self.org })
            .send_routed(&mut self.conn.clone(), self.tryagain_deadline)
            .await?
            .decode::<reply::LimitClear>()?;
        Ok(had)
    }

    /// Hand out nothing until [`resume`](Self::resume) (`DREAMS.PAUSE`);
    /// whether it was running.
    pub async fn pause(&self) -> Result<bool> {
        let reply::Flag(was_running) =
            self.send(Call::request(&request::Pause { org: &self.org })).await?.decode::<reply::Pause>()?;
        Ok(was_running)
    }

    /// End a pause (`DREAMS.RESUME`); whether it was paused.
    pub async fn resume(&self) -> Result<bool> {
        let reply::Flag(was_paused) =
            self.send(Call::request(&request::Resume { org: &self.org })).await?.decode::<reply::Resume>()?;
        Ok(was_paused)
    }

    /// `DREAMS.DRAIN <org> <secs> QUIET ... | NOQUIET [LEASE <secs>]`; a
    /// wait or lease the module would refuse is refused here, in its words.
    fn drain_request(&self, wait: Duration, lease: Option<Duration>) -> Result<request::Drain<'_>> {
        let quiet = match self.quiet_hours.enabled {
            true => request::Quiet::Given {
                window: Some(QuietWindow {
                    start_hour: self.quiet_hours.start_hour,
                    end_hour: self.quiet_hours.end_hour,
                }),
                offset: Some(self.quiet_hours.utc_offset_minutes),
            },
            false => request::Quiet::Off,
        };
        Ok(request::Drain {
            org: &self.org,
            timeout: Timeout::from_duration(wait)?,
            quiet,
            lease: lease.map(lease_from_duration).transpose()?,
            count: None,
            ack: None,
        })
    }

    /// A drain's reply: one payload, or nothing (the wait ran out).
    fn drained(&self, drained: reply::Drain<Vec<u8>>) -> Result<Option<FireMessage>> {
        drained.into_payload().map(|payload| self.fire_of(&payload)).transpose()
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

    fn ensure_region(&self, region: &RegionKey) -> Result<()> {
        if region.org == self.org {
            Ok(())
        } else {
            Err(Error::ForeignRegion { queue: self.org.clone(), region: region.org.clone() })
        }
    }
}

/// `DREAMS.RECORD`, from [`Dreams::record`]: the module's default trigger
/// unless [`trigger`](Self::trigger) says otherwise, counted every time
/// unless [`once`](Self::once) fences it.
#[must_use = "a Record does nothing until sent"]
pub struct Record<'a, C> {
    dreams: &'a Dreams<C>,
    region: &'a RegionKey,
    memories: u32,
    edges: u32,
    node: &'a str,
    trigger: Trigger,
    fence: Option<DeliveryFence<'a>>,
}

impl<'a, C: ConnectionLike + Clone + Send + Sync + 'static> Record<'a, C> {
    /// When the region is due (`TRIGGER <memories> <edges> <secs> <secs>`).
    pub fn trigger(mut self, trigger: Trigger) -> Self {
        self.trigger = trigger;
        self
    }

    /// Count this effect once (`EVENT <id> GENERATION <n>`): a repeat, or
    /// a generation at or below the region's settled one, counts nothing.
    pub fn once(mut self, fence: DeliveryFence<'a>) -> Self {
        self.fence = Some(fence);
        self
    }

    /// Send it: whether the write queued the region's one pending fire.
    pub async fn send(self) -> Result<RecordWriteOutcome> {
        let dreams = self.dreams;
        dreams.ensure_region(self.region)?;
        if let Some(fence) = self.fence {
            check_fence(fence.event_id, fence.generation)?;
        }
        let request = request::Record {
            region: self.region.into(),
            memories: u64::from(self.memories),
            edges: u64::from(self.edges),
            node: Some(self.node),
            delivery: self.fence.map(|fence| request::Delivery {
                event_id: fence.event_id.as_bytes(),
                // The module reads a generation above i64::MAX as i64::MAX.
                generation: i64::try_from(fence.generation).unwrap_or(i64::MAX),
            }),
            trigger: Some(self.trigger),
        };
        let reply = dreams.send(Call::request(&request)).await?;
        RecordWriteOutcome::from_reply(reply.decode()?).ok_or_else(|| reply.unexpected())
    }
}

/// `DREAMS.SETTLE`, from [`Dreams::settle`].
#[must_use = "a Settle does nothing until sent"]
pub struct Settle<'a, C> {
    dreams: &'a Dreams<C>,
    region: &'a RegionKey,
    event_id: &'a str,
    generation: u64,
    retain: bool,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Settle<'_, C> {
    /// Raise the settled generation but keep the event id (`RETAIN`).
    pub fn retain_identity(mut self) -> Self {
        self.retain = true;
        self
    }

    /// Send it.
    pub async fn send(self) -> Result<()> {
        self.dreams.ensure_region(self.region)?;
        check_fence(self.event_id, self.generation)?;
        let request = request::Settle {
            region: self.region.into(),
            event_id: self.event_id.as_bytes(),
            // The module reads a generation above i64::MAX as i64::MAX.
            generation: i64::try_from(self.generation).unwrap_or(i64::MAX),
            retain: self.retain,
        };
        let reply::Done = self.dreams.send(Call::request(&request)).await?.decode::<reply::Settle>()?;
        Ok(())
    }
}

/// `DREAMS.ACK`, from [`Dreams::ack`].
#[must_use = "an Ack does nothing until sent"]
pub struct Ack<'a, C> {
    dreams: &'a Dreams<C>,
    fire: &'a FireMessage,
    verdict: Verdict,
    node: &'a str,
    trigger: Trigger,
}

impl<'a, C: ConnectionLike + Clone + Send + Sync + 'static> Ack<'a, C> {
    /// When the retained counters are due again (`TRIGGER ...`).
    pub fn trigger(mut self, trigger: Trigger) -> Self {
        self.trigger = trigger;
        self
    }

    /// Send it. A fire not drained from this queue (no exact payload) is
    /// [`AcknowledgeOutcome::Stale`] without a round trip.
    pub async fn send(self) -> Result<AcknowledgeOutcome> {
        self.dreams.ensure_region(&self.fire.region)?;
        let Some(payload) = &self.fire.queued_payload else {
            return Ok(AcknowledgeOutcome::Stale);
        };
        let request = request::Ack { org: &self.dreams.org, clause: self.clause(payload) };
        let reply = self.dreams.send(Call::request(&request)).await?;
        AcknowledgeOutcome::from_reply(reply.decode()?).ok_or_else(|| reply.unexpected())
    }

    /// `<payload> SUCCESS|FAILURE NODE <node> TRIGGER ...`.
    fn clause(&self, payload: &'a str) -> request::AckClause<'a> {
        request::AckClause {
            payload: payload.as_bytes(),
            success: self.verdict == Verdict::Success,
            node: Some(self.node),
            trigger: Some(self.trigger),
        }
    }

    /// The worker loop's one round trip: this acknowledgement, then a drain
    /// waiting up to `wait` (`DREAMS.DRAIN ... ACK ...`). The
    /// acknowledgement is applied before the server waits: a timeout or a
    /// lost connection while waiting never undoes it.
    pub fn and_drain(self, wait: Duration) -> AckAndDrain<'a, C> {
        AckAndDrain { ack: self, wait, lease: None }
    }
}

/// `DREAMS.DRAIN ... ACK ...`, from [`Ack::and_drain`].
#[must_use = "an AckAndDrain does nothing until sent"]
pub struct AckAndDrain<'a, C> {
    ack: Ack<'a, C>,
    wait: Duration,
    lease: Option<Duration>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> AckAndDrain<'_, C> {
    /// Lease the next fire for `lease` (`LEASE <secs>`).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Send it: the acknowledgement's outcome and the next fire, if one
    /// came before the wait ran out.
    pub async fn send(self) -> Result<(AcknowledgeOutcome, Option<FireMessage>)> {
        let Self { ack, wait, lease } = self;
        let dreams = ack.dreams;
        dreams.ensure_region(&ack.fire.region)?;
        let Some(payload) = &ack.fire.queued_payload else {
            return Ok((AcknowledgeOutcome::Stale, Drain { dreams, wait, lease }.send().await?));
        };
        let request = request::Drain { ack: Some(ack.clause(payload)), ..dreams.drain_request(wait, lease)? };
        let reply = dreams.send(Call::request(&request)).await?;
        let both: reply::AckThenDrain<reply::Drain<Vec<u8>>> = reply.decode()?;
        let outcome = AcknowledgeOutcome::from_reply(both.acked).ok_or_else(|| reply.unexpected())?;
        Ok((outcome, dreams.drained(both.drained)?))
    }
}

/// `DREAMS.DRAIN`, from [`Dreams::drain`].
#[must_use = "a Drain does nothing until sent"]
pub struct Drain<'a, C> {
    dreams: &'a Dreams<C>,
    wait: Duration,
    lease: Option<Duration>,
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Drain<'_, C> {
    /// Lease what is drained for `lease` (`LEASE <secs>`): unless
    /// acknowledged or extended in time, the server hands it out again.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Send it: the next fire, or `None` when the wait ran out.
    pub async fn send(self) -> Result<Option<FireMessage>> {
        let request = self.dreams.drain_request(self.wait, self.lease)?;
        let drained = self.dreams.send(Call::request(&request)).await?.decode()?;
        self.dreams.drained(drained)
    }

    /// Up to `count` fires in one call (`COUNT <n>`), in the order single
    /// drains would hand them out; empty when the wait ran out.
    pub async fn batch(self, count: u32) -> Result<Vec<FireMessage>> {
        let request = request::Drain {
            count: Some(u64::from(count.max(1))),
            ..self.dreams.drain_request(self.wait, self.lease)?
        };
        let batch: reply::DrainBatch<Vec<u8>> = self.dreams.send(Call::request(&request)).await?.decode()?;
        batch.payloads.iter().map(|payload| self.dreams.fire_of(payload)).collect()
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
