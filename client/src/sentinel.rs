//! A connection to the master Sentinel names, that follows a failover:
//! [`SentinelConnection`] asks the Sentinels for the master `name`,
//! connects to it (checking it says `ROLE` master), and sends every
//! command there. When the master is gone (the connection drops, as
//! Sentinel's `CLIENT KILL` does to the old master's clients when it
//! demotes it), or the node answers as a replica (`READONLY`, or a blocked
//! command released with `UNBLOCKED`), the next command asks the Sentinels
//! again. A command that could not be sent because no master could be
//! reached (the Sentinels have not promoted one yet) is tried again until
//! [`SentinelConnection::with_reconnect_deadline`] has passed: nothing
//! ran. A command sent whose reply was lost is returned as the error it
//! is (it may have run: the caller decides, as on any connection).
//!
//! Wrap it in [`crate::Durable`] so that a write is acknowledged only once
//! a replica has it: a write to the old master in the moment between the
//! replica's promotion and the old master's demotion then falls short
//! (`WAIT` sees no replica) instead of being reported done and lost.

use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::sentinel::SentinelClient;
use redis::{AsyncConnectionConfig, Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use tokio::sync::Mutex;

/// How long a command waits for a master to be reachable, by default.
pub const DEFAULT_RECONNECT_DEADLINE: Duration = Duration::from_secs(30);

struct Shared {
    client: Mutex<SentinelClient>,
    /// The master connection in use and its generation (so that one
    /// failure is followed by one re-ask, however many clones saw it),
    /// and the next generation.
    current: Mutex<(Option<(MultiplexedConnection, u64)>, u64)>,
}

/// A connection (clones share it) to the master a Sentinel set names.
///
/// ```no_run
/// use std::time::Duration;
/// use dreamtown_client::Durable;
/// use dreamtown_client::connect::Options;
/// use dreamtown_client::sentinel::SentinelConnection;
/// use dreamtown_client::dreams::{QuietHours, RedisFireQueue, RegionKey};
///
/// # async fn demo() -> dreamtown_client::Result<()> {
/// let sentinels = vec!["redis://127.0.0.1:26379/".to_owned()];
/// let client = Options::default().sentinel_client(&sentinels, "mymaster")?;
/// let conn = SentinelConnection::connect(client).await?;
/// let mut queue = RedisFireQueue::new(Durable::new(conn, 1, Duration::from_millis(500)), QuietHours::none(), "acme");
/// queue.fire(&RegionKey::new("acme", "web", 3), "node-a").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SentinelConnection {
    shared: Arc<Shared>,
    config: AsyncConnectionConfig,
    reconnect_deadline: Duration,
    reconnects: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for SentinelConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelConnection")
            .field("reconnect_deadline", &self.reconnect_deadline)
            .field("reconnects", &self.reconnects())
            .finish_non_exhaustive()
    }
}

/// Did this reply come from a node that is no longer the master?
fn from_a_replica(error: &redis::ServerError) -> bool {
    match error.code() {
        "READONLY" | "MASTERDOWN" => true,
        "UNBLOCKED" => error.details().is_some_and(|d| d.contains("state changed")),
        _ => false,
    }
}

/// Did the connection itself fail (as opposed to a reply)?
fn connection_failed(error: &RedisError) -> bool {
    error.is_io_error() || error.is_connection_dropped() || error.is_connection_refusal() || error.is_timeout()
}

impl SentinelConnection {
    /// Ask `client`'s Sentinels for the master and connect to it (no
    /// response timeout: blocking drains and receives need none).
    pub async fn connect(client: SentinelClient) -> RedisResult<Self> {
        let config = AsyncConnectionConfig::new().set_response_timeout(None);
        Self::connect_with_config(client, config).await
    }

