//! Opt-in durability: a connection wrapper that follows every write with
//! `WAIT <replicas> <timeout-ms>` and reports each write fewer replicas
//! acknowledged in time.
//!
//! Redis replicates asynchronously: a master that fails right after
//! acknowledging a write may not have sent it to any replica yet, and a
//! forced failover (`CLUSTER FAILOVER FORCE`/`TAKEOVER`, or an automatic
//! one after the master dies) then loses it. A coordinated `CLUSTER
//! FAILOVER` does not (the replica catches up first). `WAIT` narrows the
//! window: once it counts a replica, that replica has the write. It does
//! not make Redis strongly consistent (a write can still be lost if every
//! replica that had it also fails), and a shortfall does not undo the write:
//! the master applied it and its reply is returned as usual. What to do
//! about a shortfall (retry later, alert, stop) is the caller's choice; this
//! wrapper counts it, keeps the last one and calls a hook.
//!
//! Wrap any connection the typed clients take, for one server or Redis
//! Cluster. On a cluster connection, the `redis` crate sends `WAIT` to every
//! master and keeps the smallest count (its routing for `WAIT`): a lagging
//! master's replica shows as a shortfall of an unrelated write too, which
//! errs on the safe side.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Cmd, RedisFuture, Value};

/// A write that fewer replicas acknowledged than asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shortfall {
    /// The command (`DREAMS.FIRE`, `TOWN.SEND`, ... or `(pipeline)`).
    pub command: String,
    /// Replicas asked for.
    pub wanted: u32,
    /// Replicas that acknowledged within the timeout (0 when `WAIT` failed).
    pub acknowledged: u32,
    /// Why `WAIT` itself failed, if it did.
    pub error: Option<String>,
}

type Hook = Arc<dyn Fn(&Shortfall) + Send + Sync>;

#[derive(Default)]
struct Report {
    shortfalls: AtomicU64,
    last: Mutex<Option<Shortfall>>,
}

/// A connection whose writes wait for `replicas` replicas, up to `timeout`.
///
/// ```no_run
/// use std::time::Duration;
/// use dreamtown_client::Durable;
/// use dreamtown_client::dreams::{QuietHours, RedisFireQueue, RegionKey};
///
/// # async fn demo() -> dreamtown_client::Result<()> {
/// let client = redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:7000/"])?;
/// let conn = Durable::new(client.get_async_connection().await?, 1, Duration::from_millis(500))
///     .on_shortfall(|s| eprintln!("{} reached {} of {} replicas", s.command, s.acknowledged, s.wanted));
/// let report = conn.clone();
/// let mut queue = RedisFireQueue::new(conn, QuietHours::none(), "acme");
/// queue.fire(&RegionKey::new("acme", "web", 3), "node-a").await?;
/// assert_eq!(report.shortfalls(), 0);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Durable<C> {
    inner: C,
    replicas: u32,
    timeout_ms: u64,
    report: Arc<Report>,
    hook: Option<Hook>,
}

impl<C> fmt::Debug for Durable<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Durable")
            .field("replicas", &self.replicas)
            .field("timeout_ms", &self.timeout_ms)
            .field("shortfalls", &self.shortfalls())
            .finish_non_exhaustive()
    }
}

impl<C> Durable<C> {
    /// Wrap `inner`: every write then waits for `replicas` replicas, up to
    /// `timeout` (zero: `WAIT`'s forever; keep it finite).
    pub fn new(inner: C, replicas: u32, timeout: Duration) -> Self {
        Self {
            inner,
            replicas,
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            report: Arc::default(),
            hook: None,
        }
    }

    /// Call `hook` for every shortfall (from the task that made the write).
    pub fn on_shortfall(mut self, hook: impl Fn(&Shortfall) + Send + Sync + 'static) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// How many writes fell short so far (shared by clones).
    pub fn shortfalls(&self) -> u64 {
        self.report.shortfalls.load(Ordering::Relaxed)
    }

    /// The last shortfall, if any.
    pub fn last_shortfall(&self) -> Option<Shortfall> {
        self.report.last.lock().ok().and_then(|last| last.clone())
    }

    /// The wrapped connection.
    pub fn inner_mut(&mut self) -> &mut C {
        &mut self.inner
    }

    fn record(&self, shortfall: Shortfall) {
        self.report.shortfalls.fetch_add(1, Ordering::Relaxed);
        if let Some(hook) = &self.hook {
            hook(&shortfall);
        }
        if let Ok(mut last) = self.report.last.lock() {
            *last = Some(shortfall);
        }
    }
}

/// Commands that never write: no `WAIT` after them.
const READS: &[&[u8]] = &[
    b"DREAMS.LEN",
    b"DREAMS.COUNTERS",
    b"TOWN.LEN",
    b"TOWN.PEEK",
    b"XLEN",
    b"XPENDING",
    b"XINFO",
    b"XRANGE",
    b"XREVRANGE",
    b"PING",
    b"WAIT",
];

/// The command's name, upper-cased.
fn name_of(cmd: &Cmd) -> Vec<u8> {
    match cmd.args_iter().next() {
        Some(redis::Arg::Simple(name)) => name.to_ascii_uppercase(),
        _ => Vec::new(),
    }
}

fn writes(cmd: &Cmd) -> bool {
    let name = name_of(cmd);
    !name.is_empty() && !READS.contains(&name.as_slice())
}

impl<C: ConnectionLike + Send> Durable<C> {
    /// `WAIT` after a write of `command`; a shortfall is recorded, never an error.
    async fn wait(&mut self, command: String) {
        // The partition tests' planted bug: acknowledge without waiting.
        if cfg!(feature = "plant-skip-wait") {
            return;
        }
        let mut wait = redis::cmd("WAIT");
        wait.arg(self.replicas).arg(self.timeout_ms);
        let outcome = match self.inner.req_packed_command(&wait).await {
            Ok(Value::Int(n)) => Ok(u32::try_from(n.max(0)).unwrap_or(u32::MAX)),
            Ok(other) => Err(format!("WAIT replied {other:?}")),
            Err(error) => Err(error.to_string()),
        };
        let shortfall = match outcome {
            Ok(acknowledged) if acknowledged >= self.replicas => return,
            Ok(acknowledged) => Shortfall { command, wanted: self.replicas, acknowledged, error: None },
            Err(error) => Shortfall { command, wanted: self.replicas, acknowledged: 0, error: Some(error) },
        };
        self.record(shortfall);
    }
}

impl<C: ConnectionLike + Send> ConnectionLike for Durable<C> {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let reply = self.inner.req_packed_command(cmd).await?;
            // An error reply changed nothing (the module's rule): nothing to wait for.
            if writes(cmd) && !matches!(reply, Value::ServerError(_)) {
                self.wait(String::from_utf8_lossy(&name_of(cmd)).into_owned()).await;
            }
            Ok(reply)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let replies = self.inner.req_packed_commands(pipeline, offset, count).await?;
            if pipeline.cmd_iter().any(writes) {
                self.wait("(pipeline)".into()).await;
            }
            Ok(replies)
        })
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_do_not_wait_and_writes_do() {
        assert!(!writes(redis::cmd("DREAMS.LEN").arg("acme")));
        assert!(!writes(redis::cmd("town.peek").arg("t")));
        assert!(writes(redis::cmd("DREAMS.FIRE").arg("acme")));
        assert!(writes(redis::cmd("TOWN.SEND").arg("t")));
    }
}
