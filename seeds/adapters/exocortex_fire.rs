//! exocortex-dreams' fire transport over dreamtown: this file replaces the
//! seed's `src/fire.rs` whole (`make test-seeds`, docs/switching.md). The
//! public API is the seed's own (types, constants, `RedisFireQueue` and its
//! methods, taking the same `redis::aio::ConnectionManager`), so nothing
//! else in the application changes; each call is one DREAMS.* command sent
//! by `dreamtown-client`'s `RedisFireQueue`.
//!
//! The seed's connection is a `redis` 0.27 connection; `dreamtown-client`
//! speaks `redis` 1.x. `Bridge` (seeds/adapters/dreamtown_bridge.rs)
//! carries each 1.x command over the seed's connection and converts the
//! reply back, so the application keeps its connection (and its
//! reconnection policy) as it is.

use std::time::Duration;

use dreamtown_client::dreams as dt;
use exocortex_storage::RegionKey;
use smol_str::SmolStr;

// The redis 0.27 -> 1.x bridge, shared with the tinytown adapter (copied
// beside this file by seeds/run.sh).
#[path = "dreamtown_bridge.rs"]
mod dreamtown_bridge;
use dreamtown_bridge::Bridge;

use crate::trigger::{DreamsTrigger, RegionWriteCounters};

/// The seed's queue key prefix (kept for code that names it; dreamtown's
/// keys are `exocortex:dreams:{<org>}:queue`, docs/dreams.md).
pub const DREAMS_QUEUE_KEY: &str = "exocortex:dreams:queue";
/// R-Dr15's queue ceiling: dreamtown's `dreamtown.queue-max` (default 1000).
pub const DREAMS_QUEUE_MAX: u64 = 1000;
/// R-Dr14's backlog threshold: dreamtown's `dreamtown.quiet-backlog-min`.
pub const QUIET_HOURS_BACKLOG_MIN: u64 = 32;

/// One queued region payload (JSON): the seed's shape, byte for byte.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FireMessage {
    /// The region to consolidate.
    pub region: RegionKey,
    /// Firing node id (diagnostics).
    pub fired_by: SmolStr,
    /// Counter snapshot owned by this fire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fired_at: Option<RegionWriteCounters>,
    /// Unique pending token used to reject stale acknowledgements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fire_id: Option<SmolStr>,
    /// The exact queue member, which acknowledgement sends back.
    #[serde(skip)]
    pub queued_payload: Option<String>,
    /// One-pass quiet-hours reorder marker.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quiet_deferred: bool,
}

/// Outcome of an explicit fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FireOutcome {
    /// The region was appended below the queue ceiling.
    Queued,
    /// The queue was already full; the newest fire was dropped.
    Dropped,
}

/// Result of recording a shared write counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordWriteOutcome {
    /// Counters were retained but a fire was already pending or not due.
    Accumulated(RegionWriteCounters),
    /// This write created the one pending fire.
    Queued(RegionWriteCounters),
    /// The queue was full; counters remain and the newest fire dropped.
    Dropped(RegionWriteCounters),
}

/// Stable effect identity paired with its delivery generation.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct DeliveryFence<'a> {
    /// Durable outbox effect identity.
    pub event_id: &'a str,
    /// Monotonic claim generation assigned by storage.
    pub generation: u64,
}

/// Result of acknowledging a notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcknowledgeOutcome {
    /// The pending token was stale or already acknowledged.
    Stale,
    /// Acknowledged without another due fire.
    Acknowledged(RegionWriteCounters),
    /// Retained counters were queued for another cycle.
    Requeued(RegionWriteCounters),
    /// Retained counters remain, but the follow-up fire was dropped.
    Dropped(RegionWriteCounters),
}

/// One result from the drainer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DrainResult {
    /// No queue item arrived before the requested timeout.
    TimedOut,
    /// The region should execute now.
    Ready(FireMessage),
    /// Never returned over dreamtown: DREAMS.DRAIN applies the quiet-hours
    /// reorder and carries on in the same call (docs/dreams.md, DREAMS.DRAIN).
    Deferred,
}

/// R-Dr14 quiet hours: the seed's type, sent with every drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuietHours {
    /// Start hour (local, 0-23), inclusive.
    pub start_hour: u8,
    /// End hour (local, 0-23), exclusive.
    pub end_hour: u8,
    /// Whether the window is active (wraps midnight when start > end).
    pub enabled: bool,
    /// Fixed UTC offset used for region-local evaluation.
    pub utc_offset_minutes: i16,
}

impl Default for QuietHours {
    fn default() -> Self {
        Self { start_hour: 2, end_hour: 6, enabled: true, utc_offset_minutes: 0 }
    }
}

impl std::str::FromStr for QuietHours {
    type Err = anyhow::Error;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        // dreamtown's parser has the seed's rules and messages.
        let parsed: dt::QuietHours = value.parse().map_err(|e: dt::QuietHoursError| anyhow::anyhow!("{e}"))?;
        Ok(Self { start_hour: parsed.start_hour, end_hour: parsed.end_hour, enabled: true, utc_offset_minutes: 0 })
    }
}

