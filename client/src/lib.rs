//! Typed async calls for the dreamtown Redis module, over the `redis`
//! crate: for one server, a [connection manager](redis::aio::ConnectionManager)
//! and Redis Cluster alike, since every call is generic over
//! [`redis::aio::ConnectionLike`] and every command carries its tenant as
//! its first key.
//!
//! * [`Dreamtown`]: the native handle, a connection with a view per tenant,
//!   [`Dreamtown::dreams`] and [`Dreamtown::town`]; every call `&self`,
//!   optional arguments as builder methods, outcomes as enums.
//! * [`dreams`]: the Dreams consolidation fire queue, the view
//!   [`dreams::Dreams`], and [`dreams::RedisFireQueue`] over it with the
//!   seed transport's API (change the constructor, keep the calls).
//! * [`town`]: the agent channel, the view [`town::Town`], and
//!   [`town::Channel`] beside it with the public API of tinytown's
//!   `Channel` over `TOWN.*`, built the same way on the shared command layer.
//!
//! The tools on this crate are crates of their own: `dreamtown-migrate`
//! (`migrate/`) and `dreamtown-exporter` (`exporter/`).
//!
//! Each call sends one command; errors are [`Error`], never a panic.
//! [`Error::is_retryable`] tells which refusals changed nothing and may be
//! sent again (a cluster connection already follows `MOVED`/`ASK` and
//! retries `TRYAGAIN` and connection loss; a call whose blocking wait a
//! failover interrupted is sent again by the client; a `TRYAGAIN` while
//! the tenant's slot moves is sent again until a deadline,
//! [`DEFAULT_TRYAGAIN_DEADLINE`] unless the queue or channel says
//! otherwise). Wrap a connection in
//! [`Durable`] to `WAIT` for replicas after every write.
//!
//! ```no_run
//! use dreamtown_client::dreams::{QuietHours, RedisFireQueue, RegionKey};
//!
//! # async fn demo() -> dreamtown_client::Result<()> {
//! let client = redis::Client::open("redis://127.0.0.1:6390/")?;
//! let conn = client.get_multiplexed_async_connection().await?;
//! let mut queue = RedisFireQueue::new(conn, QuietHours::nightly(), "acme");
//! queue.fire(&RegionKey::new("acme", "web", 3), "node-a").await?;
//! println!("{:?}", queue.lengths().await?);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

// Everything that talks to a server needs the redis crate and tokio (the
// default `net` feature).
#[cfg(feature = "net")]
mod call;
#[cfg(feature = "net")]
pub mod connect;
#[cfg(feature = "net")]
pub mod dreams;
#[cfg(feature = "net")]
mod durable;
#[cfg(feature = "net")]
mod error;
#[cfg(feature = "net")]
mod handle;
#[cfg(feature = "net")]
pub mod lease;
#[cfg(feature = "net")]
mod retry;
#[cfg(feature = "net")]
pub mod sentinel;
#[cfg(feature = "net")]
pub mod town;

#[cfg(feature = "net")]
pub use call::cluster_routing;
#[cfg(feature = "net")]
pub use call::decode_reply;
#[cfg(feature = "net")]
pub use durable::{Durable, Shortfall};
#[cfg(feature = "net")]
pub use error::{Error, Result};
#[cfg(feature = "net")]
pub use handle::Dreamtown;
#[cfg(feature = "net")]
pub use retry::DEFAULT_TRYAGAIN_DEADLINE;

/// The `redis` crate this client is built on, so connections match its version.
///
/// ```
/// let client = dreamtown_client::redis::Client::open("redis://127.0.0.1:6390/");
/// assert!(client.is_ok());
/// ```
#[cfg(feature = "net")]
pub use redis;

/// The key names of both families (`exocortex:dreams:{<org>}:...`,
/// `tt:{<town>}:...`), formatted and parsed: the wire protocol's, which
/// the module uses too, for tools and tests that look at keys directly.
///
/// ```
/// use dreamtown_client::keyspace::dreams::{DreamsKey, QueueKeys, RegionName};
/// use dreamtown_client::keyspace::town::TownKeys;
/// assert_eq!(QueueKeys::new("acme").processing, "exocortex:dreams:{acme}:processing");
/// let counters = DreamsKey::Counters(RegionName { memory_type: 3, project: "web" });
/// assert_eq!(counters.name("acme"), "exocortex:dreams:{acme}:counters:3:web");
/// assert_eq!(TownKeys::new("acme").inbox("w1"), "tt:{acme}:inbox:w1");
/// ```
pub use dreamtown_protocol::keyspace;

/// The `uuid` crate of the Town ids ([`town::AgentId::from_uuid`] ...).
///
/// ```
/// let id = dreamtown_client::town::AgentId::from_uuid(dreamtown_client::uuid::Uuid::from_u128(1));
/// assert_eq!(id, dreamtown_client::town::AgentId::supervisor());
/// ```
pub use uuid;

/// The `chrono` crate of the Town timestamps ([`town::Message::created_at`] ...).
///
/// ```
/// let now: dreamtown_client::chrono::DateTime<dreamtown_client::chrono::Utc> = dreamtown_client::chrono::Utc::now();
/// assert!(now.timestamp() > 0);
/// ```
pub use chrono;