    /// [`SentinelConnection::connect`] with the master connections' settings.
    pub async fn connect_with_config(client: SentinelClient, config: AsyncConnectionConfig) -> RedisResult<Self> {
        let shared = Arc::new(Shared { client: Mutex::new(client), current: Mutex::new((None, 0)) });
        let mut conn =
            Self { shared, config, reconnect_deadline: DEFAULT_RECONNECT_DEADLINE, reconnects: Arc::default() };
        conn.master(None).await?;
        Ok(conn)
    }

    /// How long a command waits for a master to be reachable (default
    /// [`DEFAULT_RECONNECT_DEADLINE`]); past it, the last error is returned.
    pub fn with_reconnect_deadline(mut self, deadline: Duration) -> Self {
        self.reconnect_deadline = deadline;
        self
    }

    /// How many times the master was asked for again after a failure
    /// (shared by clones).
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The master connection shared by every clone (clients clone their
    /// connection per call, so nothing is kept per clone), and its
    /// generation; a new one from the Sentinels when there is none, or
    /// when the shared one is the `stale` generation.
    async fn master(&mut self, stale: Option<u64>) -> RedisResult<(MultiplexedConnection, u64)> {
        let mut current = self.shared.current.lock().await;
        if let (Some((conn, generation)), _) = &*current
            && Some(*generation) != stale
        {
            return Ok((conn.clone(), *generation));
        }
        if stale.is_some() {
            self.reconnects.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let conn = self.shared.client.lock().await.get_async_connection_with_config(&self.config).await;
        let conn = conn.map_err(crate::connect::explain)?;
        let generation = current.1;
        *current = (Some((conn.clone(), generation)), generation + 1);
        Ok((conn, generation))
    }

    /// Send `request` to the master, following a failover (see the module doc).
    async fn on_master(&mut self, request: Request<'_>) -> RedisResult<Replies> {
        let started = Instant::now();
        let mut stale = None;
        loop {
            let (mut conn, generation) = match self.master(stale).await {
                Ok(found) => found,
                // Nothing was sent: wait for a master, up to the deadline.
                Err(_) if started.elapsed() < self.reconnect_deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                Err(error) => return Err(error),
            };
            let sent = match request {
                Request::One(cmd) => conn.req_packed_command(cmd).await.map(Replies::One),
                Request::Many(pipeline, offset, count) => {
                    conn.req_packed_commands(pipeline, offset, count).await.map(Replies::Many)
                }
            };
            match sent {
                // A replica's refusal: nothing ran; ask for the master again.
                Ok(reply) if reply.refused_by_a_replica() && started.elapsed() < self.reconnect_deadline => {
                    stale = Some(generation);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok(reply) => return Ok(reply),
                Err(error) => {
                    if connection_failed(&error) {
                        // The next command asks the Sentinels; this one may have run.
                        let mut current = self.shared.current.lock().await;
                        if current.0.as_ref().map(|(_, g)| *g) == Some(generation) {
                            current.0 = None;
                            self.reconnects.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                    return Err(error);
                }
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Request<'a> {
    One(&'a Cmd),
    Many(&'a Pipeline, usize, usize),
}

enum Replies {
    One(Value),
    Many(Vec<Value>),
}

impl Replies {
    /// A replica's refusal, so nothing ran (of a pipeline: every reply is one).
    fn refused_by_a_replica(&self) -> bool {
        let refused = |value: &Value| matches!(value, Value::ServerError(error) if from_a_replica(error));
        match self {
            Replies::One(value) => refused(value),
            Replies::Many(values) => !values.is_empty() && values.iter().all(refused),
        }
    }
}

impl ConnectionLike for SentinelConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            match self.on_master(Request::One(cmd)).await? {
                Replies::One(value) => Ok(value),
                Replies::Many(_) => Err(RedisError::from((redis::ErrorKind::Client, "one reply expected"))),
            }
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            match self.on_master(Request::Many(pipeline, offset, count)).await? {
                Replies::Many(values) => Ok(values),
                Replies::One(_) => Err(RedisError::from((redis::ErrorKind::Client, "replies expected"))),
            }
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}