impl QuietHours {
    /// No quiet window.
    pub fn none() -> Self {
        Self { enabled: false, ..Self::default() }
    }

    /// The PRD default 02:00-06:00 UTC window.
    pub fn nightly() -> Self {
        Self::default()
    }

    /// Apply a fixed UTC offset (−1439 … 1439 minutes).
    pub fn with_utc_offset_minutes(mut self, offset: i16) -> anyhow::Result<Self> {
        anyhow::ensure!((-1439..=1439).contains(&offset), "UTC offset out of range");
        self.utc_offset_minutes = offset;
        Ok(self)
    }

    /// Is `local_hour` inside the quiet window?
    pub fn contains(&self, local_hour: u8) -> bool {
        self.to_dreamtown().contains(local_hour)
    }

    fn to_dreamtown(self) -> dt::QuietHours {
        dt::QuietHours {
            start_hour: self.start_hour,
            end_hour: self.end_hour,
            enabled: self.enabled,
            utc_offset_minutes: self.utc_offset_minutes,
        }
    }
}

/// The fire transport, over dreamtown: the seed's constructor and methods.
pub struct RedisFireQueue {
    inner: dt::RedisFireQueue<Bridge<redis::aio::ConnectionManager>>,
    /// Per-node quiet hours preference (R-Dr14), sent with every drain.
    pub quiet_hours: QuietHours,
}

impl RedisFireQueue {
    /// The queue of organization `org` over the seed's connection.
    pub fn new(conn: redis::aio::ConnectionManager, quiet_hours: QuietHours, org: impl Into<SmolStr>) -> Self {
        let org: SmolStr = org.into();
        Self { inner: dt::RedisFireQueue::new(Bridge(conn), quiet_hours.to_dreamtown(), org.as_str()), quiet_hours }
    }

    /// The seed's isolated queue for its transport tests. dreamtown's queue
    /// is the organization's, so `queue_key` names nothing on the server;
    /// `make test-seeds` maps the seed's inspections of it
    /// (seeds/MAPPINGS.md).
    #[doc(hidden)]
    #[cfg(feature = "testing")]
    pub fn new_with_queue_key(
        conn: redis::aio::ConnectionManager,
        quiet_hours: QuietHours,
        org: impl Into<SmolStr>,
        queue_key: impl Into<SmolStr>,
    ) -> Self {
        let org: SmolStr = org.into();
        redis::seed_view::name_queue(queue_key.into().as_str(), org.as_str());
        Self::new(conn, quiet_hours, org)
    }

    /// `DREAMS.FIRE`: queue a region below the ceiling, else drop it.
    pub async fn fire(&mut self, region: &RegionKey, fired_by: &str) -> anyhow::Result<FireOutcome> {
        self.ensure_region(region)?;
        Ok(match self.inner.fire(&to_region(region), fired_by).await? {
            dt::FireOutcome::Queued => FireOutcome::Queued,
            dt::FireOutcome::Dropped => FireOutcome::Dropped,
        })
    }

    /// `DREAMS.RECORD`: count a committed write; fire when due.
    pub async fn record_write(
        &mut self,
        region: &RegionKey,
        memories: u32,
        edges: u32,
        trigger: DreamsTrigger,
        fired_by: &str,
    ) -> anyhow::Result<RecordWriteOutcome> {
        self.ensure_region(region)?;
        let outcome = self.inner.record_write(&to_region(region), memories, edges, seconds(trigger), fired_by).await?;
        Ok(from_record(outcome))
    }

    /// `DREAMS.RECORD ... EVENT id GENERATION n`: count one effect once.
    pub async fn record_write_once(
        &mut self,
        region: &RegionKey,
        memories: u32,
        edges: u32,
        trigger: DreamsTrigger,
        fired_by: &str,
        delivery: DeliveryFence<'_>,
    ) -> anyhow::Result<RecordWriteOutcome> {
        anyhow::ensure!(delivery.generation > 0, "Dreams delivery generation must be positive");
        self.ensure_region(region)?;
        anyhow::ensure!(!delivery.event_id.is_empty(), "Dreams write event id must not be empty");
        let fence = dt::DeliveryFence { event_id: delivery.event_id, generation: delivery.generation };
        let outcome = self
            .inner
            .record_write_once(&to_region(region), memories, edges, seconds(trigger), fired_by, fence)
            .await?;
        Ok(from_record(outcome))
    }

    /// `DREAMS.SETTLE [RETAIN]`: reclaim a settled effect's identity.
    pub async fn forget_write_once(
        &mut self,
        region: &RegionKey,
        event_id: &str,
        delivery_generation: u64,
        retain_legacy_identity: bool,
    ) -> anyhow::Result<()> {
        self.ensure_region(region)?;
        anyhow::ensure!(!event_id.is_empty(), "Dreams write event id must not be empty");
        anyhow::ensure!(delivery_generation > 0, "Dreams delivery generation must be positive");
        self.inner
            .forget_write_once(&to_region(region), event_id, delivery_generation, retain_legacy_identity)
            .await?;
        Ok(())
    }

