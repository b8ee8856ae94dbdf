//! [`Dreamtown`]: the one native handle. It holds a connection (any async
//! connection of the `redis` crate: one server, a connection manager, a
//! cluster, a Sentinel set, over TLS or not) and hands out a view per
//! tenant: [`Dreamtown::dreams`] for an organization's fire queue,
//! [`Dreamtown::town`] for a town's agent channel.

use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};

use crate::dreams::Dreams;
use crate::error::Result;
use crate::retry::DEFAULT_TRYAGAIN_DEADLINE;
use crate::town::Town;

/// A connection to servers with the dreamtown module, and its tenants'
/// views.
///
/// **One rule for receivers: every call takes `&self`.** The handle and its
/// views hold a connection handle that is cheap to clone (the `redis`
/// crate's async connections share one pipeline per server), and each call
/// sends one command over a clone of it; nothing a call changes lives in
/// the handle. So a handle or a view can be shared between tasks (`Clone`,
/// or behind an `Arc`) without a lock, and no call needs `&mut`. The one
/// thing to keep apart: a blocking drain or receive occupies its
/// connection on the server while it waits, so a worker that blocks should
/// have a handle over a connection of its own.
///
/// Optional arguments are builder methods on what a call returns (ending
/// in `.send().await`), never positional `bool`s or `None`s; outcomes are
/// enums.
///
/// ```no_run
/// use std::time::Duration;
/// use dreamtown_client::Dreamtown;
/// use dreamtown_client::dreams::{RegionKey, Verdict};
///
/// # async fn demo() -> dreamtown_client::Result<()> {
/// let dreamtown = Dreamtown::connect("redis://127.0.0.1:6390/").await?;
/// let dreams = dreamtown.dreams("acme");
/// dreams.fire(&RegionKey::new("acme", "web", 3), "node-a").await?;
/// if let Some(fire) = dreams.drain(Duration::from_secs(1)).send().await? {
///     dreams.ack(&fire, Verdict::Success, "node-a").send().await?;
/// }
/// let town = dreamtown.town("acme");
/// println!("{} agents", town.agents().await?.len());
/// # Ok(()) }
/// ```
///
/// A cluster, a Sentinel set or TLS: build the connection as usual (or
/// with [`connect::Options`](crate::connect::Options)) and wrap it:
///
/// ```no_run
/// use dreamtown_client::Dreamtown;
/// # async fn demo() -> dreamtown_client::Result<()> {
/// let cluster = redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:7001/"])?;
/// let dreamtown = Dreamtown::new(cluster.get_async_connection().await?);
/// println!("{:?}", dreamtown.dreams("acme").lengths().await?);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Dreamtown<C = MultiplexedConnection> {
    conn: C,
    tryagain_deadline: Duration,
}

impl Dreamtown<MultiplexedConnection> {
    /// One server at `url` (`redis://` or `rediss://`), over a multiplexed
    /// connection with no response timeout (so blocking drains and
    /// receives wait as long as they ask).
    pub async fn connect(url: &str) -> Result<Self> {
        let client = redis::Client::open(url)?;
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        let conn =
            client.get_multiplexed_async_connection_with_config(&config).await.map_err(crate::connect::explain)?;
        Ok(Self::new(conn))
    }
}

impl<C: ConnectionLike + Clone + Send + Sync + 'static> Dreamtown<C> {
    /// A handle over `conn`; nothing is sent until the first call.
    pub fn new(conn: C) -> Self {
        Self { conn, tryagain_deadline: DEFAULT_TRYAGAIN_DEADLINE }
    }

    /// How long a call refused with `TRYAGAIN` (its tenant's slot is moving
    /// the legacy way; nothing ran) is sent again, for every view made
    /// after: [`DEFAULT_TRYAGAIN_DEADLINE`] by default; `Duration::ZERO`
    /// returns the first refusal.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # fn demo(dreamtown: dreamtown_client::Dreamtown) {
    /// let patient = dreamtown.with_tryagain_deadline(Duration::from_secs(120));
    /// assert_eq!(patient.dreams("acme").tryagain_deadline(), Duration::from_secs(120));
    /// # }
    /// ```
    pub fn with_tryagain_deadline(mut self, deadline: Duration) -> Self {
        self.tryagain_deadline = deadline;
        self
    }

    /// The connection, for commands of your own (clone it to send).
    pub fn connection(&self) -> &C {
        &self.conn
    }

    /// Organization `org`'s Dreams fire queue. A name the server refuses
    /// (empty, or with `{` or `}`) fails every call with a server error.
    pub fn dreams(&self, org: impl Into<String>) -> Dreams<C> {
        Dreams::new(self.conn.clone(), org.into(), self.tryagain_deadline)
    }

    /// Town `name`'s agent channel. A name the server refuses (empty, or
    /// with `{` or `}`) fails every call with a server error. The
    /// seed-shaped (tinytown) API of the same town: `.town(name).channel()`.
    pub fn town(&self, name: impl Into<String>) -> Town<C> {
        Town::new(self.conn.clone(), name.into(), self.tryagain_deadline)
    }
}
