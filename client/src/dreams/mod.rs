//! The Dreams side: one organization's consolidation fire queue — the
//! native view [`Dreams`] (`Dreamtown::dreams(org)`), and the seed's API
//! over it, [`RedisFireQueue`] — and the types their calls take and return.
//!
//! The message, region, counter and quiet-hours types are the module's own
//! (from the `dreamtown` core), so client and server agree on them byte for
//! byte; the outcome types mirror the seed's transport.
//!
//! ```no_run
//! use std::time::Duration;
//! use dreamtown_client::dreams::{DrainResult, DreamsTrigger, QuietHours, RedisFireQueue, RegionKey};
//!
//! # async fn demo() -> dreamtown_client::Result<()> {
//! let client = redis::Client::open("redis://127.0.0.1:6390/")?;
//! let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
//! let conn = client.get_multiplexed_async_connection_with_config(&config).await?;
//! let mut queue = RedisFireQueue::new(conn, QuietHours::none(), "acme");
//! queue.fire(&RegionKey::new("acme", "web", 3), "node-a").await?;
//! // A worker: one round trip per item, each acknowledgement also taking
//! // the next fire (`DREAMS.DRAIN ... ACK`).
//! let wait = Duration::from_secs(1);
//! let mut next = queue.drain(wait).await?;
//! while let DrainResult::Ready(fire) = next {
//!     // ... consolidate fire.region ...
//!     next = queue.acknowledge_and_drain(&fire, true, DreamsTrigger::default(), "node-a", wait).await?.1;
//! }
//! # Ok(()) }
//! ```

mod outcome;
mod queue;
mod trigger;
mod view;

pub use outcome::{
    AcknowledgeOutcome, DeliveryFence, DrainRate, DrainResult, LimitChange, OrgLimits, QueueLengths, RecordWriteOutcome,
};
pub use queue::RedisFireQueue;
pub use trigger::DreamsTrigger;
pub use view::{Ack, AckAndDrain, Counters, Drain, Dreams, Record, Settle, Verdict};

/// Outcome of an explicit fire: queued below the ceiling, or dropped.
///
/// ```
/// use dreamtown_client::dreams::FireOutcome;
/// assert_eq!(FireOutcome::Queued.as_str(), "queued");
/// ```
pub use dreamtown::dreams::fire::FireOutcome;

/// The default queue ceiling over ready + deferred + in-flight items
/// (the server's `dreamtown.queue-max` decides).
///
/// ```
/// assert_eq!(dreamtown_client::dreams::DREAMS_QUEUE_MAX, 1000);
/// ```
pub use dreamtown::dreams::fire::DREAMS_QUEUE_MAX;

/// One queued fire, as the module stores it (the seed's JSON, byte for byte).
///
/// ```
/// use dreamtown_client::dreams::{FireMessage, RegionKey};
/// let payload = br#"{"region":{"org":"o","project":"p","memory_type":3},"fired_by":"node-a"}"#;
/// let message = FireMessage::parse(payload).expect("a fire message");
/// assert_eq!(message.region, RegionKey::new("o", "p", 3));
/// assert_eq!(message.to_payload().as_bytes(), payload);
/// ```
pub use dreamtown::dreams::message::FireMessage;

/// A counter snapshot owned by one fire.
///
/// ```
/// use dreamtown_client::dreams::RegionWriteCounters;
/// let c = RegionWriteCounters { memories_since_last_cycle: 5, edges_since_last_cycle: 0, seconds_since_last_cycle: 0 };
/// assert_eq!(c.memories_since_last_cycle, 5);
/// ```
pub use dreamtown::dreams::message::RegionWriteCounters;

/// R-Dr14 quiet hours: parsed from `HH-HH`, validated, at a fixed UTC offset.
///
/// ```
/// use dreamtown_client::dreams::QuietHours;
/// let quiet: QuietHours = "23-07".parse().expect("a window");
/// assert!(quiet.contains(2));
/// assert!("24-06".parse::<QuietHours>().is_err());
/// assert!(QuietHours::nightly().with_utc_offset_minutes(1440).is_err());
/// assert!(!QuietHours::none().enabled);
/// ```
pub use dreamtown::dreams::quiet::QuietHours;

/// Why a quiet-hours setting was refused.
///
/// ```
/// use dreamtown_client::dreams::{QuietHours, QuietHoursError};
/// let error: QuietHoursError = "0206".parse::<QuietHours>().unwrap_err();
/// assert_eq!(error.to_string(), "quiet hours must use START-END");
/// ```
pub use dreamtown::dreams::quiet::QuietHoursError;

/// One consolidation region: organization, project and memory type.
///
/// ```
/// use dreamtown_client::dreams::RegionKey;
/// let region = RegionKey::new("acme", "web", 3);
/// assert_eq!(region.org, "acme");
/// ```
pub use dreamtown::dreams::region::RegionKey;

/// Trigger thresholds in seconds (what the commands take); see [`DreamsTrigger`].
///
/// ```
/// use dreamtown_client::dreams::Trigger;
/// let fast = Trigger { memory_threshold: 1, edge_threshold: 1, min_interval_secs: 0, age_floor_secs: 60 };
/// assert!(fast.threshold_met(1, 0, 0));
/// ```
pub use dreamtown::dreams::trigger::Trigger;