    /// `DREAMS.ACK`: acknowledge a drained notification by its token.
    pub async fn acknowledge(
        &mut self,
        notification: &FireMessage,
        success: bool,
        trigger: DreamsTrigger,
        fired_by: &str,
    ) -> anyhow::Result<AcknowledgeOutcome> {
        self.ensure_region(&notification.region)?;
        let message = dt::FireMessage {
            region: to_region(&notification.region),
            fired_by: notification.fired_by.to_string(),
            fired_at: notification.fired_at.map(|c| dt::RegionWriteCounters {
                memories_since_last_cycle: c.memories_since_last_cycle,
                edges_since_last_cycle: c.edges_since_last_cycle,
                seconds_since_last_cycle: c.seconds_since_last_cycle,
            }),
            fire_id: notification.fire_id.as_ref().map(|id| id.to_string()),
            queued_payload: notification.queued_payload.clone(),
            quiet_deferred: notification.quiet_deferred,
        };
        Ok(match self.inner.acknowledge(&message, success, seconds(trigger), fired_by).await? {
            dt::AcknowledgeOutcome::Stale => AcknowledgeOutcome::Stale,
            dt::AcknowledgeOutcome::Acknowledged(c) => AcknowledgeOutcome::Acknowledged(counters(c)),
            dt::AcknowledgeOutcome::Requeued(c) => AcknowledgeOutcome::Requeued(counters(c)),
            dt::AcknowledgeOutcome::Dropped(c) => AcknowledgeOutcome::Dropped(counters(c)),
        })
    }

    /// `DREAMS.DRAIN`: take the next region, waiting up to `timeout`.
    pub async fn drain(&mut self, timeout: Duration) -> anyhow::Result<DrainResult> {
        // The seed holds through the storage's fork window before any round
        // trip; the transport changes, the application's discipline stays.
        exocortex_storage::fork_window::await_if_holding().await;
        self.inner.quiet_hours = self.quiet_hours.to_dreamtown();
        let drained = match self.inner.drain(timeout).await {
            Ok(drained) => drained,
            // The seed's rule, kept: any error that mentions a timeout (the
            // connection's response timeout, or a wait past Redis's bound,
            // which DRAIN refuses as BLMOVE did) is an idle drain.
            Err(error) if error.to_string().contains("timeout") => return Ok(DrainResult::TimedOut),
            Err(error) => return Err(error.into()),
        };
        match drained {
            dt::DrainResult::TimedOut => Ok(DrainResult::TimedOut),
            dt::DrainResult::Deferred => Ok(DrainResult::Deferred),
            dt::DrainResult::Ready(message) => {
                let payload = message.queued_payload.clone().unwrap_or_default();
                // The seed's own decoding of the exact payload.
                let mut seed: FireMessage = serde_json::from_str(&payload)?;
                self.ensure_region(&seed.region)?;
                seed.queued_payload = Some(payload);
                Ok(DrainResult::Ready(seed))
            }
        }
    }

    /// `DREAMS.RECOVER`: requeue what a dead owner left in flight.
    pub async fn recover_inflight(&mut self) -> anyhow::Result<u64> {
        Ok(self.inner.recover_inflight().await?)
    }

    fn ensure_region(&self, region: &RegionKey) -> anyhow::Result<()> {
        anyhow::ensure!(
            region.org.as_str() == self.inner.org(),
            "Dreams queue for organization {:?} rejects region organization {:?}",
            self.inner.org(),
            region.org
        );
        Ok(())
    }
}

fn to_region(region: &RegionKey) -> dt::RegionKey {
    dt::RegionKey::new(region.org.as_str(), region.project.as_str(), u32::from(region.memory_type))
}

/// The seed's hours and days, in dreamtown's seconds (u64: no overflow).
fn seconds(trigger: DreamsTrigger) -> dt::Trigger {
    dt::Trigger {
        memory_threshold: u64::from(trigger.memory_threshold),
        edge_threshold: u64::from(trigger.edge_threshold),
        min_interval_secs: u64::from(trigger.min_interval_hours) * 3_600,
        age_floor_secs: u64::from(trigger.age_floor_days) * 86_400,
    }
}

fn counters(c: dt::RegionWriteCounters) -> RegionWriteCounters {
    RegionWriteCounters {
        memories_since_last_cycle: c.memories_since_last_cycle,
        edges_since_last_cycle: c.edges_since_last_cycle,
        seconds_since_last_cycle: c.seconds_since_last_cycle,
    }
}

fn from_record(outcome: dt::RecordWriteOutcome) -> RecordWriteOutcome {
    match outcome {
        dt::RecordWriteOutcome::Accumulated(c) => RecordWriteOutcome::Accumulated(counters(c)),
        dt::RecordWriteOutcome::Queued(c) => RecordWriteOutcome::Queued(counters(c)),
        dt::RecordWriteOutcome::Dropped(c) => RecordWriteOutcome::Dropped(counters(c)),
    }
}
