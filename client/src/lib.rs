//! Typed async calls for the dreamtown Redis module, over the `redis`
//! crate: for one server, a [connection manager](redis::aio::ConnectionManager)
//! and Redis Cluster alike, since every call is generic over
//! [`redis::aio::ConnectionLike`] and every command carries its tenant as
//! its first key.
//!
//! * [`dreams`]: the Dreams consolidation fire queue, [`dreams::RedisFireQueue`],
//!   with the seed transport's API (change the constructor, keep the calls).
//! * `town` (next): the tinytown agent channel over `TOWN.*`, built the same
//!   way on the shared command layer.
//!
//! Each call sends one command; errors are [`Error`], never a panic.
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

mod call;
pub mod dreams;
mod error;

pub use error::{Error, Result};

/// The `redis` crate this client is built on, so connections match its version.
///
/// ```
/// let client = dreamtown_client::redis::Client::open("redis://127.0.0.1:6390/");
/// assert!(client.is_ok());
/// ```
pub use redis;
